//! The shape of a transaction's Txn: what each step costs, where its
//! answers sit, and the limits that follow.

use super::*;
use crate::txn::{DeletePlan, SetPlan};

fn create(path: &str, ancestors: &[&str]) -> Step {
    Step::Write(Plan::Create(CreatePlan {
        path: path.into(),
        key: format!("/ns{path}"),
        ancestors: ancestors.iter().map(|a| format!("/ns{a}")).collect(),
        data: b"x".to_vec(),
        lease: 0,
        sequential: false,
        persistent: true,
        own_lease: 7,
        list_siblings: None,
        nearest_siblings: false,
        parent_known: true,
    }))
}

fn planned(steps: Vec<Step>) -> Planned {
    Planned {
        fences: vec![FenceKey {
            path: "/l/n".into(),
            key: "/ns/l/n".into(),
            stamp: 9,
        }],
        steps,
    }
}

#[test]
fn no_step_costs_more_than_ops_per_step() {
    let deep = create("/a/b/c/d/e", &["/a", "/a/b", "/a/b/c", "/a/b/c/d"]);
    let steps = vec![
        Step::Check {
            path: "/a".into(),
            key: "/ns/a".into(),
            version: 3,
        },
        deep,
        create("/top", &[]),
        Step::Write(Plan::Set(SetPlan {
            path: "/s".into(),
            key: "/ns/s".into(),
            data: b"y".to_vec(),
            version: Some(4),
        })),
        Step::Write(Plan::Delete(DeletePlan {
            path: "/d".into(),
            key: "/ns/d".into(),
            child_prefix: "/ns/d/".into(),
            version: Some(5),
            created: None,
        })),
    ];
    for step in &steps {
        for part in [
            step.compares().len(),
            step.then_ops().len(),
            step.else_ops().len(),
        ] {
            assert!(part <= OPS_PER_STEP, "{step:?} costs {part}");
        }
    }
    let p = planned(steps);
    // The deep create compares its key and its parent twice (3), the
    // delete its key, version and children (3), the rest one each, the
    // fence one: 1 + 1 + 3 + 1 + 2 + 3 = 11.
    assert_eq!(p.etcd_ops(), 11);
    assert!(!p.read_only());
    assert_eq!(p.first_written(), Some("/a/b/c/d/e"));
    let layout = p.layout();
    // Failure reads: the fence's, then 1 (check), 2 (create: key,
    // parent), 1 (top create), 1 (set), 2 (delete).
    assert_eq!(layout.else_at, vec![1, 2, 4, 5, 6]);
    // Success ops: none for the check, one per write.
    assert_eq!(layout.then_at, vec![0, 0, 1, 2, 3]);
}

#[test]
fn a_check_of_version_zero_never_holds() {
    let check = Step::Check {
        path: "/a".into(),
        key: "/ns/a".into(),
        version: 0,
    };
    // A missing key's mod revision is 0; version 0 compares with -1.
    let compares = check.compares();
    assert_eq!(compares.len(), 1);
    assert!(format!("{compares:?}").contains("-1"));
}

#[test]
fn the_limits_fit_the_default_server() {
    let limits = crate::commit::LIMITS;
    assert_eq!(limits.max_steps, 42);
    assert!(limits.max_steps * OPS_PER_STEP <= MAX_TXN_OPS);
    let checks: Vec<Step> = (0..41)
        .map(|i| Step::Check {
            path: format!("/c{i}"),
            key: format!("/ns/c{i}"),
            version: 1,
        })
        .collect();
    let p = planned(checks);
    assert_eq!(p.etcd_ops(), 42);
    assert!(p.read_only());
    assert_eq!(p.first_written(), None);
}

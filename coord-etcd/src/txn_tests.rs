//! The shapes of the Txns `txn` builds, and its revision conversions.

use super::*;

fn create(sequential: bool, lease: i64) -> CreatePlan {
    CreatePlan {
        path: "/a/b".into(),
        key: "/ns/a/b".into(),
        ancestors: vec!["/ns/a".into()],
        data: b"x".to_vec(),
        lease,
        sequential,
        persistent: lease == 0,
        own_lease: 7,
        list_siblings: None,
        nearest_siblings: false,
        parent_known: false,
    }
}

#[test]
fn revisions_convert_without_panics() {
    assert_eq!(rev(5), 5);
    assert_eq!(rev(u64::MAX), -1);
    assert_eq!(urev(-3), 0);
    assert_eq!(urev(9), 9);
}

#[test]
fn txn_shapes() {
    let plan = Plan::Create(create(false, 0));
    // key absent + one ancestor not ephemeral.
    assert_eq!(plan.compares().len(), 2);
    // the ancestor's nested Txn + the put.
    assert_eq!(plan.then_ops().len(), 2);
    assert_eq!(plan.else_ops().len(), 2);
    // The parent known: the key absent, the parent there and plain;
    // the put alone; the key read back on failure.
    let mut known = create(true, 7);
    known.ancestors = vec!["/ns/a".into(), "/ns/a/b".into()];
    known.parent_known = true;
    assert_eq!(known.known_parent(), Some("/ns/a/b"));
    let known = Plan::Create(known);
    assert_eq!(known.compares().len(), 3);
    assert_eq!(known.then_ops().len(), 1);
    assert_eq!(known.else_ops().len(), 1);
    // No parent below the root: nothing to know.
    let mut top = create(true, 7);
    top.ancestors.clear();
    top.parent_known = true;
    assert_eq!(top.known_parent(), None);
    let del = Plan::Delete(DeletePlan {
        created: None,
        path: "/a".into(),
        key: "/ns/a".into(),
        child_prefix: "/ns/a/".into(),
        version: Some(3),
    });
    assert_eq!(del.compares().len(), 3);
    assert_eq!(del.else_ops().len(), 2);
    // This session's own ephemeral node: its create revision, no
    // children check (nothing can be made under it).
    let own = Plan::Delete(DeletePlan {
        created: Some(42),
        path: "/a".into(),
        key: "/ns/a".into(),
        child_prefix: "/ns/a/".into(),
        version: None,
    });
    assert_eq!(own.compares().len(), 1);
    // A put: the one ancestor plain; its nested Txn and the branching
    // one; the ancestor read back on failure.
    let put = Plan::Put(create(false, 0));
    assert_eq!(put.compares().len(), 1);
    assert_eq!(put.then_ops().len(), 2);
    assert_eq!(put.else_ops().len(), 1);
}

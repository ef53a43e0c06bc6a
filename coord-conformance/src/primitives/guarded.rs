//! Guarded writes of the primitive contract: a write under a fence happens
//! while the fence node holds with the same stamp, and is `LockLost` (and
//! changes nothing) once it does not.

use coord_core::{CreateMode, Error, Fence, Op, OpResult, Session};

use super::support::{assert_err, fence_of};
use crate::{within, Harness};

/// A guarded create, set and delete happen while the fence holds, with the
/// answers and errors of the plain operations.
pub async fn prim_guarded_while_fence_holds(h: &dyn Harness) {
    let root = h.root("prim_guarded_while_fence_holds");
    let holder = h.open().await;
    let fence_path = format!("{root}/lock/holder-");
    let held = holder
        .create(&fence_path, b"", CreateMode::EphemeralSequential)
        .await
        .expect("create fence");
    let fence = fence_of(&held.path, held.stamp);
    let target = format!("{root}/data/value");

    let created = match holder
        .guarded(
            &fence,
            Op::Create {
                path: target.clone(),
                data: b"one".to_vec(),
                mode: CreateMode::Persistent,
            },
        )
        .await
        .expect("guarded create")
    {
        OpResult::Created(c) => c,
        other => panic!("guarded create answered {other:?}"),
    };
    assert_eq!(created.path, target);
    assert!(created.stamp > held.stamp);
    let node = holder.get(&target).await.expect("get").expect("made");
    assert_eq!(node.data, b"one");

    let stat = match holder
        .guarded(
            &fence,
            Op::Set {
                path: target.clone(),
                data: b"two".to_vec(),
                version: Some(created.version),
            },
        )
        .await
        .expect("guarded set")
    {
        OpResult::Set(st) => st,
        other => panic!("guarded set answered {other:?}"),
    };
    assert_ne!(stat.version, created.version);
    assert_eq!(
        holder.get(&target).await.expect("get").expect("node").data,
        b"two"
    );

    // The op's own errors come through when the fence holds.
    assert_err!(
        holder
            .guarded(
                &fence,
                Op::Set {
                    path: target.clone(),
                    data: b"stale".to_vec(),
                    version: Some(created.version),
                },
            )
            .await,
        Error::VersionMismatch { .. }
    );
    assert_err!(
        holder
            .guarded(
                &fence,
                Op::Create {
                    path: target.clone(),
                    data: Vec::new(),
                    mode: CreateMode::Persistent,
                },
            )
            .await,
        Error::AlreadyExists { .. }
    );
    assert_err!(
        holder
            .guarded(
                &fence,
                Op::Delete {
                    path: format!("{root}/data/missing"),
                    version: None,
                },
            )
            .await,
        Error::NotFound { .. }
    );

    // A guarded sequential create answers with a sequence.
    match holder
        .guarded(
            &fence,
            Op::Create {
                path: format!("{root}/data/seq-"),
                data: Vec::new(),
                mode: CreateMode::PersistentSequential,
            },
        )
        .await
        .expect("guarded sequential create")
    {
        OpResult::Created(c) => assert!(c.sequence.is_some()),
        other => panic!("guarded create answered {other:?}"),
    }

    // Anyone may write under the fence, not just its owner.
    let other = h.open().await;
    match other
        .guarded(
            &fence,
            Op::Delete {
                path: target.clone(),
                version: Some(stat.version),
            },
        )
        .await
        .expect("guarded delete")
    {
        OpResult::Deleted => {}
        other => panic!("guarded delete answered {other:?}"),
    }
    assert!(!holder.exists(&target).await.expect("exists"));
    holder.close().await.expect("close");
    other.close().await.expect("close");
}

/// Every guarded op under `fence` fails with `LockLost` (before the op's
/// own errors) and changes nothing.
async fn assert_guarded_lost(s: &Session, fence: &Fence, root: &str) {
    let existing = format!("{root}/data/existing");
    let fresh = format!("{root}/data/fresh");
    let ops = [
        Op::Create {
            path: fresh.clone(),
            data: b"x".to_vec(),
            mode: CreateMode::Persistent,
        },
        Op::Create {
            path: format!("{root}/data/seq-"),
            data: Vec::new(),
            mode: CreateMode::EphemeralSequential,
        },
        Op::Set {
            path: existing.clone(),
            data: b"changed".to_vec(),
            version: None,
        },
        Op::Delete {
            path: existing.clone(),
            version: None,
        },
        // Ops that would fail on their own still report the lost fence.
        Op::Set {
            path: format!("{root}/data/missing"),
            data: Vec::new(),
            version: None,
        },
        Op::Delete {
            path: format!("{root}/data/missing"),
            version: Some(12345),
        },
        Op::Create {
            path: existing.clone(),
            data: Vec::new(),
            mode: CreateMode::Persistent,
        },
    ];
    for op in ops {
        match s.guarded(fence, op.clone()).await {
            Err(Error::LockLost { path }) => assert_eq!(path, fence.path),
            other => panic!("guarded {op:?} under a lost fence: got {other:?}"),
        }
    }
    assert!(
        !s.exists(&fresh).await.expect("exists"),
        "a refused create made a node"
    );
    let node = s.get(&existing).await.expect("get").expect("still there");
    assert_eq!(node.data, b"original", "a refused write changed a node");
    assert!(
        s.children(&format!("{root}/data"))
            .await
            .expect("children")
            .iter()
            .all(|c| !c.name.starts_with("seq-")),
        "a refused sequential create made a node"
    );
}

/// Once the fence node is deleted, every guarded write fails with
/// `LockLost` and changes nothing.
pub async fn prim_guarded_lost_when_fence_deleted(h: &dyn Harness) {
    let root = h.root("prim_guarded_lost_when_fence_deleted");
    let s = h.open().await;
    s.create(
        &format!("{root}/data/existing"),
        b"original",
        CreateMode::Persistent,
    )
    .await
    .expect("create");
    let held = s
        .create(
            &format!("{root}/lock/holder-"),
            b"",
            CreateMode::EphemeralSequential,
        )
        .await
        .expect("create fence");
    let fence = fence_of(&held.path, held.stamp);
    s.delete(&held.path, None).await.expect("delete fence");
    assert_guarded_lost(&s, &fence, &root).await;

    // The same when the fence went with its session.
    let holder = h.open().await;
    let held = holder
        .create(
            &format!("{root}/lock/holder-"),
            b"",
            CreateMode::EphemeralSequential,
        )
        .await
        .expect("create fence");
    let fence = fence_of(&held.path, held.stamp);
    h.expire(&holder).await;
    within("fence gone with its session", s.wait_gone(&held.path))
        .await
        .expect("wait_gone");
    assert_guarded_lost(&s, &fence, &root).await;
    s.close().await.expect("close");
}

/// A fence with the wrong stamp fails even though a node exists at its
/// path: deleted and made again, the old stamp is refused and the new one
/// works.
pub async fn prim_guarded_lost_with_wrong_stamp(h: &dyn Harness) {
    let root = h.root("prim_guarded_lost_with_wrong_stamp");
    let s = h.open().await;
    s.create(
        &format!("{root}/data/existing"),
        b"original",
        CreateMode::Persistent,
    )
    .await
    .expect("create");
    let fence_path = format!("{root}/lock/holder");
    let old = s
        .create(&fence_path, b"", CreateMode::Ephemeral)
        .await
        .expect("create fence");
    s.delete(&fence_path, None).await.expect("delete fence");
    let new = s
        .create(&fence_path, b"", CreateMode::Ephemeral)
        .await
        .expect("make the fence again");
    assert!(new.stamp > old.stamp);
    assert_guarded_lost(&s, &fence_of(&fence_path, old.stamp), &root).await;
    // A stamp the node never had.
    assert_guarded_lost(&s, &fence_of(&fence_path, new.stamp + 1), &root).await;

    match s
        .guarded(
            &fence_of(&fence_path, new.stamp),
            Op::Set {
                path: format!("{root}/data/existing"),
                data: b"by the new holder".to_vec(),
                version: None,
            },
        )
        .await
    {
        Ok(OpResult::Set(_)) => {}
        other => panic!("guarded set under the current fence: got {other:?}"),
    }
    s.close().await.expect("close");
}

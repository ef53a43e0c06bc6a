//! Guarded writes of the primitive contract: a write under a fence happens
//! while the fence node holds with the same stamp, and is `LockLost` (and
//! changes nothing) once it does not; a put creates or overwrites, and
//! only the current holder's lands.

use coord_core::prelude::*;
use coord_core::recipes::{Lock, LockGuard};
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

/// A holder's node made by `s` under `<root>/lock` (ephemeral sequential,
/// as a lock's), and the fence it gives.
async fn hold_fence(s: &Session, root: &str) -> (coord_core::Created, Fence) {
    let held = s
        .create(
            &format!("{root}/lock/holder-"),
            b"",
            CreateMode::EphemeralSequential,
        )
        .await
        .expect("create fence");
    let fence = fence_of(&held.path, held.stamp);
    (held, fence)
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
        // A put neither creates nor overwrites.
        Op::put(fresh.as_str(), "x"),
        Op::put(existing.as_str(), "changed"),
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
    let (held, fence) = hold_fence(&s, &root).await;
    s.delete(&held.path, None).await.expect("delete fence");
    assert_guarded_lost(&s, &fence, &root).await;

    // The same when the fence went with its session.
    let holder = h.open().await;
    let (held, fence) = hold_fence(&holder, &root).await;
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

/// A guarded put creates a missing node (persistent, with its missing
/// parents) and answers `Created`; on an existing node it overwrites the
/// data, keeps the node's kind, and answers `Set`.
pub async fn prim_guarded_put_creates_or_overwrites(h: &dyn Harness) {
    let root = h.root("prim_guarded_put_creates_or_overwrites");
    let (holder, other) = (h.open().await, h.open().await);
    let (held, fence) = hold_fence(&holder, &root).await;
    let target = format!("{root}/data/deep/value");

    let created = match holder
        .guarded(&fence, Op::put(target.as_str(), "one"))
        .await
    {
        Ok(OpResult::Created(c)) => c,
        other => panic!("put on a missing node answered {other:?}"),
    };
    assert_eq!(created.path, target);
    assert_eq!(created.sequence, None);
    assert!(created.stamp > held.stamp);
    let node = holder.get(&target).await.expect("get").expect("made");
    assert_eq!(node.data, b"one");
    assert!(!node.stat.ephemeral, "a put makes a persistent node");
    assert_eq!(node.stat.version, created.version);

    let stat = match holder
        .guarded(&fence, Op::put(target.as_str(), "two"))
        .await
    {
        Ok(OpResult::Set(st)) => st,
        other => panic!("put on an existing node answered {other:?}"),
    };
    assert_ne!(stat.version, created.version);
    assert_eq!(stat.stamp, created.stamp, "overwritten, not made again");
    let node = holder.get(&target).await.expect("get").expect("node");
    assert_eq!(node.data, b"two");
    assert_eq!(node.stat.version, stat.version);

    // Another session's ephemeral node stays ephemeral, and its owner's.
    let eph = format!("{root}/data/eph");
    other
        .create(&eph, b"e", CreateMode::Ephemeral)
        .await
        .expect("create ephemeral");
    match holder.guarded(&fence, Op::put(eph.as_str(), "p")).await {
        Ok(OpResult::Set(st)) => assert!(st.ephemeral, "{st:?}"),
        other => panic!("put on an ephemeral node answered {other:?}"),
    }
    assert_eq!(
        holder.get(&eph).await.expect("get").expect("node").data,
        b"p"
    );
    // Under an ephemeral node, a put is answered as a create is.
    match holder
        .guarded(&fence, Op::put(format!("{eph}/child"), "c"))
        .await
    {
        Ok(OpResult::Created(_)) | Err(Error::NotSupported { .. }) => {}
        other => panic!("put under an ephemeral node answered {other:?}"),
    }
    other.close().await.expect("close");
    within("ephemeral gone with its session", holder.wait_gone(&eph))
        .await
        .expect("wait_gone");
    holder.close().await.expect("close");
}

/// Every [`Op`] constructor builds the write it names, and each does it
/// under a fence with the plain operation's answers and errors.
pub async fn prim_guarded_op_constructors(h: &dyn Harness) {
    let root = h.root("prim_guarded_op_constructors");
    let s = h.open().await;
    let (_, fence) = hold_fence(&s, &root).await;
    let write = |op: Op| s.guarded(&fence, op);
    let data = |path: &str| {
        let path = path.to_owned();
        let s = s.clone();
        async move { s.get(&path).await.expect("get").map(|n| n.data) }
    };
    let a = format!("{root}/data/a");

    // set on a missing node is NotFound: what put is for.
    assert_err!(
        write(Op::set(a.as_str(), "x")).await,
        Error::NotFound { .. }
    );
    let made = match write(Op::create(a.as_str(), "c")).await {
        Ok(OpResult::Created(c)) => c,
        other => panic!("Op::create answered {other:?}"),
    };
    assert_eq!(data(&a).await.as_deref(), Some(&b"c"[..]));
    assert_err!(
        write(Op::create(a.as_str(), "again")).await,
        Error::AlreadyExists { .. }
    );

    let v1 = match write(Op::set(a.as_str(), b"s1")).await {
        Ok(OpResult::Set(st)) => st.version,
        other => panic!("Op::set answered {other:?}"),
    };
    assert_eq!(data(&a).await.as_deref(), Some(&b"s1"[..]));
    assert_err!(
        write(Op::set_if(a.as_str(), "stale", made.version)).await,
        Error::VersionMismatch { .. }
    );
    let v2 = match write(Op::set_if(a.as_str(), String::from("s2"), v1)).await {
        Ok(OpResult::Set(st)) => st.version,
        other => panic!("Op::set_if answered {other:?}"),
    };
    assert_eq!(data(&a).await.as_deref(), Some(&b"s2"[..]));
    let v3 = match write(Op::put(a.as_str(), b"p")).await {
        Ok(OpResult::Set(st)) => st.version,
        other => panic!("Op::put answered {other:?}"),
    };
    assert_eq!(data(&a).await.as_deref(), Some(&b"p"[..]));
    assert_err!(
        write(Op::delete_if(a.as_str(), v2)).await,
        Error::VersionMismatch { .. }
    );
    assert!(matches!(
        write(Op::delete_if(a.as_str(), v3)).await,
        Ok(OpResult::Deleted)
    ));
    assert_eq!(data(&a).await, None);

    let seq = match write(Op::create_with(
        format!("{root}/data/seq-"),
        "q",
        CreateMode::PersistentSequential,
    ))
    .await
    {
        Ok(OpResult::Created(c)) => c,
        other => panic!("Op::create_with sequential answered {other:?}"),
    };
    assert!(seq.sequence.is_some());
    assert_eq!(data(&seq.path).await.as_deref(), Some(&b"q"[..]));
    let eph = format!("{root}/data/eph");
    assert!(matches!(
        write(Op::create_with(eph.as_str(), "e", CreateMode::Ephemeral)).await,
        Ok(OpResult::Created(_))
    ));
    let node = s.get(&eph).await.expect("get").expect("made");
    assert!(node.stat.ephemeral);
    for path in [eph.as_str(), seq.path.as_str()] {
        assert!(matches!(
            write(Op::delete(path)).await,
            Ok(OpResult::Deleted)
        ));
        assert_eq!(data(path).await, None);
    }
    assert_err!(
        write(Op::delete(eph.as_str())).await,
        Error::NotFound { .. }
    );
    s.close().await.expect("close");
}

/// An old holder and the current one put at the same time, again and
/// again: only the current holder's write lands, and the old one's is
/// refused, whether the old hold went by its node being deleted (a holder
/// paused while someone cleaned up) or by its session's expiry.
pub async fn prim_guarded_put_only_current_holder_lands(h: &dyn Harness) {
    let root = h.root("prim_guarded_put_only_current_holder_lands");
    let lock_path = format!("{root}/lock");
    let target = format!("{root}/data/value");
    let admin = h.open().await;
    let acquire = |s: Session| {
        let lock_path = lock_path.clone();
        async move {
            let lock = Lock::new(&s, &lock_path).expect("lock");
            within("acquire", lock.acquire()).await.expect("acquire")
        }
    };

    let (first, second, third) = (h.open().await, h.open().await, h.open().await);
    let old = acquire(first.clone()).await;
    old.put(&target, "by the first holder")
        .await
        .expect("the holder's put lands");
    // Its node deleted under it: the old guard still thinks it holds.
    admin
        .delete(old.node_path(), None)
        .await
        .expect("delete the holder's node");
    let current = acquire(second.clone()).await;
    race_puts(&admin, &target, &old, &current, "deleted").await;

    // Now the current holder's session expires; a third takes over.
    h.expire(&second).await;
    let next = acquire(third.clone()).await;
    race_puts(&admin, &target, &current, &next, "expired").await;

    next.release().await.expect("release");
    // Lost holds: their release says so.
    for lost in [old, current] {
        assert!(lost.release().await.is_err());
    }
    for s in [&first, &third, &admin] {
        s.close().await.expect("close");
    }
}

/// Put from `old` and `current` together, a few rounds: `old`'s is refused
/// (`LockLost`, its session's end, or a connection loss before its client
/// hears of that end: nothing written either way), `current`'s
/// lands, and the node holds `current`'s value after each round.
async fn race_puts(
    reader: &Session,
    target: &str,
    old: &LockGuard,
    current: &LockGuard,
    how: &str,
) {
    for round in 0..5 {
        let stale = format!("old {how} {round}");
        let fresh = format!("current {how} {round}");
        let (refused, landed) = within(
            "racing puts",
            futures_util::future::join(old.put(target, &stale), current.put(target, &fresh)),
        )
        .await;
        match refused {
            // Refused: the fence is gone, or its session has ended; or,
            // while the old holder's client has not yet heard of its
            // session's expiry (ZooKeeper suspends it first), the put
            // cannot reach the server. Either way nothing of it is
            // written: the read below checks that.
            Err(Error::LockLost { .. } | Error::SessionExpired | Error::ConnectionLost(_)) => {}
            other => panic!("the old holder's put ({how}) answered {other:?}"),
        }
        match landed {
            Ok(OpResult::Set(_) | OpResult::Created(_)) => {}
            other => panic!("the current holder's put answered {other:?}"),
        }
        let node = reader.get(target).await.expect("get").expect("node");
        assert_eq!(
            String::from_utf8_lossy(&node.data),
            fresh,
            "round {round}: the old holder's put ({how}) landed"
        );
    }
}

//! Sessions and ephemeral nodes in the primitive contract: ephemerals go
//! with their session's end (expired or closed), an ended session's
//! operations and pending waits fail with its end, and creates under
//! ephemeral or replaced parents.

use coord_core::{CreateMode, Error, Fence, Op, Result, Session, SessionState};

use crate::{await_state, close_all, within, Harness};

/// Ephemeral nodes vanish when their session expires, as another session
/// sees; `wait_gone` on them resolves. The expired session reports
/// `Expired` and every operation on it fails with `SessionExpired`; its
/// persistent nodes stay.
pub async fn prim_ephemeral_gone_on_expire(h: &dyn Harness) {
    let root = h.root("prim_ephemeral_gone_on_expire");
    let owner = h.open().await;
    let other = h.open().await;
    let eph = format!("{root}/eph");
    let kept = format!("{root}/kept");
    owner
        .create(&eph, b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    let seq = owner
        .create(
            &format!("{root}/seq-"),
            b"",
            CreateMode::EphemeralSequential,
        )
        .await
        .expect("create")
        .path;
    owner
        .create(&kept, b"", CreateMode::Persistent)
        .await
        .expect("create");
    let node = other.get(&eph).await.expect("get").expect("visible");
    assert!(node.stat.ephemeral);

    let waiters: Vec<_> = [eph.clone(), seq.clone()]
        .into_iter()
        .map(|p| {
            let other = other.clone();
            tokio::spawn(async move { other.wait_gone(&p).await })
        })
        .collect();
    h.expire(&owner).await;
    for w in waiters {
        within("wait_gone on an expired session's node", w)
            .await
            .expect("task")
            .expect("resolves Ok");
    }
    assert!(other.get(&eph).await.expect("get").is_none());
    assert!(other.get(&seq).await.expect("get").is_none());
    assert!(
        other.exists(&kept).await.expect("exists"),
        "persistent nodes outlive their session"
    );

    await_state(&owner, SessionState::Expired).await;
    assert_ended(&owner, &root, &kept, |e| matches!(e, Error::SessionExpired)).await;
    owner
        .close()
        .await
        .expect("closing an expired session is Ok");
    assert_eq!(owner.state(), SessionState::Expired, "Expired is final");
    other.close().await.expect("close");
}

/// Ephemeral nodes vanish when their session closes, as another session
/// sees. The closed session reports `Closed`, its operations fail with
/// `SessionClosed`, and closing it again is `Ok`.
pub async fn prim_ephemeral_gone_on_close(h: &dyn Harness) {
    let root = h.root("prim_ephemeral_gone_on_close");
    let owner = h.open().await;
    let other = h.open().await;
    let eph = format!("{root}/eph");
    let kept = format!("{root}/kept");
    owner
        .create(&eph, b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    owner
        .create(&kept, b"", CreateMode::Persistent)
        .await
        .expect("create");
    assert!(other.exists(&eph).await.expect("exists"));
    let waiter = {
        let other = other.clone();
        let eph = eph.clone();
        tokio::spawn(async move { other.wait_gone(&eph).await })
    };
    owner.close().await.expect("close");
    assert_eq!(owner.state(), SessionState::Closed);
    within("wait_gone on a closed session's node", waiter)
        .await
        .expect("task")
        .expect("resolves Ok");
    assert!(other.get(&eph).await.expect("get").is_none());
    assert!(other.exists(&kept).await.expect("exists"));
    assert_ended(&owner, &root, &kept, |e| matches!(e, Error::SessionClosed)).await;
    owner.close().await.expect("closing again is Ok");
    assert_eq!(owner.state(), SessionState::Closed);
    other.close().await.expect("close");
}

/// Every operation of an ended session fails with its end.
async fn assert_ended(s: &Session, root: &str, existing: &str, is_end: fn(&Error) -> bool) {
    let fresh = format!("{root}/after-end");
    let fence = Fence {
        path: existing.to_owned(),
        stamp: 1,
    };
    let results: Vec<(&str, Result<()>)> = vec![
        (
            "create",
            s.create(&fresh, b"", CreateMode::Persistent)
                .await
                .map(drop),
        ),
        ("get", s.get(existing).await.map(drop)),
        ("set", s.set(existing, b"", None).await.map(drop)),
        ("delete", s.delete(existing, None).await),
        ("children", s.children(root).await.map(drop)),
        ("children_watch", s.children_watch(root).await.map(drop)),
        ("wait_gone", s.wait_gone(existing).await),
        ("get_watch", s.get_watch(existing).await.map(drop)),
        (
            "guarded",
            s.guarded(
                &fence,
                Op::Delete {
                    path: existing.to_owned(),
                    version: None,
                },
            )
            .await
            .map(drop),
        ),
    ];
    for (method, r) in results {
        match r {
            Err(e) if is_end(&e) => {}
            other => panic!("{method} on an ended session: got {other:?}"),
        }
    }
}

/// A `wait_gone`, data watch or children watch pending when its own
/// session ends resolves with that end, not `Ok` and not never.
pub async fn prim_pending_waits_end_with_session(h: &dyn Harness) {
    let root = h.root("prim_pending_waits_end_with_session");
    let keeper = h.open().await;
    let node = format!("{root}/stays");
    keeper
        .create(&node, b"", CreateMode::Persistent)
        .await
        .expect("create");
    for expire in [true, false] {
        let s = h.open().await;
        let gone = {
            let s = s.clone();
            let node = node.clone();
            tokio::spawn(async move { s.wait_gone(&node).await })
        };
        let (_, watch) = s.children_watch(&root).await.expect("children_watch");
        let (_, data_watch) = s
            .get_watch(&node)
            .await
            .expect("get_watch")
            .expect("the node exists");
        if expire {
            h.expire(&s).await;
        } else {
            s.close().await.expect("close");
        }
        let want_end = |r: Result<()>| match (expire, r) {
            (true, Err(Error::SessionExpired)) | (false, Err(Error::SessionClosed)) => {}
            (_, other) => panic!("a wait pending at the session's end: got {other:?}"),
        };
        want_end(
            within("wait_gone ends with the session", gone)
                .await
                .expect("task"),
        );
        // Nothing changes the watched node: its watch ends with the session.
        want_end(within("data watch ends with the session", data_watch).await);
        // The watch may have fired for a change (none was made here); if it
        // resolves, it is with the session's end.
        match within("children watch ends with the session", watch).await {
            Ok(()) => {}
            r => want_end(r),
        }
    }
    assert!(keeper.exists(&node).await.expect("exists"));
    keeper.close().await.expect("close");
}

/// A child under an ephemeral node is either refused with `NotSupported`
/// or made; nothing else.
pub async fn prim_child_of_ephemeral(h: &dyn Harness) {
    let root = h.root("prim_child_of_ephemeral");
    let s = h.open().await;
    let eph = format!("{root}/eph");
    s.create(&eph, b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    match s
        .create(&format!("{eph}/child"), b"", CreateMode::Persistent)
        .await
    {
        Ok(_) | Err(Error::NotSupported { .. }) => {}
        other => panic!("child of an ephemeral node: got {other:?}"),
    }
    s.close().await.expect("close");
}

/// A session that has made nodes under a directory creates under it as a
/// fresh session would after another session deleted it (it is made
/// again) or put an ephemeral node in its place (the create is answered as
/// under any ephemeral node). A backend may remember where it created
/// before, to send less; it must not trust that memory.
pub async fn prim_create_after_parent_replaced(h: &dyn Harness) {
    let root = h.root("prim_create_after_parent_replaced");
    let (s, other) = (h.open().await, h.open().await);
    let dir = format!("{root}/dir");
    let under = |name: &str| format!("{dir}/{name}");
    s.create(&dir, b"", CreateMode::Persistent)
        .await
        .expect("create dir");
    for name in ["a", "b"] {
        s.create(&under(name), b"", CreateMode::Persistent)
            .await
            .expect("create under dir");
    }
    for name in ["a", "b"] {
        other.delete(&under(name), None).await.expect("delete");
    }
    other.delete(&dir, None).await.expect("delete dir");

    s.create(&under("c"), b"", CreateMode::Persistent)
        .await
        .expect("create under the deleted dir");
    let made = s.get(&dir).await.expect("get").expect("the dir made again");
    assert!(!made.stat.ephemeral, "the dir made again as ephemeral");

    other.delete(&under("c"), None).await.expect("delete");
    // A directory a create made may be a container (ZooKeeper), deleted by
    // the server once empty.
    match other.delete(&dir, None).await {
        Ok(()) | Err(Error::NotFound { .. }) => {}
        e => panic!("delete the dir again: {e:?}"),
    }
    other
        .create(&dir, b"", CreateMode::Ephemeral)
        .await
        .expect("an ephemeral node in the dir's place");
    let fresh = h.open().await;
    let kind = |r: &Result<coord_core::Created>| match r {
        Ok(_) => "created".to_owned(),
        Err(e) => format!("{:?}", std::mem::discriminant(e)),
    };
    let cold = fresh.create(&under("x"), b"", CreateMode::Persistent).await;
    let warm = s.create(&under("y"), b"", CreateMode::Persistent).await;
    assert_eq!(
        kind(&warm),
        kind(&cold),
        "under an ephemeral node: {warm:?} from the session that created there before, \
         {cold:?} from a fresh one"
    );
    close_all(&[s, other, fresh]).await;
}

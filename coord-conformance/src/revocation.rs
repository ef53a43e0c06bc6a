//! Conformance of revocation: `Lockable::request_release` and
//! `revocation::request` ask a holder to let go (Curator's `__REVOKE__`
//! marker in its node); the holder sees it on
//! `LockGuard::revocation_requested` and decides, keeping its hold (and
//! fence) until it releases.

use std::sync::Arc;

use coord_core::path::join;
use coord_core::prelude::*;
use coord_core::recipes::revocation::{self, REVOKE_REQUEST};
use coord_core::recipes::{Lock, LockGuard, RwLock, Stats};
use coord_core::{CreateMode, Error, Op, Session, SessionState};
use tokio::task::JoinHandle;

use crate::faults::SHORT_FAULT_TIMEOUT;
use crate::lock_kinds::{await_blocked, for_each_kind};
use crate::{await_state, close_all, open_n, within, Harness};

/// Watch `guard` for a revocation request in a task of its own (so the
/// watch is armed while the test goes on).
fn watch_request(guard: &Arc<LockGuard>) -> JoinHandle<coord_core::Result<()>> {
    let g = guard.clone();
    tokio::spawn(async move { g.revocation_requested().await })
}

/// The guard back from its watchers, to release it.
fn only(guard: Arc<LockGuard>, what: &str) -> LockGuard {
    Arc::try_unwrap(guard).unwrap_or_else(|_| panic!("{what}: the guard is still shared"))
}

/// For every kind: a holder is asked by another session's
/// `request_release()` (which returns the holder's node) and sees it on
/// `revocation_requested()`, whether it was already watching or looks
/// after; its fence still works and the lock stays held until it releases.
/// `revocation::request` asks a node directly, and finds nobody at a node
/// that is gone.
pub async fn revocation_holder_is_asked(h: &dyn Harness) {
    for_each_kind(
        h,
        "revocation_holder_is_asked",
        |_| true,
        |kind, root| async move {
            let name = kind.name;
            let dir = join(&root, "lock");
            let [a, b] = <[Session; 2]>::try_from(open_n(h, 2).await).expect("two sessions");
            let g = Arc::new(
                kind.lock(&a, &dir, &Stats::new())
                    .acquire()
                    .await
                    .expect("acquire"),
            );
            let watching = watch_request(&g);
            let rival = kind.rival_lock(&b, &dir, &Stats::new());
            let asked = rival.request_release().await.expect("request_release");
            assert_eq!(
                asked,
                vec![g.node_path().to_owned()],
                "{name}: request_release asked the wrong nodes"
            );
            within(
                &format!("{name}: the watching holder sees the request"),
                watching,
            )
            .await
            .expect("task")
            .unwrap_or_else(|e| panic!("{name}: revocation_requested: {e}"));
            within(
                &format!("{name}: a holder looking after the request sees it"),
                g.revocation_requested(),
            )
            .await
            .unwrap_or_else(|e| panic!("{name}: revocation_requested: {e}"));
            g.write(Op::Create {
                path: join(&root, "after-the-request"),
                data: Vec::new(),
                mode: CreateMode::Persistent,
            })
            .await
            .unwrap_or_else(|e| panic!("{name}: a guarded write after the request: {e}"));
            assert!(
                rival.try_acquire().await.expect("try").is_none(),
                "{name}: a revocation request released the lock by itself"
            );
            only(g, name).release().await.expect("release");
            let g = rival
                .try_acquire()
                .await
                .expect("try")
                .unwrap_or_else(|| panic!("{name}: not free after the holder released"));
            let g = Arc::new(g);
            let watching = watch_request(&g);
            assert!(
                revocation::request(&a, g.node_path())
                    .await
                    .expect("request"),
                "{name}: revocation::request found no holder"
            );
            within(&format!("{name}: revocation::request seen"), watching)
                .await
                .expect("task")
                .unwrap_or_else(|e| panic!("{name}: revocation_requested: {e}"));
            let node = g.node_path().to_owned();
            only(g, name).release().await.expect("release");
            assert!(
                !revocation::request(&a, &node).await.expect("request"),
                "{name}: revocation::request asked a node that is gone"
            );
            close_all(&[a, b]).await;
        },
    )
    .await;
}

/// `request_release` asks only the holders: not a waiter queued behind
/// (its node keeps its data), nobody on a free lock, and every reader
/// holding a read/write lock but not the writer waiting.
pub async fn revocation_asks_only_holders(h: &dyn Harness) {
    let root = h.root("revocation_asks_only_holders");
    let sessions = open_n(h, 4).await;
    let dir = join(&root, "lock");
    let viewer = Lock::new(&sessions[3], &dir).expect("lock");
    assert!(
        viewer.request_release().await.expect("request").is_empty(),
        "a free lock: somebody was asked"
    );
    let holder = Lock::new(&sessions[0], &dir)
        .expect("lock")
        .acquire()
        .await
        .expect("acquire");
    let stats = Stats::new();
    let waiter = Lock::new(&sessions[1], &dir)
        .expect("lock")
        .with_data(b"waiter")
        .expect("data")
        .with_stats(stats.clone());
    let waiting = tokio::spawn(async move { waiter.acquire().await });
    await_blocked(&stats, 1, "the waiter queued").await;
    let asked = viewer.request_release().await.expect("request");
    assert_eq!(asked, vec![holder.node_path().to_owned()], "asked");
    let listed = viewer.participants().await.expect("participants");
    assert_eq!(listed[0].data, REVOKE_REQUEST, "the holder's node");
    assert_eq!(listed[1].data, b"waiter", "the waiter's node was written");
    holder.release().await.expect("release");
    let g = within("the waiter's grant", waiting)
        .await
        .expect("task")
        .expect("acquire");
    let listed = viewer.participants().await.expect("participants");
    assert_eq!(listed[0].data, b"waiter", "the new holder was asked");
    g.release().await.expect("release");

    let rwdir = join(&root, "rw");
    let rw: Vec<RwLock> = sessions
        .iter()
        .map(|s| RwLock::new(s, &rwdir).expect("rw"))
        .collect();
    let r1 = rw[0].read().await.expect("read");
    let r2 = rw[1].read().await.expect("read");
    let writer = rw[2].clone();
    let writing = tokio::spawn(async move { writer.write().await });
    crate::await_children(&sessions[3], &rwdir, "the writer queued", |k| k.len() == 3).await;
    let mut asked = rw[3].write_lock().request_release().await.expect("request");
    asked.sort();
    let mut want = vec![r1.node_path().to_owned(), r2.node_path().to_owned()];
    want.sort();
    assert_eq!(
        asked, want,
        "a read/write lock: the readers holding are asked"
    );
    r1.release().await.expect("release");
    r2.release().await.expect("release");
    let w = within("the writer's grant", writing)
        .await
        .expect("task")
        .expect("write");
    let listed = rw[3].participants().await.expect("participants");
    assert_ne!(
        listed[0].data, REVOKE_REQUEST,
        "the waiting writer was asked"
    );
    w.release().await.expect("release");
    close_all(&sessions).await;
}

/// A holder behind a fault: a request made while its traffic is stalled
/// (a partition shorter than the session timeout) or while its connection
/// is cut is seen once the fault heals, with the hold intact.
pub async fn revocation_seen_after_a_fault(h: &dyn Harness) {
    let root = h.root("revocation_seen_after_a_fault");
    let partition = async {
        let dir = join(&root, "partitioned");
        let (s, fault) = h.open_faulty(SHORT_FAULT_TIMEOUT).await;
        let other = h.open().await;
        let g = Arc::new(
            Lock::new(&s, &dir)
                .expect("lock")
                .acquire()
                .await
                .expect("acquire"),
        );
        let watching = watch_request(&g);
        // A round trip after the watch's read, so the watch is likely armed.
        s.get(g.node_path()).await.expect("get");
        fault.partition();
        let asked = Lock::new(&other, &dir)
            .expect("lock")
            .request_release()
            .await
            .expect("request");
        assert_eq!(asked, vec![g.node_path().to_owned()], "partition: asked");
        // The fault's length is the point, not a wait for a condition:
        // well inside the session timeout, as in the fault tests.
        tokio::time::sleep(SHORT_FAULT_TIMEOUT / 4).await;
        fault.heal();
        within("partition: the request seen after the heal", watching)
            .await
            .expect("task")
            .unwrap_or_else(|e| panic!("partition: revocation_requested: {e}"));
        assert!(!s.state().is_terminal(), "partition: the session ended");
        g.write(Op::Create {
            path: join(&root, "after-partition"),
            data: Vec::new(),
            mode: CreateMode::Persistent,
        })
        .await
        .expect("partition: a guarded write after the heal");
        only(g, "partition").release().await.expect("release");
        let _ = s.close().await;
        let _ = other.close().await;
    };
    let cut = async {
        let dir = join(&root, "cut");
        let (s, fault) = h.open_faulty(SHORT_FAULT_TIMEOUT).await;
        let other = h.open().await;
        let g = Arc::new(
            Lock::new(&s, &dir)
                .expect("lock")
                .acquire()
                .await
                .expect("acquire"),
        );
        let watching = watch_request(&g);
        s.get(g.node_path()).await.expect("get");
        fault.cut();
        let mut state = s.state_watch();
        within(
            "cut: Suspended",
            state.wait_for(|st| *st == SessionState::Suspended),
        )
        .await
        .expect("the state watch");
        let asked = Lock::new(&other, &dir)
            .expect("lock")
            .request_release()
            .await
            .expect("request");
        assert_eq!(asked, vec![g.node_path().to_owned()], "cut: asked");
        fault.heal();
        within("cut: the request seen after the heal", watching)
            .await
            .expect("task")
            .unwrap_or_else(|e| panic!("cut: revocation_requested: {e}"));
        assert!(!s.state().is_terminal(), "cut: the session ended");
        g.write(Op::Create {
            path: join(&root, "after-cut"),
            data: Vec::new(),
            mode: CreateMode::Persistent,
        })
        .await
        .expect("cut: a guarded write after the heal");
        only(g, "cut").release().await.expect("release");
        let _ = s.close().await;
        let _ = other.close().await;
    };
    tokio::join!(partition, cut);
}

/// When the hold is lost before any request, `revocation_requested()`
/// returns why: `LockLost` for a node deleted under it; for an expired
/// session, an error while it waits and the session's own error
/// (`SessionExpired`) once the session knows it ended.
pub async fn revocation_lost_first(h: &dyn Harness) {
    let root = h.root("revocation_lost_first");
    let [a, b] = <[Session; 2]>::try_from(open_n(h, 2).await).expect("two sessions");
    let g = Arc::new(
        Lock::new(&a, &join(&root, "deleted"))
            .expect("lock")
            .acquire()
            .await
            .expect("acquire"),
    );
    let watching = watch_request(&g);
    b.delete(g.node_path(), None)
        .await
        .expect("an operator deletes the node");
    let r = within("the deleted holder's revocation_requested", watching)
        .await
        .expect("task");
    assert!(
        matches!(r, Err(Error::LockLost { .. })),
        "node deleted: revocation_requested said {r:?}"
    );
    drop(g);

    let g = Arc::new(
        Lock::new(&a, &join(&root, "expired"))
            .expect("lock")
            .acquire()
            .await
            .expect("acquire"),
    );
    let watching = watch_request(&g);
    h.expire(&a).await;
    // Where the server deletes the session's nodes before the client hears
    // that the session ended (etcd: the lease's keys go at its revocation,
    // the keep-alive learns of it later), the loss is seen as the node's.
    let r = within("the expired holder's revocation_requested", watching)
        .await
        .expect("task");
    assert!(
        matches!(r, Err(Error::SessionExpired | Error::LockLost { .. })),
        "session expired while watching: revocation_requested said {r:?}"
    );
    await_state(&a, SessionState::Expired).await;
    let r = g.revocation_requested().await;
    assert!(
        matches!(r, Err(Error::SessionExpired)),
        "session known expired: revocation_requested said {r:?}"
    );
    drop(g);
    close_all(&[a, b]).await;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __revocation_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            revocation::revocation_holder_is_asked,
            revocation::revocation_asks_only_holders,
            revocation::revocation_seen_after_a_fault,
            revocation::revocation_lost_first,
        );
    };
}

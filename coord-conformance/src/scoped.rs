//! Conformance of the scoped helpers: `LockableExt::run` /
//! `run_timeout` over every lock kind, and `LeaderElectionExt::lead`. The
//! body runs under the hold, its value comes back, and the hold is given
//! up after; a hold lost while the body runs drops the body and returns the
//! loss.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coord_core::path::join;
use coord_core::prelude::*;
use coord_core::recipes::HoldContext;
use coord_core::recipes::{Election, Stats};
use coord_core::{CreateMode, Error, Op, Session};
use tokio::sync::oneshot;

use crate::lock_kinds::{for_each_kind, held_nodes};
use crate::{close_all, open_n, within, Harness};

/// How long an acquire that must time out is given.
const SHORT: Duration = Duration::from_millis(200);

/// Sets its flag when dropped: a body holding one was dropped when the
/// flag is set and the body never finished.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A body that reports its hold's node, then waits forever (until it is
/// dropped, which sets `dropped`).
fn stuck_body(
    dropped: &Arc<AtomicBool>,
    started: oneshot::Sender<String>,
) -> impl FnOnce(HoldContext) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    let flag = SetOnDrop(dropped.clone());
    move |held: HoldContext| {
        Box::pin(async move {
            let _flag = flag;
            let _ = started.send(held.fence().path.clone());
            std::future::pending::<()>().await;
        })
    }
}

/// For every kind: `run` holds the lock while its body runs (a rival
/// cannot take it; the body's guarded write lands), returns the body's
/// value, and leaves the lock free with no node; `run_timeout` on a lock a
/// rival holds times out without running its body.
pub async fn scoped_run_returns_and_releases(h: &dyn Harness) {
    for_each_kind(
        h,
        "scoped_run_returns_and_releases",
        |_| true,
        |kind, root| async move {
            let name = kind.name;
            let dir = join(&root, "lock");
            let [a, b] = <[Session; 2]>::try_from(open_n(h, 2).await).expect("two sessions");
            let lock = kind.lock(&a, &dir, &Stats::new());
            let rival = kind.rival_lock(&b, &dir, &Stats::new());
            let resource = join(&root, "resource");
            let out = lock
                .run(|held| {
                    let (rival, resource) = (&rival, resource.clone());
                    async move {
                        assert!(
                            rival.try_acquire().await.expect("try").is_none(),
                            "{name}: a rival took the lock while the body ran"
                        );
                        held.write(Op::Create {
                            path: resource,
                            data: Vec::new(),
                            mode: CreateMode::Persistent,
                        })
                        .await
                        .unwrap_or_else(|e| panic!("{name}: the body's guarded write: {e}"));
                        held.fencing_token()
                    }
                })
                .await
                .unwrap_or_else(|e| panic!("{name}: run: {e}"));
            assert!(
                out > 0,
                "{name}: the body's value (its token) came back as {out}"
            );
            assert!(
                held_nodes(&a, &dir).await.is_empty(),
                "{name}: run left a node"
            );
            let g = rival
                .try_acquire()
                .await
                .expect("try")
                .unwrap_or_else(|| panic!("{name}: not free after run"));
            assert!(
                g.fencing_token() > out,
                "{name}: the next token did not grow"
            );
            let ran = AtomicBool::new(false);
            let r = lock
                .run_timeout(SHORT, |_| async {
                    ran.store(true, Ordering::SeqCst);
                })
                .await;
            assert!(
                matches!(r, Err(Error::Timeout(_))),
                "{name}: run_timeout on a held lock: {r:?}"
            );
            assert!(
                !ran.load(Ordering::SeqCst),
                "{name}: the body ran without the lock"
            );
            g.release().await.expect("release");
            close_all(&[a, b]).await;
        },
    )
    .await;
}

/// For every kind: a `run` whose lock is lost while its body runs — the
/// node deleted by another session, then (a second run) the session
/// expired — drops the body and returns the loss, and the lock is free.
pub async fn scoped_run_lost_drops_body(h: &dyn Harness) {
    for_each_kind(
        h,
        "scoped_run_lost_drops_body",
        |_| true,
        |kind, dir| async move {
            let name = kind.name;
            let [a, b] = <[Session; 2]>::try_from(open_n(h, 2).await).expect("two sessions");
            let lock = kind.lock(&a, &dir, &Stats::new());
            let rival = kind.rival_lock(&b, &dir, &Stats::new());

            let dropped = Arc::new(AtomicBool::new(false));
            let (tx, rx) = oneshot::channel();
            let (r, ()) = tokio::join!(lock.run(stuck_body(&dropped, tx)), async {
                let node = within(&format!("{name}: the body starts"), rx)
                    .await
                    .expect("the body reports its node");
                b.delete(&node, None)
                    .await
                    .expect("an operator deletes the node");
            });
            assert!(
                matches!(r, Err(Error::LockLost { .. })),
                "{name}: run after the node was deleted: {r:?}"
            );
            assert!(
                dropped.load(Ordering::SeqCst),
                "{name}: the body was not dropped"
            );
            let g = rival
                .acquire_timeout(crate::WAIT)
                .await
                .unwrap_or_else(|e| panic!("{name}: not free after the lost run: {e}"));
            g.release().await.expect("release");

            let dropped = Arc::new(AtomicBool::new(false));
            let (tx, rx) = oneshot::channel();
            let (r, ()) = tokio::join!(lock.run(stuck_body(&dropped, tx)), async {
                within(&format!("{name}: the body starts"), rx)
                    .await
                    .expect("the body reports its node");
                h.expire(&a).await;
            });
            assert!(
                matches!(r, Err(Error::SessionExpired | Error::LockLost { .. })),
                "{name}: run after the session expired: {r:?}"
            );
            assert!(
                dropped.load(Ordering::SeqCst),
                "{name}: the body was not dropped"
            );
            let g = within(&format!("{name}: free after the expiry"), rival.acquire())
                .await
                .unwrap_or_else(|e| panic!("{name}: acquire after the expiry: {e}"));
            g.release().await.expect("release");
            close_all(&[a, b]).await;
        },
    )
    .await;
}

/// `lead` campaigns, runs its body as leader (the leader read by others is
/// this term) and resigns, returning the body's value; leadership lost
/// while the body runs (the offer deleted, or the session expired) drops
/// the body and returns the loss.
pub async fn scoped_lead(h: &dyn Harness) {
    let dir = h.root("scoped_lead");
    let [a, b] = <[Session; 2]>::try_from(open_n(h, 2).await).expect("two sessions");
    let mine = Election::new(&a, &dir).expect("election");
    let theirs = Election::new(&b, &dir).expect("election");
    let election: &dyn LeaderElection = &mine;
    let observer: &dyn LeaderElection = &theirs;
    let out = election
        .lead(b"me", |term| async move {
            let leader = observer
                .leader()
                .await
                .expect("leader")
                .expect("a leader while the body runs");
            assert_eq!(
                leader.token,
                term.fencing_token(),
                "the leader is this term"
            );
            assert_eq!(leader.value, b"me");
            7
        })
        .await
        .expect("lead");
    assert_eq!(out, 7, "the body's value");
    assert_eq!(
        observer.leader().await.expect("leader"),
        None,
        "still leading after lead returned"
    );

    let dropped = Arc::new(AtomicBool::new(false));
    let (tx, rx) = oneshot::channel();
    let (r, ()) = tokio::join!(election.lead(b"me", stuck_body(&dropped, tx)), async {
        let node = within("the body starts", rx)
            .await
            .expect("the body's node");
        b.delete(&node, None)
            .await
            .expect("an operator deletes the offer");
    });
    assert!(
        matches!(r, Err(Error::LockLost { .. })),
        "lead after the offer was deleted: {r:?}"
    );
    assert!(dropped.load(Ordering::SeqCst), "the body was not dropped");

    let dropped = Arc::new(AtomicBool::new(false));
    let (tx, rx) = oneshot::channel();
    let (r, ()) = tokio::join!(election.lead(b"me", stuck_body(&dropped, tx)), async {
        within("the body starts", rx)
            .await
            .expect("the body's node");
        h.expire(&a).await;
    });
    assert!(
        matches!(r, Err(Error::SessionExpired | Error::LockLost { .. })),
        "lead after the session expired: {r:?}"
    );
    assert!(dropped.load(Ordering::SeqCst), "the body was not dropped");
    let l = within("b leads after the expiry", theirs.campaign(b"them"))
        .await
        .expect("campaign");
    l.resign().await.expect("resign");
    close_all(&[a, b]).await;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __scoped_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            scoped::scoped_run_returns_and_releases,
            scoped::scoped_run_lost_drops_body,
            scoped::scoped_lead,
        );
    };
}

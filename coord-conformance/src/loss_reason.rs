//! Why a hold ended: every guard's `lost()` gives the one documented reason
//! for each way a hold ends (see `coord_core::prelude::Hold::lost`), the
//! same whether it was already being awaited when the hold ended or is
//! awaited afterwards, on every backend.
//!
//! | way the hold ends                          | `lost()`         |
//! |--------------------------------------------|------------------|
//! | the server ended the session (expiry)      | `SessionExpired` |
//! | its owner closed the session               | `SessionClosed`  |
//! | the lease deadline passed on the client    | `SessionExpired` |
//! | another session deleted the node           | `LockLost`       |
//!
//! Each test runs [`ROUNDS`] rounds at once, each with its own session
//! holding one of every kind of hold (a lock, a leadership, a membership,
//! a semaphore lease, a queue delivery). For each hold, one waiter is
//! already awaiting `lost()` when the event happens ("before"), and
//! `lost()` is awaited again once the event is done on the server
//! ("after"), and once more after the session itself says so where it
//! does.

use std::sync::Arc;

use coord_core::path::join;
use coord_core::prelude::Hold;
use coord_core::recipes::{Election, Group, Lock, Queue, Semaphore};
use coord_core::{Error, Session, SessionState};
use futures_util::future::join_all;
use tokio::task::JoinHandle;

use crate::faults::PARTITION_TIMEOUT;
use crate::{await_state, within, Harness};

/// How many rounds each test runs (at once, each on its own session).
pub const ROUNDS: usize = 10;

/// One of every kind of hold, all in `session`, under `dir`.
async fn hold_everything(session: &Session, dir: &str) -> Vec<Arc<dyn Hold>> {
    let lock = Lock::new(session, &join(dir, "lock"))
        .expect("lock")
        .acquire()
        .await
        .expect("acquire a free lock");
    let leadership = Election::new(session, &join(dir, "election"))
        .expect("election")
        .campaign(b"me")
        .await
        .expect("campaign alone");
    let membership = Group::new(session, &join(dir, "group"))
        .expect("group")
        .join(b"me")
        .await
        .expect("join");
    let lease = Semaphore::new(session, &join(dir, "semaphore"), 1)
        .expect("semaphore")
        .acquire(1)
        .await
        .expect("acquire a free lease")
        .pop()
        .expect("one lease");
    let queue = Queue::reliable(session, &join(dir, "queue")).expect("queue");
    queue.offer(b"item").await.expect("offer");
    let delivery = queue.take().await.expect("take the item");
    vec![
        Arc::new(lock),
        Arc::new(leadership),
        Arc::new(membership),
        Arc::new(lease),
        Arc::new(delivery),
    ]
}

/// Start a waiter on each hold's `lost()`, and return once they are all
/// waiting: each has been polled, and `session` has since answered a
/// request (the waiters' own requests, sent first, are answered by then on
/// a backend that answers in order).
async fn wait_for_loss(session: &Session, holds: &[Arc<dyn Hold>]) -> Vec<JoinHandle<Error>> {
    let waiters = spawn_waiters(holds);
    for _ in 0..8 {
        tokio::task::yield_now().await;
    }
    for h in holds {
        session
            .exists(h.node_path())
            .await
            .expect("the hold's node, read while the waiters wait");
    }
    for (w, h) in waiters.iter().zip(holds) {
        assert!(
            !w.is_finished(),
            "{}: lost() resolved while the hold was held",
            h.node_path()
        );
    }
    waiters
}

/// Assert every waiter, and then `lost()` awaited again now, gives `want`.
async fn assert_reason(
    what: &str,
    holds: &[Arc<dyn Hold>],
    waiters: Vec<JoinHandle<Error>>,
    want: &Error,
) {
    for (w, h) in waiters.into_iter().zip(holds) {
        let got = within(&format!("{what}: the waiter's lost()"), w)
            .await
            .expect("the waiter's task");
        assert_eq!(
            got.to_string(),
            want.to_string(),
            "{what}: {} awaited before the event",
            h.node_path()
        );
    }
    assert_after(what, holds, want).await;
}

/// Assert `lost()` awaited now gives `want` on every hold.
async fn assert_after(what: &str, holds: &[Arc<dyn Hold>], want: &Error) {
    for h in holds {
        let got = within(&format!("{what}: lost() awaited after"), h.lost()).await;
        assert_eq!(
            got.to_string(),
            want.to_string(),
            "{what}: {} awaited after the event",
            h.node_path()
        );
    }
}

/// Run `round` [`ROUNDS`] times at once, each under its own directory.
async fn rounds<F, Fut>(h: &dyn Harness, test: &str, round: F)
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let root = h.root(test);
    join_all((0..ROUNDS).map(|i| round(join(&root, &format!("r{i}"))))).await;
}

/// The server ends the session (the harness's `expire`): every hold's
/// `lost()` is `SessionExpired`, awaited before, right after the server
/// ended it (before the client may know), and after the client says so.
pub async fn loss_reason_session_expired(h: &dyn Harness) {
    rounds(h, "loss_reason_session_expired", |dir| async move {
        let session = h.open().await;
        let holds = hold_everything(&session, &dir).await;
        let waiters = wait_for_loss(&session, &holds).await;
        h.expire(&session).await;
        let want = Error::SessionExpired;
        assert_after("expired, the server has ended it", &holds, &want).await;
        assert_reason("expired", &holds, waiters, &want).await;
        await_state(&session, SessionState::Expired).await;
        assert_after("expired, the client knows", &holds, &want).await;
    })
    .await;
}

/// Its owner closes the session: every hold's `lost()` is `SessionClosed`.
pub async fn loss_reason_session_closed(h: &dyn Harness) {
    rounds(h, "loss_reason_session_closed", |dir| async move {
        let session = h.open().await;
        let holds = hold_everything(&session, &dir).await;
        let waiters = wait_for_loss(&session, &holds).await;
        session.close().await.expect("close");
        assert_reason("closed", &holds, waiters, &Error::SessionClosed).await;
    })
    .await;
}

/// The lease deadline passes on the client (a partition longer than the
/// session timeout): every hold's `lost()` is `SessionExpired`, and stays
/// so once the fault heals and the session is ended on the server (its
/// nodes deleted).
pub async fn loss_reason_lease_deadline(h: &dyn Harness) {
    rounds(h, "loss_reason_lease_deadline", |dir| async move {
        let (session, fault) = h.open_faulty(PARTITION_TIMEOUT).await;
        let holds = hold_everything(&session, &dir).await;
        let waiters = wait_for_loss(&session, &holds).await;
        fault.partition();
        let want = Error::SessionExpired;
        assert_reason("lease deadline", &holds, waiters, &want).await;
        assert_eq!(session.state(), SessionState::Expired);
        fault.heal();
        // The session is ended on the server once it is reached again:
        // its nodes go. The reason stays the same.
        let observer = h.open().await;
        for hold in &holds {
            let path = hold.node_path().to_owned();
            within("the given-up session's nodes go", observer.wait_gone(&path))
                .await
                .expect("wait for the node to go");
        }
        let waiters = spawn_waiters(&holds);
        assert_reason("lease deadline, nodes gone", &holds, waiters, &want).await;
        let _ = observer.close().await;
    })
    .await;
}

/// A task awaiting `lost()` on each hold.
fn spawn_waiters(holds: &[Arc<dyn Hold>]) -> Vec<JoinHandle<Error>> {
    holds
        .iter()
        .map(|h| {
            let h = Arc::clone(h);
            tokio::spawn(async move { h.lost().await })
        })
        .collect()
}

/// Another session deletes the held node while the holder's session lives
/// on: `lost()` is `LockLost` with the node's path.
pub async fn loss_reason_node_deleted(h: &dyn Harness) {
    rounds(h, "loss_reason_node_deleted", |dir| async move {
        let session = h.open().await;
        let other = h.open().await;
        let holds = hold_everything(&session, &dir).await;
        let waiters = wait_for_loss(&session, &holds).await;
        for hold in &holds {
            other
                .delete(hold.node_path(), None)
                .await
                .expect("another session deletes the held node");
        }
        for (w, hold) in waiters.into_iter().zip(&holds) {
            let want = Error::LockLost {
                path: hold.node_path().to_owned(),
            };
            assert_reason(
                "deleted by another session",
                std::slice::from_ref(hold),
                vec![w],
                &want,
            )
            .await;
        }
        assert!(
            !session.state().is_terminal(),
            "the holder's session lives on"
        );
        let _ = session.close().await;
        let _ = other.close().await;
    })
    .await;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __loss_reason_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            loss_reason::loss_reason_session_expired,
            loss_reason::loss_reason_session_closed,
            loss_reason::loss_reason_lease_deadline,
            loss_reason::loss_reason_node_deleted,
        );
    };
}

//! The contract between the suite and a backend: the [`Harness`] trait a
//! backend implements, and the runner and session helpers every test shares.

use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use coord_core::{Client, ClientOptions, Session, SessionState};

use crate::fault;

/// What the suite needs from a backend.
#[async_trait]
pub trait Harness: Send + Sync {
    /// The backend's short name, for messages.
    fn name(&self) -> &'static str;

    /// Open a new session (its own connection where the backend has them).
    /// Panics if the backend cannot be reached: a test that needs a server
    /// it cannot reach fails.
    async fn open(&self) -> Session;

    /// Make the server end `session` now, as if it had missed its timeout
    /// (ZooKeeper: a second handle on the same session closes it; etcd:
    /// revoke its lease; Redis: delete its key; memory: the store's hook).
    /// Returns once the server has ended it; the session's own state may
    /// learn of it a little later.
    async fn expire(&self, session: &Session);

    /// Open a session behind a fault injector (a [`fault::FaultProxy`]
    /// between it and the server; in memory, the store's hooks) asking for
    /// `session_timeout` as its session timeout (etcd rounds it up to whole
    /// seconds). Only that session's traffic is affected. Panics if the
    /// backend cannot be reached.
    async fn open_faulty(&self, session_timeout: Duration) -> (Session, Box<dyn fault::Fault>);

    /// A supervised [`Client`] whose every session goes through one fault
    /// injector (one [`fault::FaultProxy`] for all of them; in memory, the
    /// store's hooks on each session it opens), each asking for
    /// `session_timeout` as [`Harness::open_faulty`] does. A fault applies
    /// to the live session and to the client's attempts to open the next
    /// one; [`Harness::expire`] ends any of its sessions.
    async fn faulty_client(
        &self,
        session_timeout: Duration,
        options: ClientOptions,
    ) -> (Client, Box<dyn fault::Fault>);

    /// Whether the backend offers [`Session::watch_tree`]. Where it says
    /// not, the suite checks the call is refused with `NotSupported`.
    fn tree_watches(&self) -> bool {
        true
    }

    /// A fresh, unique root for one test.
    fn root(&self, test: &str) -> String {
        let id = uuid::Uuid::new_v4().simple().to_string();
        format!("/coord-conformance/{test}-{}", &id[..12])
    }
}

/// Longest a single conformance test may run before it is failed as hung.
pub const TEST_DEADLINE: Duration = Duration::from_secs(120);

#[doc(hidden)]
pub fn __run<F: Future<Output = ()>>(name: &str, fut: F) {
    run_within(&format!("conformance test {name}"), TEST_DEADLINE, fut);
}

/// Run `fut` to its end on a fresh multi-threaded runtime of its own, and
/// panic naming `what` when it takes longer than `deadline`: how every
/// conformance and cluster test runs.
pub(crate) fn run_within<F: Future<Output = ()>>(what: &str, deadline: Duration, fut: F) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("build a tokio runtime");
    rt.block_on(async {
        if tokio::time::timeout(deadline, fut).await.is_err() {
            panic!("{what} did not finish within {deadline:?}");
        }
    });
}

/// Wait until `session` reports the terminal state `want` (after
/// [`Harness::expire`] the client learns of it asynchronously).
///
/// # Errors
/// Panics if it does not within 30 s.
///
/// # Cancel safety
/// Cancel safe: it only watches.
pub async fn await_state(session: &Session, want: SessionState) {
    let mut rx = session.state_watch();
    let got = tokio::time::timeout(Duration::from_secs(30), rx.wait_for(|s| *s == want)).await;
    assert!(
        matches!(got, Ok(Ok(_))),
        "session {} never reached {want:?} (now {:?})",
        session.id(),
        session.state()
    );
}

//! The contract between the cluster tests and a clustered backend: the
//! [`ClusterHarness`] trait, the waits for a leader and for health, and the
//! runner that heals the cluster and runs one test at a time.

use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use coord_core::{Client, ClientOptions, Session};

use crate::harness::run_within;

/// What the cluster tests need from a clustered backend.
#[async_trait]
pub trait ClusterHarness: Send + Sync {
    /// The backend's short name, for messages (`zk3`, `etcd3`).
    fn name(&self) -> &'static str;

    /// How many members the cluster has (3 in `scripts/test-all`). Members
    /// are numbered from 0, in the order of the cluster's connect string.
    fn members(&self) -> usize;

    /// Open a new session on the whole cluster (every member in its connect
    /// string, so it can move to another when its member dies), asking for
    /// `session_timeout`. Panics if the cluster cannot be reached: a test
    /// that needs a cluster it cannot reach fails.
    async fn open(&self, session_timeout: Duration) -> Session;

    /// A supervised client whose every session is opened on the whole
    /// cluster as [`ClusterHarness::open`] opens one, asking for
    /// `session_timeout`.
    fn client(&self, session_timeout: Duration, options: ClientOptions) -> Client;

    /// The longest a single request of a session opened with
    /// `session_timeout` waits for an answer before it fails with
    /// `ConnectionLost` (etcd: its request timeout; ZooKeeper: its
    /// connection timeout, after which the client gives up on a silent
    /// member). Calls without a timeout of their own must fail within it.
    fn request_timeout(&self, session_timeout: Duration) -> Duration;

    /// kill -9 member `member`; returns once it is gone (its sockets are
    /// closed). Killing a member that is down does nothing.
    async fn kill(&self, member: usize);

    /// Start member `member` again on its own ports and data; returns once
    /// it listens (not necessarily once it has rejoined). Starting a
    /// member that runs does nothing.
    async fn restart(&self, member: usize);

    /// The member that leads right now, if the members agree there is one
    /// (none while a quorum is lost or an election runs).
    async fn leader(&self) -> Option<usize>;

    /// The member `session` is connected to, where the backend can tell
    /// (ZooKeeper: one connection per session); `None` where it cannot
    /// (etcd balances each request over the members).
    async fn connected_member(&self, session: &Session) -> Option<usize>;

    /// Every member up and serving, and one leader they all follow.
    async fn healthy(&self) -> bool;

    /// A fresh, unique root for one test.
    fn root(&self, test: &str) -> String {
        let id = uuid::Uuid::new_v4().simple().to_string();
        format!("/coord-cluster/{test}-{}", &id[..12])
    }
}

/// Longest a single cluster test may run before it is failed as hung.
pub const CLUSTER_TEST_DEADLINE: Duration = Duration::from_secs(150);

/// How long a cluster is given to elect a leader or to become healthy
/// again after a member comes back.
pub const RECOVERY_DEADLINE: Duration = Duration::from_secs(30);

/// Wait until the members agree on a leader, and return it.
///
/// # Errors
/// Panics when [`RECOVERY_DEADLINE`] passes without one.
///
/// # Cancel safety
/// Cancel safe: it only asks.
pub async fn await_leader(h: &dyn ClusterHarness) -> usize {
    let deadline = tokio::time::Instant::now() + RECOVERY_DEADLINE;
    loop {
        if let Some(leader) = h.leader().await {
            return leader;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{}: no leader within {RECOVERY_DEADLINE:?}",
            h.name()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Wait until every member is up and serving under one leader.
///
/// # Errors
/// Panics when [`RECOVERY_DEADLINE`] passes first.
///
/// # Cancel safety
/// Cancel safe: it only asks.
pub async fn await_healthy(h: &dyn ClusterHarness) {
    let deadline = tokio::time::Instant::now() + RECOVERY_DEADLINE;
    while !h.healthy().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{}: the cluster is not healthy within {RECOVERY_DEADLINE:?}",
            h.name()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Start every member that is down, then wait until the cluster is healthy:
/// what runs before each cluster test, so one test's failure does not
/// cascade into the next.
///
/// # Errors
/// Panics when a member cannot be started or the cluster does not become
/// healthy.
///
/// # Cancel safety
/// Dropped mid-way, some members may have been started.
pub async fn heal(h: &dyn ClusterHarness) {
    for member in 0..h.members() {
        h.restart(member).await;
    }
    await_healthy(h).await;
}

/// The lock every cluster test of this process holds while it runs: they
/// kill members of one shared cluster, so they run one at a time.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[doc(hidden)]
pub fn __run_cluster<F: Future<Output = ()>>(name: &str, fut: F) {
    let _one_at_a_time = serial();
    run_within(&format!("cluster test {name}"), CLUSTER_TEST_DEADLINE, fut);
}

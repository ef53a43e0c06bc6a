//! A standalone etcd restarted on the same data dir: `kill -9`, then started
//! again on the same ports (tests/common/mod.rs; each test runs its own
//! member, so `COORD_TEST_ETCD` is not used). Leases live in the data dir
//! (and a restarted member extends them all): a holder's session either
//! comes back with its hold, or is reported `Expired` on its client before
//! anyone else is granted the lock. Never two holders; tokens (revisions)
//! never go back.

mod common;

use std::time::Duration;

use common::EtcdServer;
use coord_conformance::server_restart::{self as restart, StandaloneServer};
use coord_core::Session;

#[async_trait::async_trait]
impl StandaloneServer for EtcdServer {
    fn name(&self) -> &'static str {
        "etcd"
    }
    async fn open(&self, session_timeout: Duration) -> Session {
        let options =
            coord_etcd::EtcdOptions::new([self.endpoint()]).with_session_timeout(session_timeout);
        coord_etcd::connect(options)
            .await
            .unwrap_or_else(|e| panic!("cannot open a session on {}: {e}", self.endpoint()))
    }
    fn kill(&mut self) {
        EtcdServer::kill(self)
    }
    async fn spawn(&mut self) {
        EtcdServer::spawn(self).await
    }
    async fn restart(&mut self) {
        EtcdServer::restart(self).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quick_restart_keeps_the_hold_or_expires_it_first() {
    restart::quick_restart_keeps_the_hold_or_expires_it_first(&mut EtcdServer::start().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_outage_expires_the_holder_before_the_waiter_is_granted() {
    restart::long_outage_expires_the_holder_before_the_waiter_is_granted(
        &mut EtcdServer::start().await,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_keep_growing_across_restarts() {
    restart::tokens_keep_growing_across_restarts(&mut EtcdServer::start().await).await;
}

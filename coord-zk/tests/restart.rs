//! A standalone ZooKeeper restarted on the same data dir: `kill -9`, then
//! started again on the same port (tests/common/server.rs; each test runs
//! its own server, so `COORD_TEST_ZK` is not used). Sessions live in the
//! server's snapshot and log: a holder's session either comes back with its
//! hold, or is reported `Expired` on its client before anyone else is
//! granted the lock. Never two holders; tokens (czxids) never go back.

mod common;

use std::time::Duration;

use common::server::ZkServer;
use coord_conformance::server_restart::{self as restart, StandaloneServer};
use coord_core::Session;

#[async_trait::async_trait]
impl StandaloneServer for ZkServer {
    fn name(&self) -> &'static str {
        "zk"
    }
    async fn open(&self, session_timeout: Duration) -> Session {
        let options = coord_zk::ZkOptions::new(&self.hosts()).with_session_timeout(session_timeout);
        coord_zk::connect(options.clone())
            .await
            .unwrap_or_else(|e| panic!("cannot open a session on {}: {e}", self.hosts()))
    }
    fn kill(&mut self) {
        ZkServer::kill(self)
    }
    async fn spawn(&mut self) {
        ZkServer::spawn(self).await
    }
    async fn restart(&mut self) {
        ZkServer::restart(self).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quick_restart_keeps_the_hold_or_expires_it_first() {
    restart::quick_restart_keeps_the_hold_or_expires_it_first(&mut ZkServer::start().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_outage_expires_the_holder_before_the_waiter_is_granted() {
    restart::long_outage_expires_the_holder_before_the_waiter_is_granted(
        &mut ZkServer::start().await,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_keep_growing_across_restarts() {
    restart::tokens_keep_growing_across_restarts(&mut ZkServer::start().await).await;
}

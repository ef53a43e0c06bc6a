//! A standalone ZooKeeper restarted on the same data dir: `kill -9`, then
//! started again on the same port (a `coord_conformance::server` process of
//! each test's own, so `COORD_TEST_ZK` is not used). Sessions live in the
//! server's snapshot and log: a holder's session either comes back with its
//! hold, or is reported `Expired` on its client before anyone else is
//! granted the lock. Never two holders; tokens (czxids) never go back.

use std::time::Duration;

use coord_conformance::server::{ServerProcess, TestServer, ZooKeeper};
use coord_conformance::server_restart::StandaloneServer;
use coord_core::{Client, ClientOptions, Session};

/// A ZooKeeper of the test's own, and how coord-zk opens sessions on it.
struct Zk(TestServer<ZooKeeper>);

#[async_trait::async_trait]
impl StandaloneServer for Zk {
    fn name(&self) -> &'static str {
        "zk"
    }
    async fn open(&self, session_timeout: Duration) -> Session {
        let hosts = self.0.address();
        let options = coord_zk::ZkOptions::new(&hosts).with_session_timeout(session_timeout);
        coord_zk::connect(options.clone())
            .await
            .unwrap_or_else(|e| panic!("cannot open a session on {hosts}: {e}"))
    }
    fn client(&self, session_timeout: Duration, options: ClientOptions) -> Client {
        let zk = coord_zk::ZkOptions::new(&self.0.address()).with_session_timeout(session_timeout);
        Client::start(move || coord_zk::connect(zk.clone()), options)
    }
    fn process(&mut self) -> &mut dyn ServerProcess {
        &mut self.0
    }
}

coord_conformance::server_restart_tests!(Zk(TestServer::start(ZooKeeper::new()).await));

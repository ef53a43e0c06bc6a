//! A standalone etcd restarted on the same data dir: `kill -9`, then started
//! again on the same ports (a `coord_conformance::server` process of each
//! test's own, so `COORD_TEST_ETCD` is not used). Leases live in the data
//! dir (and a restarted member extends them all): a holder's session either
//! comes back with its hold, or is reported `Expired` on its client before
//! anyone else is granted the lock. Never two holders; tokens (revisions)
//! never go back.

use std::time::Duration;

use coord_conformance::server::{Etcd, ServerProcess, TestServer};
use coord_conformance::server_restart::StandaloneServer;
use coord_core::{Client, ClientOptions, Session};

/// An etcd of the test's own, and how coord-etcd opens sessions on it.
struct EtcdMember(TestServer<Etcd>);

#[async_trait::async_trait]
impl StandaloneServer for EtcdMember {
    fn name(&self) -> &'static str {
        "etcd"
    }
    async fn open(&self, session_timeout: Duration) -> Session {
        let endpoint = self.0.address();
        let options =
            coord_etcd::EtcdOptions::new([endpoint.clone()]).with_session_timeout(session_timeout);
        coord_etcd::connect(options)
            .await
            .unwrap_or_else(|e| panic!("cannot open a session on {endpoint}: {e}"))
    }
    fn client(&self, session_timeout: Duration, options: ClientOptions) -> Client {
        let etcd =
            coord_etcd::EtcdOptions::new([self.0.address()]).with_session_timeout(session_timeout);
        Client::start(move || coord_etcd::connect(etcd.clone()), options)
    }
    fn process(&mut self) -> &mut dyn ServerProcess {
        &mut self.0
    }
}

coord_conformance::server_restart_tests!(EtcdMember(TestServer::start(Etcd).await));

//! The conformance suite on a real etcd: `COORD_TEST_ETCD` names it
//! (`http://127.0.0.1:2379`, or several, comma-separated); scripts/test-all
//! starts one and sets it. Without it every test fails: nothing is skipped.

use async_trait::async_trait;
use coord_conformance::Harness;
use coord_core::Session;
use coord_etcd::EtcdOptions;

struct EtcdHarness {
    endpoints: String,
}

impl EtcdHarness {
    fn from_env() -> Self {
        match std::env::var("COORD_TEST_ETCD") {
            Ok(endpoints) if !endpoints.trim().is_empty() => EtcdHarness { endpoints },
            _ => panic!(
                "COORD_TEST_ETCD is not set: the etcd conformance tests need a running etcd \
                 (run scripts/test-all, or start etcd and set COORD_TEST_ETCD=http://127.0.0.1:<port>)"
            ),
        }
    }

    fn options(&self) -> EtcdOptions {
        EtcdOptions::from_endpoint_list(&self.endpoints)
    }
}

#[async_trait]
impl Harness for EtcdHarness {
    fn name(&self) -> &'static str {
        "etcd"
    }

    async fn open(&self) -> Session {
        // One session per call, each on its own client (its own connection).
        match coord_etcd::connect(self.options()).await {
            Ok(s) => s,
            Err(e) => panic!(
                "cannot open an etcd session at COORD_TEST_ETCD={}: {e}",
                self.endpoints
            ),
        }
    }

    async fn expire(&self, session: &Session) {
        // What the server does when a lease runs out: revoke it (its keys go
        // with it). From a separate client, as another party would.
        let lease = coord_etcd::lease_id(&session.id())
            .unwrap_or_else(|| panic!("{} is not an etcd lease id", session.id()));
        let endpoints: Vec<String> = self.options().endpoints().to_vec();
        let mut client = etcd_client::Client::connect(endpoints, None)
            .await
            .unwrap_or_else(|e| panic!("cannot reach etcd at {}: {e}", self.endpoints));
        client
            .lease_revoke(lease)
            .await
            .unwrap_or_else(|e| panic!("revoking lease {lease:x}: {e}"));
    }
}

coord_conformance::conformance_tests!(EtcdHarness::from_env());

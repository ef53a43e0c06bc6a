//! The conformance suite against a real ZooKeeper (`COORD_TEST_ZK`).

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use coord_core::{PrimitiveSession, Session, SessionId};
use coord_zk::{SessionCredentials, ZkOptions};

struct ZkHarness {
    options: ZkOptions,
    /// Every session opened, by id: `expire` takes one over.
    credentials: Mutex<HashMap<SessionId, SessionCredentials>>,
}

impl ZkHarness {
    fn from_env() -> Self {
        ZkHarness {
            options: common::options_from_env(),
            credentials: Mutex::new(HashMap::new()),
        }
    }
}

#[async_trait::async_trait]
impl coord_conformance::Harness for ZkHarness {
    fn name(&self) -> &'static str {
        "zk"
    }

    async fn open(&self) -> Session {
        let session = common::connect(&self.options).await;
        self.credentials
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                PrimitiveSession::id(&session),
                session.session_credentials(),
            );
        Session::new(Arc::new(session))
    }

    async fn expire(&self, session: &Session) {
        let credentials = self
            .credentials
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&session.id())
            .cloned()
            .unwrap_or_else(|| panic!("session {} was not opened by this harness", session.id()));
        coord_zk::testing::expire(&self.options, &credentials)
            .await
            .unwrap_or_else(|e| panic!("could not expire session {}: {e}", session.id()));
    }
}

coord_conformance::conformance_tests!(ZkHarness::from_env());

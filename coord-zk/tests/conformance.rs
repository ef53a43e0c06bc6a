//! The conformance suite against a real ZooKeeper (`COORD_TEST_ZK`).

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coord_conformance::fault::{Fault, FaultProxy};
use coord_core::{PrimitiveSession, Session, SessionId};
use coord_zk::{SessionCredentials, ZkOptions, ZkSession};

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

    /// Wrap `session`, remembering its credentials for `expire`.
    fn register(&self, session: ZkSession) -> Session {
        self.credentials
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                PrimitiveSession::id(&session),
                session.session_credentials(),
            );
        Session::new(Arc::new(session))
    }
}

#[async_trait::async_trait]
impl coord_conformance::Harness for ZkHarness {
    fn name(&self) -> &'static str {
        "zk"
    }

    async fn open(&self) -> Session {
        let session = common::connect(&self.options).await;
        self.register(session)
    }

    /// A session through its own [`FaultProxy`] in front of the server;
    /// `expire` still reaches it directly.
    async fn open_faulty(&self, session_timeout: Duration) -> (Session, Box<dyn Fault>) {
        let proxy = FaultProxy::start(self.options.hosts()).await;
        let options = ZkOptions::new(&proxy.addr().to_string())
            .expect("the proxy's connect string")
            .session_timeout(session_timeout);
        let session = common::connect(&options).await;
        (self.register(session), Box::new(proxy))
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

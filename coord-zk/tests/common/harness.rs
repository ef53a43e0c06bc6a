//! The conformance harness, shared by tests/conformance.rs (the plaintext
//! server) and tests/conformance_secure.rs (TLS with a client certificate,
//! and digest credentials).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coord_conformance::fault::{Fault, FaultProxy};
use coord_core::backend::PrimitiveSession;
use coord_core::{Client, ClientOptions, Session, SessionId};
use coord_zk::{SessionCredentials, ZkOptions, ZkSession};

/// A conformance harness over the ZooKeeper that `make` builds options for
/// (`make(connect string)`: every session, the fault proxy's included, gets
/// the same settings: TLS, credentials, session timeout).
pub struct ZkHarness {
    name: &'static str,
    make: fn(&str) -> ZkOptions,
    options: ZkOptions,
    /// Every session opened, by id: `expire` takes one over.
    credentials: Arc<Mutex<HashMap<SessionId, SessionCredentials>>>,
}

impl ZkHarness {
    /// A harness named `name` on the server at `connect`.
    pub fn new(name: &'static str, connect: &str, make: fn(&str) -> ZkOptions) -> Self {
        ZkHarness {
            name,
            make,
            options: make(connect),
            credentials: Arc::default(),
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
        self.name
    }

    async fn open(&self) -> Session {
        let session = super::connect(&self.options).await;
        self.register(session)
    }

    /// A session through its own [`FaultProxy`] in front of the server
    /// (TLS passes through it); `expire` still reaches it directly.
    async fn open_faulty(&self, session_timeout: Duration) -> (Session, Box<dyn Fault>) {
        let proxy = FaultProxy::start(self.options.hosts()).await;
        let options = (self.make)(&proxy.addr().to_string()).with_session_timeout(session_timeout);
        let session = super::connect(&options).await;
        (self.register(session), Box::new(proxy))
    }

    /// Every session through one [`FaultProxy`] (kept alive by the
    /// client's opener), each registered for `expire`.
    async fn faulty_client(
        &self,
        session_timeout: Duration,
        options: ClientOptions,
    ) -> (Client, Box<dyn Fault>) {
        let proxy = Arc::new(FaultProxy::start(self.options.hosts()).await);
        let zk = (self.make)(&proxy.addr().to_string()).with_session_timeout(session_timeout);
        let (credentials, kept) = (self.credentials.clone(), proxy.clone());
        let client = Client::start(
            move || {
                let (zk, credentials, _proxy) = (zk.clone(), credentials.clone(), kept.clone());
                async move {
                    let session = ZkSession::connect(zk).await?;
                    credentials
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(
                            PrimitiveSession::id(&session),
                            session.session_credentials(),
                        );
                    Ok(Session::new(Arc::new(session)))
                }
            },
            options,
        );
        (client, Box::new(proxy))
    }

    /// Take the session over with the same options (credentials and TLS)
    /// and close it: see [`coord_zk::testing::expire`].
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

//! The conformance harness on etcd, for the plain server
//! (tests/conformance.rs) and the secured one (tests/conformance_secure.rs).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use coord_conformance::fault::{Fault, FaultProxy};
use coord_conformance::Harness;
use coord_core::{Client, ClientOptions, Session};
use coord_etcd::EtcdOptions;

use super::secure::SecureEtcd;

pub struct EtcdHarness {
    endpoints: String,
    /// Where the endpoints came from, for messages.
    var: &'static str,
    /// The secured server: mutual TLS and the `coord` user.
    secure: Option<SecureEtcd>,
}

impl EtcdHarness {
    /// The plain test etcd: `COORD_TEST_ETCD` (`http://127.0.0.1:2379`, or
    /// several, comma-separated).
    pub fn from_env() -> Self {
        match std::env::var("COORD_TEST_ETCD") {
            Ok(endpoints) if !endpoints.trim().is_empty() => EtcdHarness {
                endpoints,
                var: "COORD_TEST_ETCD",
                secure: None,
            },
            _ => panic!(
                "COORD_TEST_ETCD is not set: the etcd conformance tests need a running etcd \
                 (run scripts/test-all, or start etcd and set COORD_TEST_ETCD=http://127.0.0.1:<port>)"
            ),
        }
    }

    /// The secured test etcd (see [`SecureEtcd`]): every session over
    /// mutual TLS, authenticated as the `coord` user.
    pub fn secure_from_env() -> Self {
        let secure = SecureEtcd::from_env();
        EtcdHarness {
            endpoints: secure.url.clone(),
            var: "COORD_TEST_ETCD_SECURE",
            secure: Some(secure),
        }
    }

    /// TLS and credentials, when the server is the secured one.
    fn secured(&self, options: EtcdOptions) -> EtcdOptions {
        match &self.secure {
            Some(s) => options
                .with_tls(s.tls())
                .with_user(s.user.clone(), s.password.clone()),
            None => options,
        }
    }

    fn options(&self) -> EtcdOptions {
        self.secured(EtcdOptions::from_endpoint_list(&self.endpoints))
    }

    /// Options for a session through `proxy`, asking `session_timeout`
    /// (whole seconds, at least 2).
    fn proxied(&self, proxy: &FaultProxy, session_timeout: Duration) -> EtcdOptions {
        let ttl_secs =
            (session_timeout.as_secs() + u64::from(session_timeout.subsec_nanos() > 0)).max(2);
        let timeout = faulty_request_timeout(ttl_secs);
        self.secured(
            EtcdOptions::new([format!("http://{}", proxy.addr())])
                .with_session_timeout(Duration::from_secs(ttl_secs))
                .with_request_timeout(timeout)
                .with_connect_timeout(timeout),
        )
    }

    /// The first endpoint as `host:port`, for a proxy to dial.
    fn first_host_port(&self) -> String {
        let options = self.options();
        let first = options
            .endpoints()
            .first()
            .unwrap_or_else(|| panic!("{}={} names no endpoint", self.var, self.endpoints));
        first
            .trim_start_matches("http://")
            .trim_start_matches("https://")
            .trim_end_matches('/')
            .to_owned()
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
                "cannot open an etcd session at {}={}: {e}",
                self.var, self.endpoints
            ),
        }
    }

    async fn expire(&self, session: &Session) {
        // What the server does when a lease runs out: revoke it (its keys go
        // with it). From a separate client, as another party would.
        let lease = coord_etcd::lease_id(&session.id())
            .unwrap_or_else(|| panic!("{} is not an etcd lease id", session.id()));
        let mut client = match &self.secure {
            Some(s) => s.raw_client(&s.user, &s.password).await,
            None => {
                let endpoints: Vec<String> = self.options().endpoints().to_vec();
                etcd_client::Client::connect(endpoints, None)
                    .await
                    .unwrap_or_else(|e| panic!("cannot reach etcd at {}: {e}", self.endpoints))
            }
        };
        client
            .lease_revoke(lease)
            .await
            .unwrap_or_else(|e| panic!("revoking lease {lease:x}: {e}"));
    }

    /// Every session on its own client through one [`FaultProxy`], as
    /// [`Harness::open_faulty`] opens them.
    async fn faulty_client(
        &self,
        session_timeout: Duration,
        options: ClientOptions,
    ) -> (Client, Box<dyn Fault>) {
        let proxy = Arc::new(FaultProxy::start(&self.first_host_port()).await);
        let etcd = self.proxied(&proxy, session_timeout);
        let kept = proxy.clone();
        let client = Client::start(
            move || {
                let (etcd, _proxy) = (etcd.clone(), kept.clone());
                async move { coord_etcd::connect(etcd).await }
            },
            options,
        );
        (client, Box::new(proxy))
    }

    /// One session on its own client through a [`FaultProxy`] in front of
    /// the first endpoint (only that session's connections cross it; TLS
    /// passes through it, and the test certificates name 127.0.0.1). etcd
    /// counts whole seconds, with a minimum of 2 s here.
    async fn open_faulty(&self, session_timeout: Duration) -> (Session, Box<dyn Fault>) {
        let proxy = FaultProxy::start(&self.first_host_port()).await;
        let options = self.proxied(&proxy, session_timeout);
        match coord_etcd::connect(options).await {
            Ok(session) => (session, Box::new(proxy)),
            Err(e) => panic!(
                "cannot open an etcd session through a fault proxy to {}: {e}",
                self.first_host_port()
            ),
        }
    }
}

/// The request timeout of a session behind a fault: a third of the TTL
/// (at least 500 ms, at most 3 s), so a request or keep-alive stalled by a
/// partition fails, and the next is tried, well before the lease deadline
/// (90 % of the TTL after the last answered keep-alive was sent).
fn faulty_request_timeout(ttl_secs: u64) -> Duration {
    (Duration::from_secs(ttl_secs) / 3).clamp(Duration::from_millis(500), Duration::from_secs(3))
}

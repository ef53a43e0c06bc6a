//! The Redis test harness, shared by this crate's test files.

use std::time::Duration;

use coord_conformance::fault::{Fault, FaultProxy};
use coord_core::Session;
use coord_redis::RedisOptions;

/// Where the test server is: `COORD_TEST_REDIS` (set by scripts/test-all).
pub fn redis_url() -> String {
    match std::env::var("COORD_TEST_REDIS") {
        Ok(url) if !url.is_empty() => url,
        _ => panic!(
            "COORD_TEST_REDIS is not set: these tests need a Redis server. Run \
             scripts/test-all, or start one and set COORD_TEST_REDIS=redis://127.0.0.1:<port>"
        ),
    }
}

/// The `host:port` a `redis://` URL names, and the URL with it replaced by
/// `addr` (user info, database and query kept).
pub fn via(url: &str, addr: &str) -> (String, String) {
    let start = url.find("://").map_or(0, |i| i + 3);
    let end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| start + i);
    let authority = &url[start..end];
    let host_start = authority.rfind('@').map_or(start, |at| start + at + 1);
    let host = &url[host_start..end];
    let host = if host.contains(':') {
        host.to_owned()
    } else {
        format!("{host}:6379")
    };
    (host, format!("{}{addr}{}", &url[..host_start], &url[end..]))
}

/// A fault proxy in front of the test server, and options whose every
/// connection (commands and pub/sub) goes through it.
pub async fn behind_proxy(options: &RedisOptions) -> (FaultProxy, RedisOptions) {
    let (upstream, _) = via(options.url(), "");
    let proxy = FaultProxy::start(&upstream).await;
    let (_, url) = via(options.url(), &proxy.addr().to_string());
    let proxied = RedisOptions::new(url)
        .namespace(namespace_of(options))
        .session_timeout(options.get_session_timeout())
        .request_timeout(options.effective_request_timeout());
    (proxy, proxied)
}

/// The namespace of `options` (`{ns}:` without the braces and colon).
pub fn namespace_of(options: &RedisOptions) -> String {
    options
        .key_prefix()
        .trim_start_matches('{')
        .trim_end_matches(':')
        .trim_end_matches('}')
        .to_owned()
}

/// Sessions on one unique namespace of the test server.
pub struct RedisHarness {
    /// Settings every session of this harness uses.
    pub options: RedisOptions,
}

impl RedisHarness {
    /// A harness on `COORD_TEST_REDIS`, with a namespace of its own.
    pub fn from_env() -> Self {
        let id = uuid::Uuid::new_v4().simple().to_string();
        RedisHarness {
            options: RedisOptions::new(redis_url()).namespace(format!("coord-test-{}", &id[..12])),
        }
    }

    /// Options for a session of this harness.
    pub fn options(&self) -> RedisOptions {
        self.options.clone()
    }
}

#[async_trait::async_trait]
impl coord_conformance::Harness for RedisHarness {
    fn name(&self) -> &'static str {
        "redis"
    }

    async fn open(&self) -> Session {
        match coord_redis::connect(self.options()).await {
            Ok(session) => session,
            Err(e) => panic!(
                "cannot open a Redis session with {:?} (COORD_TEST_REDIS): {e}",
                self.options
            ),
        }
    }

    /// A session whose command and pub/sub connections both go through a
    /// [`FaultProxy`] of its own, with `session_timeout` as its TTL.
    async fn open_faulty(&self, session_timeout: Duration) -> (Session, Box<dyn Fault>) {
        let (proxy, options) = behind_proxy(&self.options().session_timeout(session_timeout)).await;
        match coord_redis::connect(options.clone()).await {
            Ok(session) => (session, Box::new(proxy)),
            Err(e) => {
                panic!("cannot open a Redis session through the fault proxy with {options:?}: {e}")
            }
        }
    }

    async fn expire(&self, session: &Session) {
        if let Err(e) = coord_redis::testing::expire(&self.options, &session.id()).await {
            panic!("cannot expire Redis session {}: {e}", session.id());
        }
    }
}

//! The Redis test harness, shared by this crate's test files.

// Each test file uses its own part of it.
#![allow(dead_code)]

pub mod acl;

use std::time::Duration;

use coord_conformance::fault::{Fault, FaultProxy};
use coord_core::Session;
use coord_core::TlsOptions;
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

/// A variable the tests need, or a panic saying what starts it.
pub fn env(name: &str, what: &str) -> String {
    match std::env::var(name) {
        Ok(value) if !value.is_empty() => value,
        _ => panic!(
            "{name} is not set: these tests need {what}. Run scripts/test-all, or start \
             scripts/servers/redis-secure.sh (start_redis_secure) and export its variables"
        ),
    }
}

/// The secured test server (scripts/servers/redis-secure.sh): its
/// `rediss://127.0.0.1:<port>` URL (no credentials), from
/// `COORD_TEST_REDIS_SECURE`.
pub fn secure_url() -> String {
    env("COORD_TEST_REDIS_SECURE", "the TLS-only Redis server")
}

/// A file of the test certificates (`COORD_TEST_CERTS`, made by
/// `make_test_certs` in scripts/lib.sh).
pub fn cert(file: &str) -> std::path::PathBuf {
    std::path::Path::new(&env("COORD_TEST_CERTS", "the test certificates")).join(file)
}

/// TLS as the secured server wants it: its CA, and the client certificate
/// it trusts (mutual TLS).
pub fn mutual_tls() -> TlsOptions {
    TlsOptions::new()
        .with_ca(cert("ca.pem"))
        .with_identity(cert("client.pem"), cert("client-key.pem"))
}

/// `scheme://user:password@host:port` for the server `url` names.
pub fn with_user(url: &str, user: &str, password: &str) -> String {
    let (host, _) = via(url, "");
    let scheme = &url[..url.find("://").map_or(0, |i| i + 3)];
    format!("{scheme}{user}:{password}@{host}")
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
    let mut proxied = RedisOptions::new(url)
        .with_namespace(namespace_of(options))
        .with_session_timeout(options.session_timeout())
        .with_request_timeout(options.request_timeout());
    // TLS passes through the proxy (the certificate names 127.0.0.1).
    if let Some(tls) = options.tls() {
        proxied = proxied.with_tls(tls.clone());
    }
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
    /// The harness's name in the suite's messages.
    name: &'static str,
}

/// A namespace of its own for one harness or test.
pub fn unique_namespace() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("coord-test-{}", &id[..12])
}

impl RedisHarness {
    /// A harness on `COORD_TEST_REDIS`, with a namespace of its own.
    pub fn from_env() -> Self {
        RedisHarness {
            options: RedisOptions::new(redis_url()).with_namespace(unique_namespace()),
            name: "redis",
        }
    }

    /// A harness on the secured server (`COORD_TEST_REDIS_SECURE`):
    /// mutual TLS, as the restricted ACL user `COORD_TEST_REDIS_SECURE_USER`
    /// (no @admin, no @dangerous), with a namespace of its own.
    pub fn secure_from_env() -> Self {
        let url = with_user(
            &secure_url(),
            &env("COORD_TEST_REDIS_SECURE_USER", "the secured server's user"),
            &env(
                "COORD_TEST_REDIS_SECURE_PASSWORD",
                "the secured server's password",
            ),
        );
        RedisHarness {
            options: RedisOptions::new(url)
                .with_tls(mutual_tls())
                .with_namespace(unique_namespace()),
            name: "redis-secure",
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
        self.name
    }

    /// Redis has no watch over a subtree (keyspace notifications are
    /// best-effort): coord's caches run on one-shot watches there.
    fn tree_watches(&self) -> bool {
        false
    }

    async fn open(&self) -> Session {
        match coord_redis::connect(self.options()).await {
            Ok(session) => session,
            Err(e) => panic!(
                "cannot open a Redis session with {:?} (COORD_TEST_REDIS[_SECURE]): {e}",
                self.options
            ),
        }
    }

    /// A session whose command and pub/sub connections both go through a
    /// [`FaultProxy`] of its own, with `session_timeout` as its TTL.
    async fn open_faulty(&self, session_timeout: Duration) -> (Session, Box<dyn Fault>) {
        let (proxy, options) =
            behind_proxy(&self.options().with_session_timeout(session_timeout)).await;
        match coord_redis::connect(options.clone()).await {
            Ok(session) => (session, Box::new(proxy)),
            Err(e) => {
                panic!("cannot open a Redis session through the fault proxy with {options:?}: {e}")
            }
        }
    }

    /// Every session through one [`FaultProxy`], as `open_faulty`'s.
    async fn faulty_client(
        &self,
        session_timeout: Duration,
        options: coord_core::ClientOptions,
    ) -> (coord_core::Client, Box<dyn Fault>) {
        let (proxy, redis) =
            behind_proxy(&self.options().with_session_timeout(session_timeout)).await;
        let proxy = std::sync::Arc::new(proxy);
        let kept = proxy.clone();
        let client = coord_core::Client::start(
            move || {
                let (redis, _proxy) = (redis.clone(), kept.clone());
                async move { coord_redis::connect(redis).await }
            },
            options,
        );
        (client, Box::new(proxy))
    }

    async fn expire(&self, session: &Session) {
        if let Err(e) = coord_redis::testing::expire(&self.options, &session.id()).await {
            panic!("cannot expire Redis session {}: {e}", session.id());
        }
    }
}

//! What coord-pg's test binaries share: the servers' URLs from the
//! environment (scripts/test-all starts them; a missing one fails the
//! test, never skips it), and the conformance harness, plain or secured.

#![allow(dead_code)]

use std::time::Duration;

use coord_conformance::fault::{Fault, FaultProxy};
use coord_core::{Session, TlsOptions};
use coord_pg::PgOptions;

/// The value of `var`, or a panic that says how to get it.
pub fn env(var: &str) -> String {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => v,
        _ => panic!(
            "{var} is not set: these tests need PostgreSQL. Run scripts/test-all, or \
             start the servers of scripts/servers/pg*.sh and set {var}"
        ),
    }
}

/// The plain server (scripts/servers/pg.sh), as the role that owns the
/// database.
pub fn pg_url() -> String {
    env("COORD_TEST_PG")
}

/// A schema name no other test uses.
pub fn fresh_schema(tag: &str) -> String {
    format!(
        "t_{tag}_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    )
}

/// A plain connection of the database's owner, for reading and changing
/// what coord made behind its back.
pub async fn admin() -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(&pg_url(), tokio_postgres::NoTls)
        .await
        .expect("admin connection");
    tokio::spawn(conn);
    client
}

/// The TLS settings for the secured server: the test CA, and the client
/// certificate its `pg_hba.conf` asks for.
pub fn secure_tls() -> TlsOptions {
    let certs = env("COORD_TEST_CERTS");
    TlsOptions::new()
        .with_ca(format!("{certs}/ca.pem"))
        .with_identity(
            format!("{certs}/client.pem"),
            format!("{certs}/client-key.pem"),
        )
}

/// `url` with its `host:port` replaced by `addr`, and the `host:port` it had.
pub fn via(url: &str, addr: &str) -> (String, String) {
    let at = url
        .rfind('@')
        .map_or(url.find("://").map_or(0, |i| i + 3), |i| i + 1);
    let end = url[at..].find('/').map_or(url.len(), |i| at + i);
    (
        url[at..end].to_owned(),
        format!("{}{addr}{}", &url[..at], &url[end..]),
    )
}

/// The conformance harness: sessions on one server, plain or with TLS.
pub struct PgHarness {
    url: String,
    tls: Option<TlsOptions>,
}

impl PgHarness {
    /// On the plain server of `COORD_TEST_PG`.
    pub fn plain_from_env() -> Self {
        PgHarness {
            url: pg_url(),
            tls: None,
        }
    }

    /// On the secured server of `COORD_TEST_PG_SECURE`: TLS only, with a
    /// client certificate, and a password.
    pub fn secure_from_env() -> Self {
        PgHarness {
            url: env("COORD_TEST_PG_SECURE"),
            tls: Some(secure_tls()),
        }
    }

    /// Options for `url` (this server's, or a proxy's in front of it).
    pub fn options(&self, url: String) -> PgOptions {
        let o = PgOptions::new(url);
        match &self.tls {
            Some(tls) => o.with_tls(tls.clone()),
            None => o,
        }
    }
}

#[async_trait::async_trait]
impl coord_conformance::Harness for PgHarness {
    fn name(&self) -> &'static str {
        if self.tls.is_some() {
            "pg-secure"
        } else {
            "pg"
        }
    }

    async fn open(&self) -> Session {
        coord_pg::connect(self.options(self.url.clone()))
            .await
            .unwrap_or_else(|e| panic!("cannot open a PostgreSQL session: {e}"))
    }

    async fn expire(&self, session: &Session) {
        coord_pg::testing::expire(&self.options(self.url.clone()), &session.id())
            .await
            .unwrap_or_else(|e| panic!("cannot expire {:?}: {e}", session.id()));
    }

    async fn open_faulty(&self, session_timeout: Duration) -> (Session, Box<dyn Fault>) {
        let (upstream, _) = via(&self.url, "");
        let proxy = FaultProxy::start(&upstream).await;
        let (_, url) = via(&self.url, &proxy.addr().to_string());
        let session = coord_pg::connect(self.options(url).with_session_timeout(session_timeout))
            .await
            .unwrap_or_else(|e| panic!("cannot open a PostgreSQL session through the proxy: {e}"));
        (session, Box::new(proxy))
    }

    async fn faulty_client(
        &self,
        session_timeout: Duration,
        options: coord_core::ClientOptions,
    ) -> (coord_core::Client, Box<dyn Fault>) {
        let (upstream, _) = via(&self.url, "");
        let proxy = std::sync::Arc::new(FaultProxy::start(&upstream).await);
        let (_, url) = via(&self.url, &proxy.addr().to_string());
        let kept = proxy.clone();
        let pg = self.options(url).with_session_timeout(session_timeout);
        let client = coord_core::Client::start(
            move || {
                let (pg, _proxy) = (pg.clone(), kept.clone());
                async move { coord_pg::connect(pg).await }
            },
            options,
        );
        (client, Box::new(proxy))
    }
}

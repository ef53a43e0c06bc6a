//! The whole conformance suite against the PostgreSQL server at
//! `COORD_TEST_PG` (scripts/servers/pg.sh starts one). Without a reachable
//! server every test fails; none is skipped.

use std::time::Duration;

use coord_conformance::fault::{Fault, FaultProxy};
use coord_core::Session;
use coord_pg::PgOptions;

fn pg_url() -> String {
    match std::env::var("COORD_TEST_PG") {
        Ok(url) if !url.is_empty() => url,
        _ => panic!(
            "COORD_TEST_PG is not set: these tests need a PostgreSQL server. Run \
             scripts/test-all, or start one (scripts/servers/pg.sh) and set COORD_TEST_PG"
        ),
    }
}

/// `url` with its `host:port` replaced by `addr`, and the `host:port` it had.
fn via(url: &str, addr: &str) -> (String, String) {
    let at = url
        .rfind('@')
        .map_or(url.find("://").map_or(0, |i| i + 3), |i| i + 1);
    let end = url[at..].find('/').map_or(url.len(), |i| at + i);
    (
        url[at..end].to_owned(),
        format!("{}{addr}{}", &url[..at], &url[end..]),
    )
}

struct PgHarness;

#[async_trait::async_trait]
impl coord_conformance::Harness for PgHarness {
    fn name(&self) -> &'static str {
        "pg"
    }

    async fn open(&self) -> Session {
        coord_pg::connect(PgOptions::new(pg_url()))
            .await
            .unwrap_or_else(|e| panic!("cannot open a PostgreSQL session: {e}"))
    }

    async fn expire(&self, session: &Session) {
        coord_pg::testing::expire(&PgOptions::new(pg_url()), &session.id())
            .await
            .unwrap_or_else(|e| panic!("cannot expire {:?}: {e}", session.id()));
    }

    async fn open_faulty(&self, session_timeout: Duration) -> (Session, Box<dyn Fault>) {
        let (upstream, _) = via(&pg_url(), "");
        let proxy = FaultProxy::start(&upstream).await;
        let (_, url) = via(&pg_url(), &proxy.addr().to_string());
        let session = coord_pg::connect(PgOptions::new(url).with_session_timeout(session_timeout))
            .await
            .unwrap_or_else(|e| panic!("cannot open a PostgreSQL session through the proxy: {e}"));
        (session, Box::new(proxy))
    }

    async fn faulty_client(
        &self,
        session_timeout: Duration,
        options: coord_core::ClientOptions,
    ) -> (coord_core::Client, Box<dyn Fault>) {
        let (upstream, _) = via(&pg_url(), "");
        let proxy = std::sync::Arc::new(FaultProxy::start(&upstream).await);
        let (_, url) = via(&pg_url(), &proxy.addr().to_string());
        let kept = proxy.clone();
        let client = coord_core::Client::start(
            move || {
                let (url, _proxy) = (url.clone(), kept.clone());
                async move {
                    coord_pg::connect(PgOptions::new(url).with_session_timeout(session_timeout))
                        .await
                }
            },
            options,
        );
        (client, Box::new(proxy))
    }
}

coord_conformance::conformance_tests!(PgHarness);

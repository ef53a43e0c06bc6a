//! The Redis test harness, shared by this crate's test files.

use coord_core::Session;
use coord_redis::Options;

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

/// Sessions on one unique namespace of the test server.
pub struct RedisHarness {
    /// Settings every session of this harness uses.
    pub options: Options,
}

impl RedisHarness {
    /// A harness on `COORD_TEST_REDIS`, with a namespace of its own.
    pub fn from_env() -> Self {
        let id = uuid::Uuid::new_v4().simple().to_string();
        RedisHarness {
            options: Options::new(redis_url()).namespace(format!("coord-test-{}", &id[..12])),
        }
    }

    /// Options for a session of this harness.
    pub fn options(&self) -> Options {
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
                "cannot open a Redis session at {} (COORD_TEST_REDIS): {e}",
                self.options.url()
            ),
        }
    }

    async fn expire(&self, session: &Session) {
        if let Err(e) = coord_redis::testing::expire(&self.options, &session.id()).await {
            panic!("cannot expire Redis session {}: {e}", session.id());
        }
    }
}

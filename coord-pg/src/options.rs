//! How to reach the server: [`PgOptions`].

use std::time::Duration;

/// Where the server is and how long a session lives without heartbeats.
#[derive(Clone)]
pub struct PgOptions {
    pub(crate) url: String,
    pub(crate) session_timeout: Duration,
}

impl PgOptions {
    /// Options for `url` (`postgres://user:password@host:port/database`),
    /// with a session timeout of 10 s.
    pub fn new(url: impl Into<String>) -> Self {
        PgOptions {
            url: url.into(),
            session_timeout: Duration::from_secs(10),
        }
    }

    /// The session timeout: the server ends a session this long after its
    /// last heartbeat, by its own clock.
    pub fn with_session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }
}

impl std::fmt::Debug for PgOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgOptions")
            .field("url", &coord_core::backend::redact_url(&self.url))
            .field("session_timeout", &self.session_timeout)
            .finish()
    }
}

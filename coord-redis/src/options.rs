//! Connection settings: [`Options`].

use std::time::Duration;

use coord_core::{Error, Result};

/// The key namespace used when none is given.
pub const DEFAULT_NAMESPACE: &str = "coord";

/// The session TTL used when none is given.
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(10);

/// The shortest session TTL accepted: heartbeats go every third of it.
pub const MIN_SESSION_TTL: Duration = Duration::from_millis(300);

/// What [`crate::connect`] does about the server's `notify-keyspace-events`
/// setting, which must include `K` (keyspace events) and `x` (expired keys,
/// or `A`) so a crashed client's session key expiring reaps its ephemeral
/// nodes at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum KeyspaceEvents {
    /// Check the setting; add `K` and `x` with `CONFIG SET` if missing
    /// (fails with [`crate::KeyspaceEventsError`] if `CONFIG` is refused).
    #[default]
    Enable,
    /// Check the setting, never change it: fail with
    /// [`crate::KeyspaceEventsError`] if it lacks `K` or `x`.
    Require,
    /// Do not look (for servers where `CONFIG` is renamed away and the
    /// setting is known to be right). Without the notices, a dead session's
    /// nodes are still reaped by the next read that meets them and by the
    /// periodic sweep, only later.
    Assume,
}

/// How to reach a Redis server and lay coord out on it.
///
/// ```
/// use std::time::Duration;
/// let options = coord_redis::Options::new("redis://user:secret@127.0.0.1:6379/2")
///     .namespace("billing")
///     .session_ttl(Duration::from_secs(5));
/// assert_eq!(options.key_prefix(), "{billing}:");
/// ```
#[derive(Debug, Clone)]
pub struct Options {
    pub(crate) url: String,
    pub(crate) namespace: String,
    pub(crate) session_ttl: Duration,
    pub(crate) keyspace_events: KeyspaceEvents,
}

impl Options {
    /// Settings for the server at `url`:
    /// `redis://[user:password@]host:port[/db]` (or `rediss://` where the
    /// `redis` crate was built with TLS).
    pub fn new(url: impl Into<String>) -> Self {
        Options {
            url: url.into(),
            namespace: DEFAULT_NAMESPACE.to_owned(),
            session_ttl: DEFAULT_SESSION_TTL,
            keyspace_events: KeyspaceEvents::default(),
        }
    }

    /// Keep every key of this store under `{namespace}:` (default `coord`).
    /// Stores with different namespaces on one server never see each
    /// other. Letters, digits, `_`, `-` and `.` only.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// How long a session outlives its last heartbeat (default 10 s);
    /// heartbeats go every third of it. At least [`MIN_SESSION_TTL`].
    pub fn session_ttl(mut self, ttl: Duration) -> Self {
        self.session_ttl = ttl;
        self
    }

    /// What to do about `notify-keyspace-events` (default
    /// [`KeyspaceEvents::Enable`]).
    pub fn keyspace_events(mut self, mode: KeyspaceEvents) -> Self {
        self.keyspace_events = mode;
        self
    }

    /// The prefix of every key of this store: `{namespace}:` (a hash tag,
    /// so the whole store maps to one slot).
    pub fn key_prefix(&self) -> String {
        format!("{{{}}}:", self.namespace)
    }

    /// The server's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The session TTL.
    pub fn ttl(&self) -> Duration {
        self.session_ttl
    }

    pub(crate) fn validate(&self) -> Result<()> {
        let ns_ok = !self.namespace.is_empty()
            && self.namespace.len() <= 128
            && self
                .namespace
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !ns_ok {
            return Err(Error::InvalidArgument(format!(
                "redis namespace {:?}: use 1 to 128 letters, digits, '_', '-' or '.'",
                self.namespace
            )));
        }
        if self.session_ttl < MIN_SESSION_TTL {
            return Err(Error::InvalidArgument(format!(
                "redis session TTL {:?} is below the minimum {MIN_SESSION_TTL:?}",
                self.session_ttl
            )));
        }
        Ok(())
    }
}

impl From<&str> for Options {
    fn from(url: &str) -> Self {
        Options::new(url)
    }
}

impl From<String> for Options {
    fn from(url: String) -> Self {
        Options::new(url)
    }
}

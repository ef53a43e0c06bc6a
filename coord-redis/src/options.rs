//! Connection settings: [`RedisOptions`].

use std::time::Duration;

use coord_core::backend::redact_url as redact;
use coord_core::{limits, Error, Result, TlsOptions};

/// The key namespace used when none is given.
pub const DEFAULT_NAMESPACE: &str = "coord";

/// The session timeout used when none is given.
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// The shortest session timeout accepted: heartbeats go every third of it.
pub const MIN_SESSION_TIMEOUT: Duration = Duration::from_millis(300);

/// The longest session timeout accepted: coord's limit for every backend,
/// [`coord_core::limits::MAX_SESSION_TIMEOUT`].
pub const MAX_SESSION_TIMEOUT: Duration = limits::MAX_SESSION_TIMEOUT;

/// The shortest request timeout [`RedisOptions::with_request_timeout`] derives
/// from the session timeout when none is given.
const MIN_DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(1);

/// The longest request timeout [`RedisOptions::with_request_timeout`] derives
/// from the session timeout when none is given: a request that takes
/// longer than this is lost, whatever the session timeout.
const MAX_DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// What [`crate::connect`] does about the server's `notify-keyspace-events`
/// setting, which must include `K` (keyspace events) and `x` (expired keys,
/// or `A`) so a crashed client's session key expiring reaps its ephemeral
/// nodes at once.
///
/// `CONFIG` is never required: where the user may not run `CONFIG GET` (an
/// ACL user without admin rights, the norm on managed Redis, or `CONFIG`
/// renamed away), `Enable` and `Require` check by watching a scratch key of
/// the namespace expire and waiting up to 1 s for its keyspace notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum KeyspaceEvents {
    /// Check the setting; add `K` and `x` with `CONFIG SET` if missing
    /// (fails with [`crate::KeyspaceEventsError`] if they are missing and
    /// `CONFIG SET` is refused, or if `CONFIG` is refused and no notice
    /// arrives).
    #[default]
    Enable,
    /// Check the setting, never change it: fail with
    /// [`crate::KeyspaceEventsError`] if it lacks `K` or `x`.
    Require,
    /// Do not look (`keyspace_events=assume` in a coord URL). Without the
    /// notices, a dead session's nodes are still reaped by the next read
    /// that meets them and by the periodic sweep, only later.
    Assume,
}

/// How to reach a Redis server and lay coord out on it.
///
/// ```
/// use std::time::Duration;
/// let options = coord_redis::RedisOptions::new("redis://user:secret@127.0.0.1:6379/2")
///     .with_namespace("billing")
///     .with_session_timeout(Duration::from_secs(5));
/// assert_eq!(options.key_prefix(), "{billing}:");
/// ```
///
/// Its `Debug` shows the URL with the password replaced by `***`.
#[derive(Clone)]
pub struct RedisOptions {
    pub(crate) url: String,
    pub(crate) namespace: String,
    pub(crate) session_timeout: Duration,
    pub(crate) request_timeout: Option<Duration>,
    pub(crate) keyspace_events: KeyspaceEvents,
    pub(crate) tls: Option<TlsOptions>,
}

impl std::fmt::Debug for RedisOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisOptions")
            .field("url", &redact(&self.url))
            .field("namespace", &self.namespace)
            .field("session_timeout", &self.session_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("keyspace_events", &self.keyspace_events)
            .field("tls", &self.tls)
            .finish()
    }
}

impl RedisOptions {
    /// Settings for the server at `url`:
    /// `redis://[user:password@]host:port[/db]`, or `rediss://…` for TLS
    /// (with the public web roots unless [`RedisOptions::with_tls`] names a CA).
    pub fn new(url: impl Into<String>) -> Self {
        RedisOptions {
            url: url.into(),
            namespace: DEFAULT_NAMESPACE.to_owned(),
            session_timeout: DEFAULT_SESSION_TIMEOUT,
            request_timeout: None,
            keyspace_events: KeyspaceEvents::default(),
            tls: None,
        }
    }

    /// Keep every key of this store under `{namespace}:` (default `coord`).
    /// Stores with different namespaces on one server never see each
    /// other. Letters, digits, `_`, `-` and `.` only.
    pub fn with_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// The session timeout: how long a session outlives its last heartbeat
    /// (default 10 s; it is the TTL of the session's key); heartbeats go
    /// every third of it. From [`MIN_SESSION_TIMEOUT`] to
    /// [`MAX_SESSION_TIMEOUT`]; [`crate::connect`] refuses others with
    /// [`Error::InvalidArgument`] before any I/O.
    ///
    /// The client counts the session as lost a tenth of the timeout before
    /// the server can (see `coord_core::backend::lease`): when no heartbeat has been
    /// answered for 90 % of it.
    pub fn with_session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// How long one request (and one connection attempt) waits for the
    /// server before it fails with a connection loss. Default: the session
    /// timeout, but at least 1 s and at most 30 s. Positive, and at most
    /// [`coord_core::limits::MAX_TIMEOUT`]; [`crate::connect`] refuses
    /// others.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = Some(timeout);
        self
    }

    /// What to do about `notify-keyspace-events` (default
    /// [`KeyspaceEvents::Enable`]).
    pub fn keyspace_events(mut self, mode: KeyspaceEvents) -> Self {
        self.keyspace_events = mode;
        self
    }

    /// Connect with TLS, with these settings (a `redis://` URL is then
    /// taken as `rediss://`; `rediss://` alone means TLS with the defaults
    /// of [`TlsOptions::new`]). Every connection of a session (commands,
    /// pub/sub) uses it.
    ///
    /// - `ca`: trust these authorities; without it, the server's
    ///   certificate must chain to the public web roots (Mozilla's list,
    ///   built in with webpki-roots: the system's store is never read).
    /// - `cert` + `key`: present this client certificate (mutual TLS, as
    ///   `tls-auth-clients yes` requires).
    /// - `server_name`: **not supported on Redis** (the `redis` crate
    ///   checks the certificate against the URL's host and offers no
    ///   override): [`crate::connect`] refuses a `server_name` other than
    ///   the URL's host with [`Error::InvalidArgument`] before any I/O.
    ///   Connect by a name or address the certificate carries instead.
    ///
    /// The files are read by [`crate::connect`] before any I/O
    /// ([`TlsOptions::load`]). TLS is rustls with the ring provider.
    pub fn with_tls(mut self, tls: TlsOptions) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The TLS settings given with [`RedisOptions::with_tls`], if any (a
    /// `rediss://` URL alone turns TLS on with the defaults but sets none:
    /// see [`RedisOptions::uses_tls`]).
    pub fn tls(&self) -> Option<&TlsOptions> {
        self.tls.as_ref()
    }

    /// Whether sessions connect with TLS: a `rediss://` URL, or
    /// [`RedisOptions::with_tls`] given.
    pub fn uses_tls(&self) -> bool {
        self.tls.is_some()
            || self
                .url
                .get(..9)
                .is_some_and(|scheme| scheme.eq_ignore_ascii_case("rediss://"))
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

    /// The key namespace as given.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The session timeout (see [`RedisOptions::with_session_timeout`]).
    pub fn session_timeout(&self) -> Duration {
        self.session_timeout
    }

    /// The request timeout in effect: the one given, or the one derived
    /// from the session timeout (see [`RedisOptions::with_request_timeout`]).
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout.unwrap_or_else(|| {
            self.session_timeout
                .clamp(MIN_DEFAULT_REQUEST_TIMEOUT, MAX_DEFAULT_REQUEST_TIMEOUT)
        })
    }

    /// Check the options, without I/O: [`crate::connect`] runs this first.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a namespace that is not 1 to 128
    /// letters, digits, `_`, `-` or `.`; a session timeout out of
    /// [`MIN_SESSION_TIMEOUT`]..=[`MAX_SESSION_TIMEOUT`]; a request timeout
    /// of zero or over [`coord_core::limits::MAX_TIMEOUT`]; TLS settings
    /// that cannot work ([`TlsOptions::validate`]).
    pub fn validate(&self) -> Result<()> {
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
        limits::check_session_timeout(self.session_timeout)?;
        if self.session_timeout < MIN_SESSION_TIMEOUT {
            return Err(Error::InvalidArgument(format!(
                "redis session timeout {:?} is below the minimum {MIN_SESSION_TIMEOUT:?}",
                self.session_timeout
            )));
        }
        if let Some(timeout) = self.request_timeout {
            if timeout.is_zero() {
                return Err(Error::InvalidArgument(
                    "a redis request timeout of zero cannot work".into(),
                ));
            }
            limits::check("a redis request timeout", timeout, limits::MAX_TIMEOUT)?;
        }
        if let Some(tls) = &self.tls {
            tls.validate()?;
        }
        Ok(())
    }
}

impl From<&str> for RedisOptions {
    fn from(url: &str) -> Self {
        RedisOptions::new(url)
    }
}

impl From<String> for RedisOptions {
    fn from(url: String) -> Self {
        RedisOptions::new(url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(options: &RedisOptions) -> bool {
        matches!(options.validate(), Err(Error::InvalidArgument(_)))
    }

    #[test]
    fn durations_out_of_range_are_refused() {
        let base = RedisOptions::new("redis://127.0.0.1:6379");
        assert!(base.validate().is_ok());
        assert!(refused(&base.clone().with_session_timeout(Duration::ZERO)));
        assert!(refused(
            &base
                .clone()
                .with_session_timeout(Duration::from_millis(299))
        ));
        assert!(base
            .clone()
            .with_session_timeout(MAX_SESSION_TIMEOUT)
            .validate()
            .is_ok());
        assert!(refused(&base.clone().with_session_timeout(
            MAX_SESSION_TIMEOUT + Duration::from_nanos(1)
        )));
        assert!(refused(&base.clone().with_session_timeout(Duration::MAX)));
        assert!(refused(&base.clone().with_request_timeout(Duration::ZERO)));
        assert!(refused(&base.clone().with_request_timeout(Duration::MAX)));
        assert!(refused(&base.clone().with_request_timeout(
            limits::MAX_TIMEOUT + Duration::from_secs(1)
        )));
        assert!(base
            .clone()
            .with_request_timeout(limits::MAX_TIMEOUT)
            .validate()
            .is_ok());
    }

    #[test]
    fn the_request_timeout_follows_the_session_timeout_within_bounds() {
        let o = RedisOptions::new("redis://h");
        assert_eq!(o.request_timeout(), DEFAULT_SESSION_TIMEOUT);
        let short = o.clone().with_session_timeout(MIN_SESSION_TIMEOUT);
        assert_eq!(short.request_timeout(), Duration::from_secs(1));
        let long = o.clone().with_session_timeout(MAX_SESSION_TIMEOUT);
        assert_eq!(long.request_timeout(), Duration::from_secs(30));
        let given = o.with_request_timeout(Duration::from_millis(1500));
        assert_eq!(given.request_timeout(), Duration::from_millis(1500));
    }

    #[test]
    fn tls_is_on_for_rediss_urls_and_with_tls_options() {
        let plain = RedisOptions::new("redis://127.0.0.1:6379");
        assert!(!plain.uses_tls());
        assert!(plain.tls().is_none());
        let rediss = RedisOptions::new("REDISS://127.0.0.1:6379");
        assert!(rediss.uses_tls());
        assert!(rediss.tls().is_none());
        let tls = TlsOptions::new().with_ca("ca.pem");
        let given = plain.with_tls(tls.clone());
        assert!(given.uses_tls());
        assert_eq!(given.tls(), Some(&tls));
        // Checked with the rest, before any I/O.
        let mut no_key = TlsOptions::new();
        no_key.cert = Some("c.pem".into());
        assert!(refused(&given.with_tls(no_key)));
    }

    #[test]
    fn debug_hides_the_password() {
        let o = RedisOptions::new("redis://app:s3cret@127.0.0.1:6379/2");
        let shown = format!("{o:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(
            shown.contains("redis://app:***@127.0.0.1:6379/2"),
            "{shown}"
        );
    }
}

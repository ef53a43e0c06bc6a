//! How to reach the server: [`PgOptions`], and what [`crate::connect`]
//! makes of them before any I/O ([`Target`]).

use std::str::FromStr;
use std::time::Duration;

use coord_core::backend::redact_url;
use coord_core::{limits, Error, Result, TlsOptions};

/// The shortest session timeout coord-pg accepts: heartbeats go every
/// third of it, each a round trip to the database.
pub const MIN_SESSION_TIMEOUT: Duration = Duration::from_millis(300);

/// The default session timeout.
const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// The default schema.
const DEFAULT_SCHEMA: &str = "coord";

/// Bounds of the default request timeout (the session timeout, clamped).
const MIN_DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(1);
const MAX_DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the server is, which schema holds coord's tables, how long a
/// session lives without heartbeats, and TLS.
///
/// ```
/// use std::time::Duration;
/// let options = coord_pg::PgOptions::new("postgres://app:secret@127.0.0.1:5432/app")
///     .with_schema("billing_coord")
///     .with_session_timeout(Duration::from_secs(5));
/// assert_eq!(options.schema(), "billing_coord");
/// assert!(!format!("{options:?}").contains("secret"));
/// ```
///
/// Its `Debug` shows the URL with the password replaced by `***`.
#[derive(Clone)]
pub struct PgOptions {
    pub(crate) url: String,
    pub(crate) schema: String,
    pub(crate) session_timeout: Duration,
    pub(crate) request_timeout: Option<Duration>,
    pub(crate) tls: Option<TlsOptions>,
}

impl std::fmt::Debug for PgOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgOptions")
            .field("url", &redact_url(&self.url))
            .field("schema", &self.schema)
            .field("session_timeout", &self.session_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("tls", &self.tls)
            .finish()
    }
}

impl PgOptions {
    /// Settings for the server at `url`: `postgres://` or `postgresql://`
    /// `[user[:password]@]host[:port][,host2…]/database[?params]`, with the
    /// parameters libpq and tokio-postgres take (`application_name`,
    /// `connect_timeout`, `target_session_attrs`, …). `sslmode` is coord's:
    ///
    /// - `disable`: no TLS (refused together with [`PgOptions::with_tls`]);
    /// - `require` and `verify-full`: TLS, and the server's certificate is
    ///   **always** verified (against the CA of [`PgOptions::with_tls`],
    ///   else the public web roots) and its name checked: coord never runs
    ///   a coordination session over a connection it has not
    ///   authenticated, so `require` means what libpq's `verify-full` does;
    /// - `verify-ca`, `prefer` and `allow` are refused: the first checks no
    ///   name, the others may fall back to plain text.
    ///
    /// Without `sslmode`, TLS is on exactly when [`PgOptions::with_tls`]
    /// was given.
    pub fn new(url: impl Into<String>) -> Self {
        PgOptions {
            url: url.into(),
            schema: DEFAULT_SCHEMA.to_owned(),
            session_timeout: DEFAULT_SESSION_TIMEOUT,
            request_timeout: None,
            tls: None,
        }
    }

    /// Keep coord's tables and functions in this schema (default
    /// `coord`): 1 to 63 lowercase letters, digits and `_`, not starting
    /// with a digit nor `pg_`. Stores in different schemas of one database
    /// never see each other. coord creates the schema when it is missing
    /// (that needs `CREATE` on the database); a role that owns the schema
    /// already needs nothing more (see the crate's docs on grants).
    pub fn with_schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// The session timeout: the server ends a session this long after its
    /// last heartbeat, by its own clock (default 10 s); heartbeats go every
    /// third of it. From [`MIN_SESSION_TIMEOUT`] to
    /// [`coord_core::limits::MAX_SESSION_TIMEOUT`]; [`crate::connect`]
    /// refuses others with [`Error::InvalidArgument`] before any I/O.
    pub fn with_session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// How long one request (and one connection attempt) waits for the
    /// server before it fails with a connection loss. Default: the session
    /// timeout, but at least 1 s and at most 30 s.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = Some(timeout);
        self
    }

    /// Connect with TLS, with these settings: `ca` (trust these
    /// authorities instead of the public web roots), `cert` + `key` (a
    /// client certificate, for `clientcert=verify-ca|verify-full` in
    /// `pg_hba.conf`), `server_name` (check the certificate against this
    /// name instead of the host). Both connections of a session use it.
    /// The files are read by [`crate::connect`] before any I/O. rustls
    /// with the ring provider; the system's store is never read.
    pub fn with_tls(mut self, tls: TlsOptions) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The server's URL, as given.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The schema that holds coord's tables.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The session timeout (see [`PgOptions::with_session_timeout`]).
    pub fn session_timeout(&self) -> Duration {
        self.session_timeout
    }

    /// The request timeout in effect (see [`PgOptions::with_request_timeout`]).
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout.unwrap_or_else(|| {
            self.session_timeout
                .clamp(MIN_DEFAULT_REQUEST_TIMEOUT, MAX_DEFAULT_REQUEST_TIMEOUT)
        })
    }

    /// The TLS settings given with [`PgOptions::with_tls`], if any.
    pub fn tls(&self) -> Option<&TlsOptions> {
        self.tls.as_ref()
    }

    /// Whether sessions connect with TLS: `sslmode=require|verify-full`,
    /// or [`PgOptions::with_tls`] given.
    pub fn uses_tls(&self) -> bool {
        self.target().map(|t| t.tls.is_some()).unwrap_or(false)
    }

    /// Check the options without I/O: [`crate::connect`] runs this first.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a URL that is not a `postgres://`
    /// one or that tokio-postgres cannot read, an `sslmode` coord refuses
    /// (see [`PgOptions::new`]), a schema name out of the rules of
    /// [`PgOptions::with_schema`], a session timeout out of range, a
    /// request timeout of zero or over
    /// [`coord_core::limits::MAX_TIMEOUT`], or TLS settings that cannot
    /// work ([`TlsOptions::validate`]). Never quotes the password.
    pub fn validate(&self) -> Result<()> {
        self.target().map(|_| ())
    }

    /// The options checked, as a connection needs them.
    pub(crate) fn target(&self) -> Result<Target> {
        check_schema(&self.schema)?;
        limits::check_session_timeout(self.session_timeout)?;
        if self.session_timeout < MIN_SESSION_TIMEOUT {
            return Err(Error::InvalidArgument(format!(
                "postgres session timeout {:?} is below the minimum {MIN_SESSION_TIMEOUT:?}",
                self.session_timeout
            )));
        }
        if let Some(t) = self.request_timeout {
            if t.is_zero() || t > limits::MAX_TIMEOUT {
                return Err(Error::InvalidArgument(format!(
                    "postgres request timeout {t:?}: give one above zero and at most 10 years"
                )));
            }
        }
        if let Some(tls) = &self.tls {
            tls.validate()?;
        }
        let (config_url, sslmode) = split_sslmode(&self.url)?;
        let tls = match (sslmode.as_deref(), &self.tls) {
            (Some("disable"), Some(_)) => {
                return Err(bad_url(
                    &self.url,
                    "sslmode=disable contradicts the TLS settings given",
                ))
            }
            (Some("disable"), None) => None,
            (Some("require" | "verify-full"), tls) => {
                Some(tls.clone().unwrap_or_else(TlsOptions::new))
            }
            (Some("verify-ca"), _) => {
                return Err(bad_url(
                    &self.url,
                    "sslmode=verify-ca is not supported: coord always checks the server's \
                     name too; use sslmode=verify-full (or require), or name the \
                     certificate's host with server_name",
                ))
            }
            (Some(mode @ ("prefer" | "allow")), _) => {
                return Err(bad_url(
                    &self.url,
                    &format!(
                        "sslmode={mode} may fall back to plain text, which coord never does: \
                         use sslmode=disable or sslmode=verify-full"
                    ),
                ))
            }
            (Some(other), _) => {
                return Err(bad_url(
                    &self.url,
                    &format!(
                        "sslmode={other:?} is not one of disable, require, verify-full \
                         (verify-ca, prefer and allow are refused)"
                    ),
                ))
            }
            (None, tls) => tls.clone(),
        };
        let mut config = tokio_postgres::Config::from_str(&config_url).map_err(|e| {
            let reason = e.to_string();
            // Never quote the URL's password, even inside a parse error.
            let reason = match password_of(&self.url) {
                Some(pw) if !pw.is_empty() && reason.contains(pw) => {
                    "tokio-postgres cannot read it".to_owned()
                }
                _ => format!("tokio-postgres cannot read it: {reason}"),
            };
            bad_url(&self.url, &reason)
        })?;
        if config.get_hosts().is_empty() {
            return Err(bad_url(&self.url, "it names no host"));
        }
        config.ssl_mode(if tls.is_some() {
            tokio_postgres::config::SslMode::Require
        } else {
            tokio_postgres::config::SslMode::Disable
        });
        config.connect_timeout(self.request_timeout());
        if config.get_application_name().is_none() {
            config.application_name("coord");
        }
        Ok(Target {
            config,
            tls,
            schema: self.schema.clone(),
            session_timeout: self.session_timeout,
            request_timeout: self.request_timeout(),
            shown: redact_url(&self.url),
        })
    }
}

/// The options checked: what each connection is made from.
#[derive(Clone)]
pub(crate) struct Target {
    pub(crate) config: tokio_postgres::Config,
    pub(crate) tls: Option<TlsOptions>,
    pub(crate) schema: String,
    pub(crate) session_timeout: Duration,
    pub(crate) request_timeout: Duration,
    /// The URL with its password replaced by `***`, for messages.
    pub(crate) shown: String,
}

fn bad_url(url: &str, why: &str) -> Error {
    Error::InvalidArgument(format!("postgres URL {}: {why}", redact_url(url)))
}

/// Refuse a schema name outside `[a-z_][a-z0-9_]{0,62}` or starting with
/// `pg_` (PostgreSQL's own).
fn check_schema(schema: &str) -> Result<()> {
    let ok = !schema.is_empty()
        && schema.len() <= 63
        && !schema.starts_with("pg_")
        && !schema.starts_with(|c: char| c.is_ascii_digit())
        && schema
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "postgres schema {schema:?}: use 1 to 63 lowercase letters, digits and '_', \
             not starting with a digit nor 'pg_'"
        )))
    }
}

/// The password of a URL's user info, raw (for keeping it out of messages).
fn password_of(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let info = &rest[..rest.rfind('@')?];
    info.split_once(':').map(|(_, pw)| pw)
}

/// `url` without its `sslmode` parameter, and that parameter's value.
/// Refuses anything but a `postgres://` or `postgresql://` URL.
fn split_sslmode(url: &str) -> Result<(String, Option<String>)> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(bad_url(
            url,
            "expected postgres://[user[:password]@]host[:port]/database",
        ));
    };
    if !scheme.eq_ignore_ascii_case("postgres") && !scheme.eq_ignore_ascii_case("postgresql") {
        return Err(bad_url(
            url,
            "the scheme must be postgres:// or postgresql://",
        ));
    }
    // The query starts after the user info (a password may hold '?').
    let from = rest.rfind('@').map_or(0, |i| i + 1);
    let Some(q) = rest[from..].find('?').map(|i| from + i) else {
        return Ok((url.to_owned(), None));
    };
    let mut mode = None;
    let mut kept = Vec::new();
    for pair in rest[q + 1..].split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("sslmode", v)) => {
                if mode.is_some() {
                    return Err(bad_url(url, "sslmode is given twice"));
                }
                mode = Some(v.to_owned());
            }
            _ => kept.push(pair),
        }
    }
    let mut out = format!("{scheme}://{}", &rest[..q]);
    if !kept.is_empty() {
        out.push('?');
        out.push_str(&kept.join("&"));
    }
    Ok((out, mode))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(o: PgOptions) -> String {
        match o.validate() {
            Err(Error::InvalidArgument(m)) => m,
            other => panic!("expected InvalidArgument, got {other:?}"),
        }
    }

    #[test]
    fn sslmodes_map_or_are_refused() {
        let plain = PgOptions::new("postgres://u:pw@h:5432/db");
        assert!(!plain.uses_tls());
        let t = PgOptions::new("postgresql://u:pw@h/db?sslmode=require")
            .target()
            .expect("require");
        assert!(t.tls.is_some());
        assert!(PgOptions::new("postgres://h/db?sslmode=verify-full").uses_tls());
        assert!(PgOptions::new("postgres://h/db")
            .with_tls(TlsOptions::new())
            .uses_tls());
        assert!(reason(PgOptions::new("postgres://h/db?sslmode=verify-ca")).contains("verify-full"));
        assert!(reason(PgOptions::new("postgres://h/db?sslmode=prefer")).contains("plain text"));
        assert!(reason(PgOptions::new("postgres://h/db?sslmode=bogus")).contains("bogus"));
        assert!(reason(
            PgOptions::new("postgres://h/db?sslmode=disable").with_tls(TlsOptions::new())
        )
        .contains("contradicts"));
    }

    #[test]
    fn other_parameters_pass_through() {
        let t = PgOptions::new("postgres://u:p%3Fw@h:1/db?application_name=app&sslmode=disable")
            .target()
            .expect("valid");
        assert_eq!(t.config.get_application_name(), Some("app"));
        assert_eq!(t.config.get_ports(), &[1]);
        assert!(t.tls.is_none());
    }

    #[test]
    fn bad_urls_say_why_without_the_password() {
        assert!(reason(PgOptions::new("mysql://u:hunter2@h/db")).contains("postgres://"));
        assert!(reason(PgOptions::new("nonsense")).contains("expected"));
        let m = reason(PgOptions::new("postgres://u:hunter2@h:notaport/db"));
        assert!(!m.contains("hunter2"), "{m}");
        assert!(!format!("{:?}", PgOptions::new("postgres://u:hunter2@h/db")).contains("hunter2"));
    }

    #[test]
    fn schema_names() {
        for ok in ["coord", "_x", "a1_b"] {
            assert!(check_schema(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Coord", "1a", "pg_x", "a-b", "a.b", &"x".repeat(64)] {
            assert!(check_schema(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn timeouts() {
        let o = PgOptions::new("postgres://h/db");
        assert!(
            reason(o.clone().with_session_timeout(Duration::from_millis(100))).contains("minimum")
        );
        assert!(reason(o.clone().with_request_timeout(Duration::ZERO)).contains("request timeout"));
        assert_eq!(
            o.with_session_timeout(Duration::from_secs(90))
                .request_timeout(),
            Duration::from_secs(30)
        );
    }
}

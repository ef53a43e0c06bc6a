//! Parsing a coord URL into a backend's options, before any I/O.

use std::time::Duration;

use coord_core::backend::redact_url as redact;

use crate::backend::Backend;
use crate::duration::{human, parse_duration};
use crate::error::ConnectError;

/// A URL parsed and checked: which backend, with its options.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    Mem,
    #[cfg(feature = "zk")]
    Zk(coord_zk::ZkOptions),
    #[cfg(feature = "etcd")]
    Etcd(coord_etcd::EtcdOptions),
    #[cfg(feature = "redis")]
    Redis(coord_redis::RedisOptions),
    #[cfg(feature = "pg")]
    Pg(coord_pg::PgOptions),
}

/// What [`parse`] makes of a URL.
#[derive(Debug, Clone)]
pub(crate) struct Parsed {
    pub backend: Backend,
    pub target: Target,
    pub session_timeout: Option<Duration>,
    /// The URL with any password replaced by `***`, for messages.
    pub shown: String,
}

/// The user info of a URL, percent-decoded. Its `Debug` never shows the
/// password.
#[derive(Clone)]
struct Userinfo {
    user: String,
    password: Option<String>,
}

impl std::fmt::Debug for Userinfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Userinfo")
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .finish()
    }
}

/// The pieces of `scheme://[userinfo@]hosts/path?query`.
struct Pieces<'a> {
    scheme: String,
    /// Everything before the last `@`, decoded; `Err` when it does not
    /// decode (the reason never quotes it).
    userinfo: Option<Result<Userinfo, String>>,
    /// The host list only: never any part of the user info.
    authority: &'a str,
    path: &'a str,
    params: Vec<(&'a str, &'a str)>,
}

/// Cut `rest` (the URL after `://`) at its LAST `@`: everything before it
/// is user info, whatever characters it holds (a password may contain
/// `/`, `?`, `#`, `:` and `@`), so nothing after this looks at it. A path
/// or query cannot contain a raw `@`, then; write it `%40`.
fn cut_userinfo(rest: &str) -> (Option<&str>, &str) {
    match rest.rfind('@') {
        Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
        None => (None, rest),
    }
}

fn decode_userinfo(info: &str) -> Result<Userinfo, String> {
    Ok(match info.split_once(':') {
        Some((user, password)) => Userinfo {
            user: percent_decode(user)?,
            password: Some(percent_decode(password)?),
        },
        None => Userinfo {
            user: percent_decode(info)?,
            password: None,
        },
    })
}

fn split<'a>(
    url: &'a str,
    bad: &dyn Fn(String) -> ConnectError,
) -> Result<Pieces<'a>, ConnectError> {
    let (scheme, rest) = url.split_once("://").ok_or_else(|| {
        bad("expected <scheme>://…, e.g. mem://, zk://127.0.0.1:2181, etcd://127.0.0.1:2379, redis://127.0.0.1:6379 or postgres://app@127.0.0.1:5432/app".into())
    })?;
    if scheme.is_empty() {
        return Err(bad("the scheme is missing".into()));
    }
    // First of all: the user info goes, before anything can quote it.
    let (userinfo, rest) = cut_userinfo(rest);
    let userinfo = userinfo.map(decode_userinfo);
    if rest.contains('#') {
        return Err(bad("a fragment ('#…') is not allowed".into()));
    }
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let mut params: Vec<(&str, &str)> = Vec::new();
    for pair in query.into_iter().flat_map(|q| q.split('&')) {
        if pair.is_empty() {
            continue;
        }
        let (k, v) = pair.split_once('=').ok_or_else(|| {
            bad(format!(
                "query parameter {pair:?} has no value (write {pair}=…)"
            ))
        })?;
        if v.is_empty() {
            return Err(bad(format!("query parameter {k:?} has an empty value")));
        }
        if params.iter().any(|(seen, _)| *seen == k) {
            return Err(bad(format!("query parameter {k:?} is given twice")));
        }
        params.push((k, v));
    }
    Ok(Pieces {
        scheme: scheme.to_ascii_lowercase(),
        userinfo,
        authority,
        path,
        params,
    })
}

/// Parse `url` (no I/O): the backend, its options, the session timeout.
pub(crate) fn parse(url: &str) -> Result<Parsed, ConnectError> {
    let shown = redact(url);
    let bad = |reason: String| ConnectError::InvalidUrl {
        url: shown.clone(),
        reason,
    };
    let pieces = split(url, &bad)?;
    let backend = match pieces.scheme.as_str() {
        "mem" => Backend::Mem,
        "zk" => Backend::Zk,
        "etcd" => Backend::Etcd,
        "redis" | "rediss" => Backend::Redis,
        "postgres" | "postgresql" => Backend::Postgres,
        other => {
            let reason = match other {
                "zks" | "etcds" => "write zk://… or etcd://… with ?tls=true (and ca=, cert=, key=)",
                "redis+unix" | "unix" => "Unix sockets are not supported; use redis://host:port",
                "pg" | "postgressql" | "psql" | "pgsql" => {
                    "write postgres://user:password@host:5432/database (or postgresql://)"
                }
                "http" | "https" => {
                    "write etcd://host:port for etcd, zk://host:port for ZooKeeper \
                     (add ?tls=true, with ca=, cert= and key= as needed, for TLS)"
                }
                _ => "the supported schemes are mem, zk, etcd, redis and postgres",
            };
            return Err(ConnectError::UnsupportedScheme {
                url: shown.clone(),
                scheme: other.to_owned(),
                reason: reason.to_owned(),
            });
        }
    };
    if let Some(feature) = backend.feature().filter(|_| !backend.is_compiled()) {
        return Err(ConnectError::BackendNotCompiled {
            url: shown.clone(),
            backend,
            feature,
        });
    }
    let known: &[&str] = match backend {
        Backend::Mem => &["session_timeout"],
        Backend::Zk => &[
            "session_timeout",
            "auth",
            "acl",
            "tls",
            "ca",
            "cert",
            "key",
            "server_name",
        ],
        Backend::Etcd => &["session_timeout", "tls", "ca", "cert", "key", "server_name"],
        Backend::Redis => &[
            "session_timeout",
            "namespace",
            "keyspace_events",
            "tls",
            "ca",
            "cert",
            "key",
            "server_name",
        ],
        Backend::Postgres => &[
            "session_timeout",
            "schema",
            "sslmode",
            "tls",
            "ca",
            "cert",
            "key",
            "server_name",
        ],
    };
    let mut session_timeout = None;
    for (k, v) in &pieces.params {
        if !known.contains(k) {
            return Err(bad(format!(
                "unknown query parameter {k:?} for {backend}:// (known: {})",
                known.join(", ")
            )));
        }
        if *k == "session_timeout" {
            let d = parse_duration(v).map_err(|e| bad(e.to_string()))?;
            check_session_timeout(backend, d).map_err(bad)?;
            session_timeout = Some(d);
        }
    }
    let target = match backend {
        Backend::Mem => {
            if !pieces.authority.is_empty()
                || pieces.userinfo.is_some()
                || !matches!(pieces.path, "" | "/")
            {
                return Err(bad(
                    "mem:// takes no host or path: it is the process-wide in-memory store".into(),
                ));
            }
            Target::Mem
        }
        #[cfg(feature = "zk")]
        Backend::Zk => Target::Zk(zk(&pieces).map_err(bad)?),
        #[cfg(feature = "etcd")]
        Backend::Etcd => Target::Etcd(etcd(&pieces).map_err(bad)?),
        #[cfg(feature = "redis")]
        Backend::Redis => Target::Redis(redis(&pieces).map_err(bad)?),
        #[cfg(feature = "pg")]
        Backend::Postgres => Target::Pg(pg(&pieces).map_err(bad)?),
        #[allow(unreachable_patterns)]
        _ => {
            return Err(ConnectError::BackendNotCompiled {
                url: shown.clone(),
                backend,
                feature: backend.feature().unwrap_or("?"),
            })
        }
    };
    Ok(Parsed {
        backend,
        target,
        session_timeout,
        shown,
    })
}

/// The TLS settings of a URL: `tls=true|false`, `ca`, `cert`, `key` and
/// `server_name` (percent-decoded; any of the last four turns TLS on), and
/// `rediss://`, which turns it on for Redis. `None`: no TLS. Checked here,
/// before any I/O; the files are read when the session connects.
#[cfg(any(feature = "zk", feature = "etcd", feature = "redis", feature = "pg"))]
fn tls(p: &Pieces<'_>) -> Result<Option<coord_core::TlsOptions>, String> {
    let param = |name: &str| p.params.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
    let decoded = |name: &str| {
        param(name)
            .map(|v| {
                percent_encoding::percent_decode_str(v)
                    .decode_utf8()
                    .map(std::borrow::Cow::into_owned)
                    .map_err(|_| format!("{name}: not UTF-8 once %-decoded"))
            })
            .transpose()
    };
    let (ca, cert, key, server_name) = (
        decoded("ca")?,
        decoded("cert")?,
        decoded("key")?,
        decoded("server_name")?,
    );
    let implied = ca.is_some() || cert.is_some() || key.is_some() || server_name.is_some();
    let on = match param("tls") {
        None => p.scheme == "rediss" || implied,
        Some("true") => true,
        Some("false") if p.scheme == "rediss" => {
            return Err(
                "rediss:// is Redis over TLS: tls=false contradicts it (write redis://)".into(),
            )
        }
        Some("false") if implied => {
            return Err("tls=false, but ca, cert, key or server_name is given".into())
        }
        Some("false") => false,
        Some(other) => return Err(format!("tls {other:?}: use true or false")),
    };
    if !on {
        return Ok(None);
    }
    let mut options = coord_core::TlsOptions::new();
    options.ca = ca.map(Into::into);
    options.cert = cert.map(Into::into);
    options.key = key.map(Into::into);
    options.server_name = server_name;
    options.validate().map_err(|e| match e {
        coord_core::Error::InvalidArgument(m) => m,
        e => e.to_string(),
    })?;
    Ok(Some(options))
}

/// Refuse a session timeout the backend cannot use: zero, over
/// [`coord_core::limits::MAX_SESSION_TIMEOUT`], or under the backend's
/// minimum.
pub(crate) fn check_session_timeout(backend: Backend, d: Duration) -> Result<(), String> {
    if d.is_zero() {
        return Err("the session timeout must be positive".into());
    }
    if d > coord_core::limits::MAX_SESSION_TIMEOUT {
        return Err(format!(
            "the session timeout {} is longer than the maximum of {}",
            human(d),
            human(coord_core::limits::MAX_SESSION_TIMEOUT)
        ));
    }
    #[cfg(feature = "redis")]
    if backend == Backend::Redis && d < coord_redis::MIN_SESSION_TIMEOUT {
        return Err(format!(
            "the session timeout {d:?} is below Redis's minimum of {:?}",
            coord_redis::MIN_SESSION_TIMEOUT
        ));
    }
    #[cfg(feature = "pg")]
    if backend == Backend::Postgres && d < coord_pg::MIN_SESSION_TIMEOUT {
        return Err(format!(
            "the session timeout {d:?} is below PostgreSQL's minimum of {:?}",
            coord_pg::MIN_SESSION_TIMEOUT
        ));
    }
    let _ = backend;
    Ok(())
}

/// Check a comma-separated host list (`h1:2181,[::1]:2182,h3`), adding
/// `default_port` where a host has none.
#[cfg(any(feature = "zk", feature = "redis", feature = "pg", test))]
fn host_list(list: &str, default_port: u16) -> Result<String, String> {
    coord_core::backend::host::host_list(list, default_port).map(|hosts| hosts.join(","))
}

#[cfg(feature = "zk")]
fn zk(p: &Pieces<'_>) -> Result<coord_zk::ZkOptions, String> {
    use coord_zk::ZkAcl;
    let hosts = host_list(p.authority, 2181)?;
    let mut options = coord_zk::ZkOptions::new(&format!("{hosts}{}", p.path));
    options.validate().map_err(|e| format!("chroot: {e}"))?;
    let param = |name: &str| p.params.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
    match &p.userinfo {
        Some(info) => {
            let info = info.clone()?;
            let password = info.password.ok_or(
                "ZooKeeper credentials must be user:password (everything before the last \
                 '@' is the user info, so a chroot cannot hold a raw '@': write %40)",
            )?;
            if info.user.is_empty() {
                return Err("the ZooKeeper user name is empty".into());
            }
            options = match param("auth").unwrap_or("digest") {
                "digest" => options.with_digest(info.user, password),
                "sasl" => options.with_sasl_digest(info.user, password),
                other => return Err(format!("auth {other:?}: use digest or sasl")),
            };
        }
        None if param("auth").is_some() => {
            return Err("auth= needs credentials: zk://user:password@hosts/…".into())
        }
        None => {}
    }
    if let Some(acl) = param("acl") {
        let acl = match acl {
            "creator" => ZkAcl::CreatorAllWorldRead,
            "creator_only" => ZkAcl::CreatorAll,
            "open" => ZkAcl::Open,
            other => return Err(format!("acl {other:?}: use creator, creator_only or open")),
        };
        if p.userinfo.is_none() && acl != ZkAcl::Open {
            return Err(
                "acl=creator and acl=creator_only need credentials (zk://user:password@…): \
                 ZooKeeper refuses a creator ACL from a session without an identity"
                    .into(),
            );
        }
        options = options.with_acl(acl);
    }
    if let Some(tls) = tls(p)? {
        options = options.with_tls(tls);
    }
    Ok(options)
}

#[cfg(feature = "etcd")]
fn etcd(p: &Pieces<'_>) -> Result<coord_etcd::EtcdOptions, String> {
    let mut options =
        coord_etcd::EtcdOptions::from_url(&format!("etcd://{}{}", p.authority, p.path)).map_err(
            |e| match e {
                coord_core::Error::InvalidArgument(m) => m,
                e => e.to_string(),
            },
        )?;
    if let Some(info) = &p.userinfo {
        let info = info.clone()?;
        let password = info
            .password
            .ok_or("etcd credentials must be user:password")?;
        if info.user.is_empty() {
            return Err("the etcd user name is empty".into());
        }
        options = options.with_user(info.user, password);
    }
    if let Some(tls) = tls(p)? {
        options = options.with_tls(tls);
    }
    Ok(options)
}

#[cfg(feature = "redis")]
fn redis(p: &Pieces<'_>) -> Result<coord_redis::RedisOptions, String> {
    use percent_encoding::utf8_percent_encode;

    let host = p.authority;
    if host.contains(',') {
        return Err("one Redis host only (Redis Cluster is not supported)".into());
    }
    let hosts = host_list(host, 6379)?;
    match p.path {
        "" | "/" => {}
        db if db[1..].parse::<u32>().is_ok() => {}
        db => {
            return Err(format!(
                "the path of a redis:// URL is the database number, not {db:?}"
            ))
        }
    }
    // Decoded, then encoded again in full, so the redis client (which
    // decodes them) gets exactly the user and password meant.
    let userinfo = match &p.userinfo {
        None => String::new(),
        Some(info) => {
            let info = info.clone()?;
            let user = utf8_percent_encode(&info.user, UNRESERVED_KEPT);
            match &info.password {
                Some(pw) => format!("{user}:{}@", utf8_percent_encode(pw, UNRESERVED_KEPT)),
                None => format!("{user}@"),
            }
        }
    };
    let mut options =
        coord_redis::RedisOptions::new(format!("redis://{userinfo}{hosts}{}", p.path));
    if let Some((_, ns)) = p.params.iter().find(|(k, _)| *k == "namespace") {
        let ok = ns.len() <= 128
            && ns
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !ok {
            return Err(format!(
                "namespace {ns:?}: use 1 to 128 letters, digits, '_', '-' or '.'"
            ));
        }
        options = options.with_namespace(*ns);
    }
    if let Some((_, mode)) = p.params.iter().find(|(k, _)| *k == "keyspace_events") {
        use coord_redis::KeyspaceEvents;
        options = options.with_keyspace_events(match *mode {
            "enable" => KeyspaceEvents::Enable,
            "require" => KeyspaceEvents::Require,
            "assume" => KeyspaceEvents::Assume,
            other => {
                return Err(format!(
                    "keyspace_events {other:?}: use enable, require or assume"
                ))
            }
        });
    }
    if let Some(tls) = tls(p)? {
        options = options.with_tls(tls);
    }
    Ok(options)
}

/// All but RFC 3986's unreserved characters: what a user name, password
/// or database name is encoded with again after decoding, so the client
/// (which decodes them) gets exactly what was meant.
#[cfg(any(feature = "redis", feature = "pg"))]
const UNRESERVED_KEPT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `postgres://user[:password]@host[:port][/database]`, the query's
/// `schema`, `sslmode` and TLS parameters. One host (a failover address
/// is the operator's: a proxy, a virtual IP or a DNS name that follows the
/// primary); port 5432 and, as libpq does, the user's name as the database
/// when omitted. `PgOptions::new` gets the URL with the user info and the
/// database decoded and encoded again in full, and `sslmode` when given
/// (coord takes it: see `coord_pg::PgOptions::new`); nothing else of the
/// query reaches it.
#[cfg(feature = "pg")]
fn pg(p: &Pieces<'_>) -> Result<coord_pg::PgOptions, String> {
    use percent_encoding::utf8_percent_encode;

    let param = |name: &str| p.params.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
    if p.authority.contains(',') {
        return Err(
            "one PostgreSQL host only (for failover, name an address that follows \
             the primary: a proxy, a virtual IP or a DNS name)"
                .into(),
        );
    }
    let host = host_list(p.authority, 5432)?;
    let database = match p.path {
        "" | "/" => String::new(),
        path if path[1..].contains('/') => {
            return Err(format!(
                "the path of a postgres:// URL is the database name, not {path:?}"
            ))
        }
        path => {
            let name = percent_decode(&path[1..])
                .map_err(|e| e.replace("the user info", "the database name"))?;
            format!("/{}", utf8_percent_encode(&name, UNRESERVED_KEPT))
        }
    };
    let userinfo = match &p.userinfo {
        None => {
            return Err(
                "a postgres:// URL needs a user: postgres://user[:password]@host/database".into(),
            )
        }
        Some(info) => {
            let info = info.clone()?;
            if info.user.is_empty() {
                return Err("the PostgreSQL user name is empty".into());
            }
            let user = utf8_percent_encode(&info.user, UNRESERVED_KEPT);
            match &info.password {
                Some(pw) => format!("{user}:{}@", utf8_percent_encode(pw, UNRESERVED_KEPT)),
                None => format!("{user}@"),
            }
        }
    };
    let tls = tls(p)?;
    let sslmode = param("sslmode");
    match sslmode {
        None => {}
        Some("disable") if tls.is_some() => {
            return Err(
                "sslmode=disable, but tls=true, ca, cert, key or server_name asks for TLS".into(),
            )
        }
        Some("disable") => {}
        Some(mode @ ("require" | "verify-full")) if param("tls") == Some("false") => {
            return Err(format!(
                "sslmode={mode} asks for TLS: tls=false contradicts it"
            ))
        }
        Some("require" | "verify-full") => {}
        Some(mode @ ("verify-ca" | "prefer" | "allow")) => {
            return Err(format!(
                "sslmode={mode} is not supported: coord never falls back to plain text and \
                 always checks the server's certificate and name; write sslmode=verify-full \
                 (or require, which coord verifies the same way), with ca=PATH for a private \
                 certificate authority, or sslmode=disable"
            ))
        }
        Some(other) => {
            return Err(format!(
                "sslmode {other:?}: use disable, require or verify-full"
            ))
        }
    }
    let mut url = format!("postgres://{userinfo}{host}{database}");
    if let Some(mode) = sslmode {
        url.push_str("?sslmode=");
        url.push_str(mode);
    }
    let mut options = coord_pg::PgOptions::new(url);
    if let Some(schema) = param("schema") {
        options = options.with_schema(schema);
    }
    if let Some(tls) = tls {
        options = options.with_tls(tls);
    }
    options.validate().map_err(|e| match e {
        coord_core::Error::InvalidArgument(m) => m,
        e => e.to_string(),
    })?;
    Ok(options)
}

/// Decode `%XX` escapes (user names and passwords in URLs), with the
/// `percent-encoding` crate. That crate passes a malformed escape through
/// as it is; here it is an error, since a password with a stray `%` was
/// most likely meant to be escaped. No message quotes `s` (a password).
fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let malformed = bytes.iter().enumerate().any(|(i, b)| {
        *b == b'%'
            && !bytes
                .get(i + 1..i + 3)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    });
    if malformed {
        return Err("a '%' not followed by two hex digits in the user info".into());
    }
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .map(std::borrow::Cow::into_owned)
        .map_err(|_| "the user info is not UTF-8 once decoded".into())
}

#[cfg(test)]
#[path = "url_tests.rs"]
mod tests;

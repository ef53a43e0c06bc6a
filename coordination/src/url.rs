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
mod tests {
    use super::*;

    fn reason(url: &str) -> String {
        match parse(url) {
            Ok(_) => panic!("{url} was accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn mem_urls() {
        for url in ["mem://", "mem:///", "MEM://", "mem://?session_timeout=2s"] {
            let p = parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(p.backend, Backend::Mem);
        }
        let p = parse("mem://?session_timeout=1m").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.session_timeout, Some(Duration::from_secs(60)));
        assert!(reason("mem://host").contains("no host or path"));
        assert!(reason("mem:///x").contains("no host or path"));
    }

    #[test]
    fn malformed_urls_say_what_is_wrong() {
        assert!(reason("").contains("expected <scheme>://"));
        assert!(reason("127.0.0.1:2181").contains("expected <scheme>://"));
        assert!(reason("://x").contains("scheme is missing"));
        assert!(reason("mem://#x").contains("fragment"));
        assert!(reason("mem://?ttl=3s").contains("unknown query parameter \"ttl\""));
        assert!(reason("mem://?session_timeout").contains("has no value"));
        assert!(reason("mem://?session_timeout=").contains("empty value"));
        assert!(reason("mem://?session_timeout=3").contains("unit"));
        assert!(reason("mem://?session_timeout=0s").contains("positive"));
        assert!(reason("mem://?session_timeout=25h").contains("maximum of 1d"));
        assert!(reason("mem://?session_timeout=106751991167301d").contains("maximum of 1d"));
        assert!(reason("mem://?session_timeout=99999999999999999999d").contains("out of range"));
        assert!(parse("mem://?session_timeout=1d").is_ok());
        assert!(reason("mem://?session_timeout=1s&session_timeout=2s").contains("twice"));
    }

    #[test]
    fn unsupported_schemes() {
        assert!(matches!(
            parse("zks://h:2181"),
            Err(ConnectError::UnsupportedScheme { .. })
        ));
        assert!(reason("zks://u:secret@h:2181").contains("tls=true"));
        assert!(!reason("etcds://u:secret@h:2379").contains("secret"));
        assert!(reason("http://h:2379").contains("etcd://"));
        assert!(reason("https://h:2379").contains("tls=true"));
        assert!(reason("foo://h").contains("supported schemes"));
        assert!(reason("pg://u:secret@h/db").contains("postgres://"));
        assert!(!reason("pg://u:secret@h/db").contains("secret"));
    }

    #[test]
    fn backends_not_compiled_name_their_feature() {
        for (url, backend) in [
            ("zk://h:2181", Backend::Zk),
            ("etcd://h:2379", Backend::Etcd),
            ("redis://h:6379", Backend::Redis),
            ("postgres://u@h/db", Backend::Postgres),
            ("postgresql://u@h/db", Backend::Postgres),
        ] {
            if backend.is_compiled() {
                continue;
            }
            match parse(url) {
                Err(ConnectError::BackendNotCompiled { feature, .. }) => {
                    assert_eq!(Some(feature), backend.feature());
                    assert!(reason(url).contains(&format!("\"{feature}\"")));
                }
                other => panic!("{url}: {other:?}"),
            }
        }
    }

    #[test]
    fn host_lists() {
        assert_eq!(
            host_list("a:1,b,[::1]:3,[::2]", 2181).as_deref(),
            Ok("a:1,b:2181,[::1]:3,[::2]:2181")
        );
        for bad in ["", "a,,b", "a:x", "a:", ":1", "[::1", "a:0", "a:70000"] {
            assert!(host_list(bad, 2181).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("p%40ss%3Aw").as_deref(), Ok("p@ss:w"));
        assert!(percent_decode("%4").is_err());
        assert!(percent_decode("%zz").is_err());
        assert!(percent_decode("ab%").is_err());
        assert!(percent_decode("%ff").is_err());
        assert_eq!(percent_decode("%C3%A9%25").as_deref(), Ok("\u{e9}%"));
        assert_eq!(percent_decode("plain").as_deref(), Ok("plain"));
        // The reasons never quote the secret.
        for bad in ["s3cret%4", "s3cret%zz", "s3cret%ff"] {
            let e = percent_decode(bad).err().unwrap_or_default();
            assert!(!e.is_empty() && !e.contains("s3cret"), "{e}");
        }
    }

    #[cfg(feature = "zk")]
    #[test]
    fn zk_urls() {
        let p = parse("zk://h1:2181,h2/app/x?session_timeout=5s").unwrap_or_else(|e| panic!("{e}"));
        let Target::Zk(o) = p.target else {
            panic!("not zk")
        };
        assert_eq!(o.hosts(), "h1:2181,h2:2181");
        assert_eq!(o.chroot(), Some("/app/x"));
        assert_eq!(p.session_timeout, Some(Duration::from_secs(5)));
        assert!(reason("zk://").contains("no host"));
        assert!(reason("zk://h:x").contains("port"));
        assert!(reason("zk://h:1/a//b").contains("chroot"));
        assert!(reason("zk://h:1?namespace=x").contains("unknown query parameter"));
    }

    /// `zk://user:password@…` is digest auth (or SASL with `auth=sasl`);
    /// `acl=` chooses the ACL of the nodes coord creates.
    #[cfg(feature = "zk")]
    #[test]
    fn zk_credentials_and_acls() {
        use coord_zk::ZkAcl;
        for (url, want) in [
            ("zk://app:pw@h:1/c", ZkAcl::CreatorAllWorldRead),
            ("zk://app:pw@h:1/c?acl=creator", ZkAcl::CreatorAllWorldRead),
            ("zk://app:pw@h:1/c?acl=creator_only", ZkAcl::CreatorAll),
            ("zk://app:pw@h:1/c?acl=open&auth=sasl", ZkAcl::Open),
            ("zk://h:1/c", ZkAcl::Open),
            ("zk://h:1/c?acl=open", ZkAcl::Open),
        ] {
            let p = parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
            let Target::Zk(o) = p.target else {
                panic!("not zk")
            };
            assert_eq!(o.acl(), want, "{url}");
            assert!(!format!("{o:?}").contains("pw@") && !format!("{o:?}").contains("\"pw\""));
        }
        assert!(reason("zk://nopassword@h:1").contains("user:password"));
        assert!(reason("zk://:pw@h:1").contains("user name is empty"));
        assert!(reason("zk://u:p@h:1?auth=kerberos").contains("digest or sasl"));
        assert!(reason("zk://h:1?auth=sasl").contains("needs credentials"));
        assert!(reason("zk://h:1?acl=creator").contains("need credentials"));
        assert!(reason("zk://u:p@h:1?acl=world").contains("creator, creator_only or open"));
    }

    /// The TLS parameters mean the same on every server backend.
    #[cfg(all(feature = "zk", feature = "etcd", feature = "redis"))]
    #[test]
    fn tls_parameters() {
        fn tls_of(url: &str) -> Option<coord_core::TlsOptions> {
            match parse(url).unwrap_or_else(|e| panic!("{url}: {e}")).target {
                Target::Zk(o) => o.tls().cloned(),
                Target::Etcd(o) => o.tls().cloned(),
                Target::Redis(o) => o.tls().cloned(),
                #[cfg(feature = "pg")]
                Target::Pg(_) => panic!("pg: see pg_urls"),
                Target::Mem => panic!("mem"),
            }
        }
        let full = coord_core::TlsOptions::new()
            .with_ca("/etc/ca dir/ca.pem")
            .with_identity("/c/client.pem", "/c/client-key.pem")
            .with_server_name("coord.example");
        for scheme in ["zk", "etcd", "redis"] {
            assert_eq!(tls_of(&format!("{scheme}://h:1")), None, "{scheme}");
            assert_eq!(
                tls_of(&format!("{scheme}://h:1?tls=false")),
                None,
                "{scheme}"
            );
            assert_eq!(
                tls_of(&format!("{scheme}://h:1?tls=true")),
                Some(coord_core::TlsOptions::new()),
                "{scheme}"
            );
            let url = format!(
                "{scheme}://h:1?ca=/etc/ca%20dir/ca.pem&cert=/c/client.pem&key=/c/client-key.pem\
                 &server_name=coord.example"
            );
            assert_eq!(tls_of(&url), Some(full.clone()), "{url}");
            assert!(reason(&format!("{scheme}://h:1?tls=yes")).contains("true or false"));
            assert!(reason(&format!("{scheme}://h:1?tls=false&ca=/x")).contains("tls=false"));
            assert!(reason(&format!("{scheme}://h:1?cert=/c.pem")).contains("private key"));
            assert!(reason(&format!("{scheme}://h:1?key=/k.pem")).contains("certificate"));
            assert!(reason(&format!("{scheme}://h:1?server_name=a..b")).contains("server_name"));
        }
        assert_eq!(tls_of("rediss://h:1"), Some(coord_core::TlsOptions::new()));
        assert_eq!(
            tls_of("rediss://u:p@h:1/2?ca=/x.pem"),
            Some(coord_core::TlsOptions::new().with_ca("/x.pem"))
        );
        assert!(reason("rediss://h:1?tls=false").contains("contradicts"));
        assert!(reason("mem://?tls=true").contains("unknown query parameter"));
    }

    #[cfg(feature = "etcd")]
    #[test]
    fn etcd_urls() {
        let p = parse("etcd://u:p%40w@h1:2379,h2/ns").unwrap_or_else(|e| panic!("{e}"));
        let Target::Etcd(o) = p.target else {
            panic!("not etcd")
        };
        assert_eq!(o.endpoints(), ["http://h1:2379", "http://h2:2379"]);
        assert_eq!(o.namespace(), "/ns");
        assert!(reason("etcd://").contains("no host"));
        assert!(reason("etcd://h:port").contains("port"));
        assert!(reason("etcd://nopassword@h").contains("user:password"));
    }

    #[cfg(feature = "redis")]
    #[test]
    fn redis_urls() {
        let p = parse("redis://app:pw@h/3?namespace=billing&session_timeout=5s")
            .unwrap_or_else(|e| panic!("{e}"));
        let Target::Redis(o) = p.target else {
            panic!("not redis")
        };
        assert_eq!(o.url(), "redis://app:pw@h:6379/3");
        assert_eq!(o.key_prefix(), "{billing}:");
        assert!(reason("redis://h/x").contains("database number"));
        assert!(reason("redis://a,b").contains("one Redis host"));
        assert!(reason("redis://h?namespace=a:b").contains("namespace"));
        assert!(reason("redis://h?session_timeout=100ms").contains("minimum"));
        assert!(reason("redis://").contains("no host"));
        for (mode, want) in [
            ("enable", coord_redis::KeyspaceEvents::Enable),
            ("require", coord_redis::KeyspaceEvents::Require),
            ("assume", coord_redis::KeyspaceEvents::Assume),
        ] {
            let p = parse(&format!("redis://h?keyspace_events={mode}"))
                .unwrap_or_else(|e| panic!("{e}"));
            let Target::Redis(o) = p.target else {
                panic!("not redis")
            };
            assert!(format!("{o:?}").contains(&format!("{want:?}")), "{o:?}");
        }
        assert!(reason("redis://h?keyspace_events=on").contains("enable, require or assume"));
    }

    /// A password with reserved characters, raw: everything before the
    /// last '@' is the user info, decoded, and the redis client gets it
    /// encoded in full.
    #[cfg(feature = "redis")]
    #[test]
    fn raw_reserved_characters_in_a_redis_password() {
        let p = parse("redis://app:pa/ss@h:1/2").unwrap_or_else(|e| panic!("{e}"));
        let Target::Redis(o) = p.target else {
            panic!("not redis")
        };
        assert_eq!(o.url(), "redis://app:pa%2Fss@h:1/2");
        assert_eq!(p.shown, "redis://app:***@h:1/2");
        let p = parse("redis://app:p@s:s?#x@h").unwrap_or_else(|e| panic!("{e}"));
        let Target::Redis(o) = p.target else {
            panic!("not redis")
        };
        assert_eq!(o.url(), "redis://app:p%40s%3As%3F%23x@h:6379");
        let p = parse("redis://app:p%2Fw@h").unwrap_or_else(|e| panic!("{e}"));
        let Target::Redis(o) = p.target else {
            panic!("not redis")
        };
        assert_eq!(o.url(), "redis://app:p%2Fw@h:6379");
    }

    #[cfg(feature = "pg")]
    fn pg_options(url: &str) -> coord_pg::PgOptions {
        match parse(url).unwrap_or_else(|e| panic!("{url}: {e}")).target {
            Target::Pg(o) => o,
            other => panic!("{url}: not postgres: {other:?}"),
        }
    }

    /// What a postgres:// URL gives `PgOptions`: the host with its default
    /// port, the user info and database encoded again in full, `sslmode`
    /// and nothing else of the query, the schema, the session timeout.
    #[cfg(feature = "pg")]
    #[test]
    fn pg_urls() {
        for scheme in ["postgres", "postgresql", "POSTGRES"] {
            let url = format!("{scheme}://app:pw@db.example/coord?session_timeout=5s");
            let p = parse(&url).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(p.backend, Backend::Postgres);
            assert_eq!(p.session_timeout, Some(Duration::from_secs(5)));
            assert_eq!(
                p.shown,
                format!("{scheme}://app:***@db.example/coord?session_timeout=5s")
            );
            let o = pg_options(&url);
            assert_eq!(o.url(), "postgres://app:pw@db.example:5432/coord");
            assert_eq!(o.schema(), "coord");
            assert!(!o.uses_tls());
        }
        let o = pg_options("postgres://app@[::1]:6543?schema=billing_2");
        assert_eq!(o.url(), "postgres://app@[::1]:6543");
        assert_eq!(o.schema(), "billing_2");
        // A password with reserved characters, raw or escaped; a database
        // name with a space.
        let o = pg_options("postgres://app:p@s:s?#x@h/my%20db");
        assert_eq!(o.url(), "postgres://app:p%40s%3As%3F%23x@h:5432/my%20db");
        let o = pg_options("postgres://a%2Fb:p%2Fw@h/db");
        assert_eq!(o.url(), "postgres://a%2Fb:p%2Fw@h:5432/db");
        // sslmode goes through; TLS is on with it or with the TLS parameters.
        let o = pg_options("postgres://app@h/db?sslmode=disable");
        assert_eq!(o.url(), "postgres://app@h:5432/db?sslmode=disable");
        assert!(!o.uses_tls());
        for url in [
            "postgres://app@h/db?sslmode=require",
            "postgres://app@h/db?sslmode=verify-full&ca=/etc/ca.pem",
            "postgres://app@h/db?tls=true",
            "postgres://app@h/db?ca=/etc/ca.pem",
            "postgres://app@h/db?cert=/c.pem&key=/k.pem&server_name=db.internal",
        ] {
            assert!(pg_options(url).uses_tls(), "{url}");
        }
        assert!(!pg_options("postgres://app@h/db?tls=false").uses_tls());
    }

    #[cfg(feature = "pg")]
    #[test]
    fn pg_urls_refused_say_why() {
        assert!(reason("postgres://h/db").contains("needs a user"));
        assert!(reason("postgres://:pw@h/db").contains("user name is empty"));
        assert!(reason("postgres://u@").contains("no host"));
        assert!(reason("postgres://u@h:x/db").contains("port"));
        assert!(reason("postgres://u@a,b/db").contains("one PostgreSQL host"));
        assert!(reason("postgres://u@h/db/x").contains("database name"));
        assert!(reason("postgres://u@h/d%zz").contains("database name"));
        assert!(reason("postgres://u@h/db?namespace=x").contains("unknown query parameter"));
        assert!(reason("postgres://u@h/db?application_name=x").contains("unknown query parameter"));
        for mode in ["verify-ca", "prefer", "allow"] {
            let r = reason(&format!("postgres://u@h/db?sslmode={mode}"));
            assert!(
                r.contains("not supported") && r.contains("verify-full"),
                "{r}"
            );
        }
        assert!(reason("postgres://u@h/db?sslmode=on").contains("disable, require or verify-full"));
        assert!(reason("postgres://u@h/db?sslmode=disable&tls=true").contains("sslmode=disable"));
        assert!(reason("postgres://u@h/db?sslmode=disable&ca=/x.pem").contains("sslmode=disable"));
        assert!(reason("postgres://u@h/db?sslmode=require&tls=false").contains("contradicts"));
        assert!(reason("postgres://u@h/db?tls=false&ca=/x.pem").contains("tls=false"));
        assert!(reason("postgres://u@h/db?cert=/c.pem").contains("private key"));
        for schema in ["Coord", "1x", "a-b", "x%20y", &"a".repeat(64)] {
            let r = reason(&format!("postgres://u@h/db?schema={schema}"));
            assert!(r.contains("schema"), "{schema}: {r}");
        }
        assert!(reason("postgres://u@h/db?session_timeout=0s").contains("positive"));
        assert!(reason("postgres://u@h/db?session_timeout=100ms").contains("minimum"));
        assert!(parse("postgres://u@h/db?session_timeout=300ms").is_ok());
    }

    /// Every reserved character (and space), raw and percent-encoded, in
    /// the password of every scheme, with URLs both good and bad after the
    /// user info: the secret's pieces appear in no error message and no
    /// `Debug` of the parsed options.
    #[test]
    fn no_password_reaches_an_error_or_debug() {
        let reserved = [
            '/', '#', '?', '@', ':', '%', '[', ']', '!', '$', '&', '\'', '(', ')', '*', '+', ',',
            ';', '=', ' ',
        ];
        let schemes = [
            "zk",
            "etcd",
            "redis",
            "rediss",
            "postgres",
            "postgresql",
            "mem",
            "foo",
        ];
        let tails = [
            "h:2181",
            "h:2181/0",
            "h:x",
            "h:1,h2:x",
            "",
            "h:1/a//b",
            "h:1?session_timeout=0s",
            "h:1?nope=1",
            "h:1/ns?namespace=bad:ns",
            "[::1",
            "h:1#frag",
            "h:1/db?sslmode=prefer",
            "h:1/db?sslmode=disable&tls=true",
            "h:1/db?schema=Bad-Name",
            "h:1/db/x",
            "h:1/db?sslmode=require",
            "h:1/d%zz",
        ];
        let mut checked = 0;
        for c in reserved {
            let encoded = format!("%{:02X}", c as u32);
            for piece in [c.to_string(), encoded] {
                let password = format!("Xq7{piece}Zk9");
                for scheme in schemes {
                    for tail in tails {
                        for url in [
                            format!("{scheme}://app:{password}@{tail}"),
                            format!("{scheme}://:{password}@{tail}"),
                            format!("{scheme}:/app:{password}@{tail}"),
                        ] {
                            let shown = match parse(&url) {
                                Ok(p) => format!("{p:?} {}", p.shown),
                                Err(e) => format!("{e} {e:?}"),
                            };
                            assert!(
                                !shown.contains("Xq7") && !shown.contains("Zk9"),
                                "{url:?} shows its password: {shown}"
                            );
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(
            checked,
            reserved.len() * 2 * schemes.len() * tails.len() * 3
        );
    }
}

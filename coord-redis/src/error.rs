//! Every Redis failure becomes a [`coord_core::Error`] here, and only here.
//!
//! Scripts report the outcomes the contract names as error replies
//! `<CODE> <path>` (see `lua/prelude.lua`); [`map`] turns those into typed
//! errors, transport failures into [`Error::ConnectionLost`], and anything
//! else into [`Error::Backend`].

use coord_core::{Error, TxnFailure, TxnStep};
use redis::RedisError;

/// The backend's name in errors.
pub(crate) const BACKEND: &str = "redis";

/// What `notify-keyspace-events` lacks, and what to set instead.
///
/// Returned (inside [`Error::Backend`]) by [`crate::connect`] when the
/// server's keyspace notifications do not cover expired keys and could not
/// (or, with [`crate::KeyspaceEvents::Require`], may not) be turned on.
#[derive(Debug, thiserror::Error)]
#[error(
    "Redis keyspace notifications for expired keys are off ({}){}: \
     coord-redis needs them (flags K and x) to reap a dead session's ephemeral nodes. Set \
     `notify-keyspace-events {wanted}` in redis.conf or run \
     `CONFIG SET notify-keyspace-events {wanted}` as an admin (or, if they are on, \
     choose KeyspaceEvents::Assume: `keyspace_events=assume` in a coord URL)",
    current.as_deref().map(|c| format!("notify-keyspace-events = {c:?}")).unwrap_or_else(|| "no expired-key notice arrived".into()),
    reason.as_deref().map(|r| format!(" and could not be turned on ({r})")).unwrap_or_default()
)]
pub struct KeyspaceEventsError {
    /// The setting found, if it could be read.
    pub current: Option<String>,
    /// The setting that would do: the current flags plus `K` and `x`.
    pub wanted: String,
    /// Why it could not be changed, if a change was tried.
    pub reason: Option<String>,
}

/// The contract's outcome for an error reply of a script, or for a failed
/// command. `expected` is the version a compare-and-set asked for.
pub(crate) fn map(err: RedisError, expected: Option<u64>) -> Error {
    if let Some(e) = tls_error(&err) {
        return e;
    }
    if is_transport(&err) {
        return Error::ConnectionLost(err.to_string());
    }
    if let Some(e) = auth_error(&err) {
        return e;
    }
    let path = err.detail().unwrap_or_default().to_owned();
    match err.code() {
        Some("NONODE") => Error::NotFound { path },
        Some("NODEEXISTS") => Error::AlreadyExists {
            path: path
                .split_once(' ')
                .map(|(_, p)| p.to_owned())
                .unwrap_or(path),
        },
        Some("BADVERSION") => Error::VersionMismatch {
            path,
            expected: expected.unwrap_or_default(),
        },
        Some("NOTEMPTY") => Error::NotEmpty { path },
        Some("LOCKLOST") => Error::LockLost { path },
        Some("NOTSUPPORTED") => Error::NotSupported {
            operation: "children of an ephemeral node",
            backend: BACKEND,
        },
        Some("SESSIONEXPIRED") => Error::SessionExpired,
        Some("OUTCOMEUNKNOWN") => Error::lost_sequential_create(&path),
        // The path is the caller's to fill in: it knows the transaction.
        Some("TXNFAILED") => {
            transaction_failed(&path).unwrap_or_else(|| Error::backend(BACKEND, err))
        }
        _ => Error::backend(BACKEND, err),
    }
}

/// A transaction's failure from the transaction script's "fence <i>
/// FENCELOST" or "op <i> <CODE>", with an empty path.
fn transaction_failed(detail: &str) -> Option<Error> {
    let mut words = detail.split(' ');
    let (kind, index, code) = (words.next()?, words.next()?, words.next()?);
    let index: usize = index.parse().ok()?;
    let step = match kind {
        "fence" => TxnStep::Fence(index),
        "op" => TxnStep::Op(index),
        _ => return None,
    };
    let failure = match code {
        "FENCELOST" => TxnFailure::FenceLost,
        "NONODE" => TxnFailure::NoNode,
        "NODEEXISTS" => TxnFailure::NodeExists,
        "BADVERSION" => TxnFailure::VersionConflict,
        "NOTEMPTY" => TxnFailure::NotEmpty,
        _ => return None,
    };
    Some(Error::TransactionFailed {
        step,
        path: String::new(),
        failure,
    })
}

/// The credential and ACL errors, or `None`: a wrong user name or
/// password (`WRONGPASS`, or the client's failed `AUTH`) and a missing one
/// (`NOAUTH`) are [`Error::Unauthenticated`]; an ACL refusing a command, a
/// key or a channel (`NOPERM`) is [`Error::PermissionDenied`]. Neither
/// message can carry the password: the server never echoes it.
pub(crate) fn auth_error(err: &RedisError) -> Option<Error> {
    let unauthenticated = |hint: &str| Error::Unauthenticated {
        backend: BACKEND,
        hint: hint.to_owned(),
    };
    match err.code() {
        Some("NOAUTH") => Some(unauthenticated(
            "the server requires a password: put user:password (or :password for the \
             default user) in the URL or options",
        )),
        Some("WRONGPASS") => Some(unauthenticated(
            "the server refused the user name or password (or the user is disabled): \
             check user:password in the URL or options",
        )),
        Some("NOPERM") => Some(Error::PermissionDenied {
            path: String::new(),
            reason: format!(
                "the Redis ACL user may not do this ({}); coord needs the scripting, \
                 key and pub/sub commands on its namespace's keys and the \
                 __keyspace@* channels",
                err.detail().unwrap_or("NOPERM")
            ),
        }),
        _ if err.kind() == redis::ErrorKind::AuthenticationFailed => Some(unauthenticated(
            "the server refused the user name or password (or the user is disabled): \
             check user:password in the URL or options",
        )),
        _ => None,
    }
}

/// The TLS failures, or `None`: the server's certificate not trusted, or
/// not valid for the host (→ [`Error::Unauthenticated`], naming `ca=`),
/// the server refusing the client's certificate or wanting one (→
/// [`Error::Unauthenticated`], naming `cert=`/`key=`), and a server that
/// does not speak TLS (→ [`Error::ConnectionLost`] saying so).
pub(crate) fn tls_error(err: &RedisError) -> Option<Error> {
    use rustls::{AlertDescription as Alert, CertificateError as Cert};

    let tls = rustls_cause(err)?;
    let unauthenticated = |hint: String| {
        Some(Error::Unauthenticated {
            backend: BACKEND,
            hint,
        })
    };
    match tls {
        rustls::Error::InvalidCertificate(
            Cert::NotValidForName | Cert::NotValidForNameContext { .. },
        ) => unauthenticated(format!(
            "TLS: the server's certificate is not valid for the host connected to ({tls}): \
             connect by a name or address the certificate carries (Redis checks the \
             URL's host; server_name= is not supported here), or fix the certificate"
        )),
        rustls::Error::InvalidCertificate(_) => unauthenticated(format!(
            "TLS: the server's certificate is not trusted ({tls}): give the authority \
             that signed it with ca=PATH (TlsOptions::with_ca); without ca= only the \
             public web roots (Mozilla's list) are trusted"
        )),
        rustls::Error::AlertReceived(Alert::CertificateRequired)
        | rustls::Error::NoCertificatesPresented => unauthenticated(format!(
            "TLS: the server requires a client certificate (mutual TLS) ({tls}): give \
             cert=PATH and key=PATH (TlsOptions::with_identity)"
        )),
        rustls::Error::AlertReceived(
            Alert::BadCertificate
            | Alert::UnknownCA
            | Alert::CertificateUnknown
            | Alert::UnsupportedCertificate
            | Alert::CertificateRevoked
            | Alert::CertificateExpired
            | Alert::AccessDenied
            | Alert::HandshakeFailure,
        ) => unauthenticated(format!(
            "TLS: the server refused the handshake ({tls}), most likely the client \
             certificate: give cert=PATH and key=PATH of a certificate signed by an \
             authority the server trusts"
        )),
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => {
            Some(Error::ConnectionLost(format!(
                "TLS: the server did not answer in TLS ({tls}): it may not have TLS on \
                 this port (use redis:// without TLS there)"
            )))
        }
        _ => None,
    }
}

/// The rustls error behind `err`, if any: the redis crate keeps it as an
/// `Arc` of the I/O error tokio-rustls wrapped it in (an `Arc`'s own
/// `source` skips the error it holds, hence the unwrapping here).
fn rustls_cause(err: &RedisError) -> Option<&rustls::Error> {
    type Shared = std::sync::Arc<dyn std::error::Error + Send + Sync>;
    let mut cause: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(err);
    while let Some(mut e) = cause {
        if let Some(shared) = e.downcast_ref::<Shared>() {
            e = &**shared;
        }
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        if let Some(tls) = e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            return Some(tls);
        }
        cause = e.source();
    }
    None
}

/// Whether the request may not have reached the server, or its answer was
/// lost: the session may be fine, and a retry may succeed.
pub(crate) fn is_transport(err: &RedisError) -> bool {
    err.is_io_error()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
        || err.is_timeout()
        || err.code() == Some("LOADING")
}

/// A reply of a shape the scripts never send.
pub(crate) fn unexpected(what: &str, value: &redis::Value) -> Error {
    Error::backend(
        BACKEND,
        format!("unexpected reply to {what} from a coord-redis script: {value:?}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server's error reply, as the client parses it.
    fn reply(line: &str) -> RedisError {
        match redis::parse_redis_value(format!("-{line}\r\n").as_bytes())
            .and_then(redis::Value::extract_error)
        {
            Err(e) => e,
            Ok(v) => panic!("{line} parsed as {v:?}"),
        }
    }

    #[test]
    fn credential_errors_are_typed() {
        let noauth = map(reply("NOAUTH Authentication required."), None);
        assert!(
            matches!(&noauth, Error::Unauthenticated { backend: "redis", hint } if hint.contains("requires a password")),
            "{noauth:?}"
        );
        let wrongpass = map(
            reply("WRONGPASS invalid username-password pair or user is disabled."),
            None,
        );
        assert!(
            matches!(&wrongpass, Error::Unauthenticated { hint, .. } if hint.contains("user:password")),
            "{wrongpass:?}"
        );
        let failed = map(
            RedisError::from((
                redis::ErrorKind::AuthenticationFailed,
                "Password authentication failed",
            )),
            None,
        );
        assert!(
            matches!(failed, Error::Unauthenticated { .. }),
            "{failed:?}"
        );
        let noperm = map(
            reply("NOPERM User u has no permissions to run the 'config|get' command"),
            None,
        );
        assert!(
            matches!(&noperm, Error::PermissionDenied { reason, .. } if reason.contains("config|get")),
            "{noperm:?}"
        );
        // A transaction's failure names its step; the caller fills in
        // the path.
        assert!(matches!(
            map(reply("TXNFAILED op 3 BADVERSION"), None),
            Error::TransactionFailed { step: TxnStep::Op(3), failure: TxnFailure::VersionConflict, path } if path.is_empty()
        ));
        assert!(matches!(
            map(reply("TXNFAILED fence 0 FENCELOST"), None),
            Error::TransactionFailed {
                step: TxnStep::Fence(0),
                failure: TxnFailure::FenceLost,
                ..
            }
        ));
        assert!(matches!(
            map(reply("TXNFAILED op x NONODE"), None),
            Error::Backend { .. }
        ));
        // Script outcomes still map as before.
        assert!(matches!(
            map(reply("NONODE /a"), None),
            Error::NotFound { path } if path == "/a"
        ));
    }
}

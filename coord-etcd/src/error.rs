//! The one place etcd's errors become [`coord_core::Error`].

use std::time::Duration;

use coord_core::Error;

/// The backend's short name.
pub(crate) const BACKEND: &str = "etcd";

// gRPC status codes (tonic's `Code` as i32), named here so the mapping below
// reads like the table it is without a direct dependency on tonic.
const CANCELLED: i32 = 1;
const UNKNOWN: i32 = 2;
const DEADLINE_EXCEEDED: i32 = 4;
const INVALID_ARGUMENT: i32 = 3;
const NOT_FOUND: i32 = 5;
const PERMISSION_DENIED: i32 = 7;
const FAILED_PRECONDITION: i32 = 9;
const UNAUTHENTICATED: i32 = 16;
const UNAVAILABLE: i32 = 14;

/// Map an etcd client error.
///
/// - the lease is gone (`requested lease not found`, a keep-alive answering
///   TTL 0) → [`Error::SessionExpired`]: the server ended the session;
/// - the connection is down or the request was cut off (transport and I/O
///   errors, `Unavailable`, `DeadlineExceeded`, `Cancelled`, a broken
///   stream) → [`Error::ConnectionLost`], retryable;
/// - wrong, missing or unwanted credentials → [`Error::Unauthenticated`]
///   (see [`auth_error`]); a role refusing the request →
///   [`Error::PermissionDenied`];
/// - anything else → [`Error::Backend`] with the client's error as source.
pub(crate) fn map(e: etcd_client::Error) -> Error {
    use etcd_client::Error as E;
    match &e {
        E::GRpcStatus(status) => {
            let code = i32::from(status.code());
            let msg = status.message();
            if let Some(mapped) = auth_error(code, msg) {
                mapped
            } else if code == NOT_FOUND && msg.contains("lease not found") {
                Error::SessionExpired
            } else if matches!(code, CANCELLED | DEADLINE_EXCEEDED | UNAVAILABLE)
                // hyper/h2 failures under a live request surface as Unknown.
                || (code == UNKNOWN && is_transport_message(msg))
            {
                Error::ConnectionLost(e.to_string())
            } else {
                Error::backend(BACKEND, e)
            }
        }
        E::LeaseKeepAliveError(msg) if msg.contains("lease not found") => Error::SessionExpired,
        E::TransportError(_) | E::IoError(_) | E::WatchError(_) | E::LeaseKeepAliveError(_) => {
            Error::ConnectionLost(e.to_string())
        }
        _ => Error::backend(BACKEND, e),
    }
}

/// The credential errors of etcd (`etcdserver: …` messages with their gRPC
/// codes), or `None`. The messages etcd sends never carry the password.
///
/// - `authentication failed, invalid user ID or password` (InvalidArgument)
///   → [`Error::Unauthenticated`]: the user name or password is wrong;
/// - `user name is empty`, `invalid auth token`, `user name not found`
///   and any other Unauthenticated status → [`Error::Unauthenticated`]:
///   the server wants credentials (or new ones);
/// - `authentication is not enabled` (FailedPrecondition) →
///   [`Error::Unauthenticated`]: credentials were given to a server that
///   takes none;
/// - `permission denied` (PermissionDenied) → [`Error::PermissionDenied`]:
///   the user's roles do not grant this key range.
pub(crate) fn auth_error(code: i32, msg: &str) -> Option<Error> {
    let unauthenticated = |hint: &str| {
        Some(Error::Unauthenticated {
            backend: BACKEND,
            hint: format!("{hint} (etcd said: {msg})"),
        })
    };
    if code == PERMISSION_DENIED || msg.contains("etcdserver: permission denied") {
        return Some(Error::PermissionDenied {
            path: String::new(),
            reason: format!(
                "the etcd user's roles do not grant this request (etcd said: {msg}); \
                 grant the user read-write on coord's key prefix"
            ),
        });
    }
    if msg.contains("invalid user ID or password") {
        return unauthenticated(
            "the server refused the user name or password: check user:password in the URL or options",
        );
    }
    if msg.contains("authentication is not enabled") && code == FAILED_PRECONDITION {
        return unauthenticated(
            "credentials were given but the server has authentication off: \
             remove user:password from the URL or options, or enable auth on the server",
        );
    }
    if code == UNAUTHENTICATED
        || (code == INVALID_ARGUMENT && msg.contains("etcdserver: user name is empty"))
    {
        return unauthenticated(
            "the server requires a user and password: put user:password in the URL or options",
        );
    }
    None
}

/// Whether a request failed before it left: the client could not connect
/// to the member it picked (refused, unreachable, DNS). Sending it again
/// cannot do anything twice.
pub(crate) fn never_sent(e: &etcd_client::Error) -> bool {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(" | ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    let text = text.to_ascii_lowercase();
    [
        "tcp connect error",
        "connection refused",
        "error trying to connect",
        "dns error",
    ]
    .iter()
    .any(|s| text.contains(s))
}

fn is_transport_message(msg: &str) -> bool {
    let msg = msg.to_ascii_lowercase();
    [
        "transport",
        "connection",
        "broken pipe",
        "h2 protocol",
        "error trying to connect",
    ]
    .iter()
    .any(|s| msg.contains(s))
}

/// A request that did not answer within the request timeout.
pub(crate) fn timed_out(after: Duration) -> Error {
    Error::ConnectionLost(format!("etcd request got no answer within {after:?}"))
}

/// A response that does not have the shape the request asked for (a bug in
/// the server or here, never a user error).
pub(crate) fn unexpected(what: &str) -> Error {
    Error::backend(BACKEND, format!("unexpected response from etcd: {what}"))
}

/// A child asked for under an ephemeral node.
pub(crate) fn ephemeral_parent() -> Error {
    Error::NotSupported {
        operation: "create under an ephemeral node",
        backend: BACKEND,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_map_to_coord_errors() {
        let lease = etcd_client::Error::LeaseKeepAliveError("lease not found".into());
        assert!(matches!(map(lease), Error::SessionExpired));
        let broken = etcd_client::Error::WatchError("channel closed".into());
        assert!(matches!(map(broken), Error::ConnectionLost(_)));
        let other = etcd_client::Error::InvalidArgs("x".into());
        assert!(matches!(
            map(other),
            Error::Backend {
                backend: "etcd",
                ..
            }
        ));
        assert!(timed_out(Duration::from_secs(1)).is_retryable());
    }

    /// The statuses etcd v3.5 sends for credential problems, with their
    /// codes as the server sends them.
    #[test]
    fn credential_errors_are_typed() {
        let wrong = auth_error(
            INVALID_ARGUMENT,
            "etcdserver: authentication failed, invalid user ID or password",
        );
        assert!(
            matches!(&wrong, Some(Error::Unauthenticated { backend: "etcd", hint }) if hint.contains("user:password")),
            "{wrong:?}"
        );
        for (code, msg) in [
            (INVALID_ARGUMENT, "etcdserver: user name is empty"),
            (UNAUTHENTICATED, "etcdserver: invalid auth token"),
            (UNAUTHENTICATED, "etcdserver: user name not found"),
            (
                FAILED_PRECONDITION,
                "etcdserver: authentication is not enabled",
            ),
        ] {
            let e = auth_error(code, msg);
            assert!(
                matches!(&e, Some(Error::Unauthenticated { hint, .. }) if hint.contains(msg)),
                "{msg}: {e:?}"
            );
            assert!(!e.is_some_and(|e| e.is_retryable()));
        }
        let denied = auth_error(PERMISSION_DENIED, "etcdserver: permission denied");
        assert!(
            matches!(&denied, Some(Error::PermissionDenied { reason, .. }) if reason.contains("permission denied")),
            "{denied:?}"
        );
        // Other statuses are left to the rest of the mapping.
        assert!(auth_error(NOT_FOUND, "etcdserver: requested lease not found").is_none());
        assert!(auth_error(INVALID_ARGUMENT, "etcdserver: key is not provided").is_none());
        assert!(auth_error(UNAVAILABLE, "transport is closing").is_none());
    }
}

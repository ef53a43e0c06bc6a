//! ZooKeeper's errors mapped to coord's, in one place: the client's errors, and
//! what a refused TLS handshake says ([`classify`]).

use coord_core::Error;
use zookeeper_client as zk;

/// The backend's short name (in errors, logs and metrics).
pub const BACKEND: &str = "zk";

/// What a failed request was about, so the mapped error can name it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    /// The node the request was about.
    pub path: &'a str,
    /// The version a compare-and-set expected, if any.
    pub expected: Option<u64>,
}

impl<'a> Target<'a> {
    /// A request about `path`, with no expected version.
    pub fn path(path: &'a str) -> Self {
        Target {
            path,
            expected: None,
        }
    }

    /// A compare-and-set on `path` at `expected`.
    pub fn versioned(path: &'a str, expected: Option<u64>) -> Self {
        Target { path, expected }
    }
}

/// Map a ZooKeeper error to coord's [`Error`].
///
/// Connection-level failures (`ConnectionLoss`, the client's own I/O and
/// timeout errors, a throttled request) become [`Error::ConnectionLost`]: the
/// request may or may not have been applied and the session may still live.
/// `SessionExpired`, `SessionMoved` and `UNKNOWNSESSION` (-12) end the
/// session. `AuthFailed` (the server refused the SASL credentials, or
/// required SASL and got none; the session is over too) is
/// [`Error::Unauthenticated`]. `NoAuth` (an ACL refusing the request) is
/// [`Error::PermissionDenied`].
pub(crate) fn map_error(err: zk::Error, target: Target<'_>) -> Error {
    let path = || target.path.to_owned();
    match err {
        zk::Error::NoNode => Error::NotFound { path: path() },
        zk::Error::NodeExists => Error::AlreadyExists { path: path() },
        zk::Error::BadVersion => Error::VersionMismatch {
            path: path(),
            expected: target.expected.unwrap_or(0),
        },
        zk::Error::NotEmpty => Error::NotEmpty { path: path() },
        zk::Error::NoChildrenForEphemerals => Error::NotSupported {
            operation: "children of an ephemeral node",
            backend: BACKEND,
        },
        zk::Error::SessionExpired | zk::Error::SessionMoved => Error::SessionExpired,
        // UNKNOWNSESSION: the server no longer knows the session (it ended
        // it between our request's send and its processing); the client
        // library has no name for the code.
        zk::Error::UnexpectedErrorCode(UNKNOWN_SESSION) => Error::SessionExpired,
        zk::Error::AuthFailed => Error::Unauthenticated {
            backend: BACKEND,
            hint: AUTH_FAILED_HINT.into(),
        },
        zk::Error::NoAuth => Error::PermissionDenied {
            path: path(),
            reason: NO_AUTH_REASON.into(),
        },
        zk::Error::ClientClosed => Error::SessionClosed,
        zk::Error::ConnectionLoss
        | zk::Error::NoHosts
        | zk::Error::Timeout
        | zk::Error::Throttled
        | zk::Error::Custom(_) => Error::ConnectionLost(err.to_string()),
        zk::Error::BadArguments(what) => Error::InvalidArgument(format!("zookeeper: {what}")),
        other => Error::backend(BACKEND, other),
    }
}

/// ZooKeeper's `UNKNOWNSESSION` (`KeeperException.Code`, -12).
const UNKNOWN_SESSION: i32 = -12;

/// What [`Error::Unauthenticated`] says to fix after `AuthFailed`.
const AUTH_FAILED_HINT: &str = "ZooKeeper refused the session's credentials (AUTH_FAILED): \
     a wrong SASL user or password, or the server requires SASL authentication and the \
     session offered none; check the user and password (ZkOptions::with_sasl_digest, \
     `zk://user:password@…?auth=sasl`) against the server's JAAS configuration";

/// What [`Error::PermissionDenied`] says after `NoAuth`.
const NO_AUTH_REASON: &str = "ZooKeeper's ACL refuses this session's identity the operation \
     (NoAuth): reading or changing a node needs the permission on the node itself, creating \
     or deleting one needs CREATE or DELETE on its parent; every process sharing a recipe \
     must use the same credentials (see coord_zk::ZkAcl)";

/// Whether a ZooKeeper error says the connection (not the request) failed,
/// so the request may or may not have been applied.
pub(crate) fn is_connection_error(err: &zk::Error) -> bool {
    matches!(
        err,
        zk::Error::ConnectionLoss
            | zk::Error::NoHosts
            | zk::Error::Timeout
            | zk::Error::Throttled
            | zk::Error::Custom(_)
    )
}

/// What a diagnosis found.
pub(crate) enum Finding {
    /// The cause, for certain: the error to return at once.
    Certain(Error),
    /// A likely cause, which one probe cannot tell from a passing fault:
    /// said in the error should the client's own attempts fail too.
    Suspected(String),
}

/// What a TLS handshake with `host_port` ended with (`text`:
/// [`error_text`]) says: a certificate refused by either side is certain;
/// a connection closed mid-handshake (or answered in something else than
/// TLS) only suggests a plaintext port, as an overloaded server may do the
/// same.
pub(crate) fn classify(host_port: &str, text: &str) -> Option<Finding> {
    if text.contains("invalid peer certificate") {
        return Some(Finding::Certain(Error::Unauthenticated {
            backend: BACKEND,
            hint: format!(
                "the certificate of the ZooKeeper server at {host_port} is not trusted ({text}): \
                 set ca= to the PEM file of the authority that signed it (TlsOptions::with_ca; \
                 without ca only the public web roots are trusted), and connect by a name or \
                 IP address the certificate carries (server_name= cannot be set on ZooKeeper)"
            ),
        }));
    }
    if text.contains("alert") {
        return Some(Finding::Certain(Error::Unauthenticated {
            backend: BACKEND,
            hint: format!(
                "the ZooKeeper server at {host_port} refused the TLS client certificate, or its \
                 absence ({text}): it requires mutual TLS; set cert= and key= \
                 (TlsOptions::with_identity) to a client certificate signed by an authority the \
                 server trusts"
            ),
        }));
    }
    if text.contains("corrupt message") || text.contains("eof") {
        return Some(Finding::Suspected(format!(
            "the server at {host_port} did not answer in TLS ({text}): it may not have TLS on \
             this port (a plaintext port needs no tls=true)"
        )));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(err: zk::Error) -> Error {
        map_error(err, Target::versioned("/a/b", Some(7)))
    }

    #[test]
    fn node_errors_name_the_path() {
        assert!(matches!(map(zk::Error::NoNode), Error::NotFound { path } if path == "/a/b"));
        assert!(
            matches!(map(zk::Error::NodeExists), Error::AlreadyExists { path } if path == "/a/b")
        );
        assert!(matches!(
            map(zk::Error::BadVersion),
            Error::VersionMismatch { path, expected: 7 } if path == "/a/b"
        ));
        assert!(matches!(map(zk::Error::NotEmpty), Error::NotEmpty { path } if path == "/a/b"));
        assert!(matches!(
            map(zk::Error::NoAuth),
            Error::PermissionDenied { path, reason }
                if path == "/a/b" && reason.contains("ACL") && reason.contains("identity")
        ));
    }

    #[test]
    fn ephemeral_parents_are_not_supported() {
        assert!(matches!(
            map(zk::Error::NoChildrenForEphemerals),
            Error::NotSupported { backend: "zk", .. }
        ));
    }

    #[test]
    fn session_ends() {
        assert!(matches!(
            map(zk::Error::SessionExpired),
            Error::SessionExpired
        ));
        assert!(matches!(
            map(zk::Error::SessionMoved),
            Error::SessionExpired
        ));
        assert!(matches!(
            map(zk::Error::UnexpectedErrorCode(-12)),
            Error::SessionExpired
        ));
        assert!(matches!(
            map(zk::Error::AuthFailed),
            Error::Unauthenticated { backend: "zk", hint } if hint.contains("password")
        ));
        assert!(matches!(map(zk::Error::ClientClosed), Error::SessionClosed));
    }

    #[test]
    fn connection_failures_are_retryable() {
        for err in [
            zk::Error::ConnectionLoss,
            zk::Error::NoHosts,
            zk::Error::Timeout,
            zk::Error::Throttled,
        ] {
            assert!(is_connection_error(&err));
            let mapped = map(err);
            assert!(mapped.is_retryable(), "{mapped:?}");
        }
        assert!(!is_connection_error(&zk::Error::NoNode));
    }

    #[test]
    fn everything_else_is_a_backend_error() {
        assert!(matches!(
            map(zk::Error::InvalidAcl),
            Error::Backend { backend: "zk", .. }
        ));
        assert!(matches!(
            map(zk::Error::BadArguments(&"bad")),
            Error::InvalidArgument(_)
        ));
    }

    #[test]
    fn handshake_failures_are_classified() {
        assert!(matches!(
            classify("h:1", "invalid peer certificate: unknownissuer"),
            Some(Finding::Certain(Error::Unauthenticated { hint, .. })) if hint.contains("ca=")
        ));
        assert!(matches!(
            classify("h:1", "received fatal alert: badcertificate"),
            Some(Finding::Certain(Error::Unauthenticated { hint, .. }))
                if hint.contains("cert=") && hint.contains("key=")
        ));
        assert!(matches!(
            classify("h:1", "tls handshake eof"),
            Some(Finding::Suspected(note)) if note.contains("did not answer in TLS")
        ));
        assert!(classify("h:1", "connection refused").is_none());
    }
}

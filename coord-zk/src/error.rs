//! ZooKeeper's errors mapped to coord's, in one place.

use coord_core::Error;
use zookeeper_client as zk;

use crate::BACKEND;

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
/// `SessionExpired`, `SessionMoved` and `AuthFailed` end the session.
/// `NoAuth` (an ACL refusing the request) is [`Error::PermissionDenied`].
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
        zk::Error::SessionExpired | zk::Error::SessionMoved | zk::Error::AuthFailed => {
            Error::SessionExpired
        }
        zk::Error::NoAuth => Error::PermissionDenied {
            path: path(),
            reason: "the node's ZooKeeper ACL does not grant this client the operation (NoAuth)"
                .into(),
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
            Error::PermissionDenied { path, reason } if path == "/a/b" && reason.contains("ACL")
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
        assert!(matches!(map(zk::Error::AuthFailed), Error::SessionExpired));
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
}

//! Every Redis failure becomes a [`coord_core::Error`] here, and only here.
//!
//! Scripts report the outcomes the contract names as error replies
//! `<CODE> <path>` (see `lua/prelude.lua`); [`map`] turns those into typed
//! errors, transport failures into [`Error::ConnectionLost`], and anything
//! else into [`Error::Backend`].

use coord_core::Error;
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
    "Redis keyspace notifications for expired keys are off (notify-keyspace-events = {current:?}){}: \
     coord-redis needs them to reap a dead session's ephemeral nodes. Set \
     `notify-keyspace-events {wanted}` in redis.conf or run \
     `CONFIG SET notify-keyspace-events {wanted}` (or choose KeyspaceEvents::Assume)",
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
    if is_transport(&err) {
        return Error::ConnectionLost(err.to_string());
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
        _ => Error::backend(BACKEND, err),
    }
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

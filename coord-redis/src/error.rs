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
        _ => Error::backend(BACKEND, err),
    }
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
        // Script outcomes still map as before.
        assert!(matches!(
            map(reply("NONODE /a"), None),
            Error::NotFound { path } if path == "/a"
        ));
    }
}

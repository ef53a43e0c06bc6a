//! Exit codes and the failure every command may end with.

use coordination::{ConnectError, Error};

/// Success; with a CMD, CMD's own status is passed through instead.
pub const OK: u8 = 0;
/// `leader`: there is no leader; `revoke`: nobody holds the lock; `demo`:
/// an invariant broke.
pub const NONE: u8 = 1;
/// Usage: bad arguments, a malformed `--url`, a backend not compiled in.
pub const USAGE: u8 = 2;
/// A `--timeout` ran out (`lock`, `queue pop`).
pub const TIMEOUT: u8 = 3;
/// The lock, leadership or membership was lost (CMD was sent SIGTERM).
pub const LOST: u8 = 4;
/// The backend failed: cannot connect, session ended (except `watch`,
/// which goes on on a new session), server error; or `queue pop` could
/// not write its item to stdout (the item stays queued).
pub const BACKEND: u8 = 5;
/// `lock --revocable`: a release was asked for (`coordctl revoke`), so CMD
/// was sent SIGTERM and, once it ended, the lock was released.
pub const REVOKED: u8 = 6;
/// The server refused this identity: credentials missing or wrong, a
/// client certificate refused or a server certificate not trusted
/// (`Error::Unauthenticated`), or an ACL refused an operation
/// (`Error::PermissionDenied`). Retrying will not help; the settings must
/// change.
pub const DENIED: u8 = 7;
/// CMD exists but could not be executed.
pub const CANNOT_EXECUTE: u8 = 126;
/// CMD was not found.
pub const NOT_FOUND: u8 = 127;

/// The exit codes, as `--help` shows them.
pub const TABLE: &str = "\
Exit status:
  0        success
  N        with -- CMD: CMD's own exit status (128+S if CMD was killed by signal S)
  1        leader: there is no leader; revoke: nobody holds the lock;
           demo: an invariant broke
  2        usage: bad arguments, malformed --url, backend not compiled in
  3        timed out (lock --timeout, queue pop --timeout)
  4        the lock, leadership or membership was lost while held
           (CMD, if running, was sent SIGTERM, then SIGKILL 10s later);
           never from join --rejoin, elect --rejoin or discover register,
           which join, campaign or register again instead
  5        backend error: cannot connect, session ended (watch: never; it
           goes on on a new session), server error;
           queue pop: stdout could not be written (the item stays queued)
  6        lock --revocable: a release was requested (coordctl revoke): CMD
           was sent SIGTERM (SIGKILL 10s later), then the lock was released
  7        refused: authentication failed (wrong or missing credentials,
           client certificate refused, server certificate not trusted) or
           permission denied (an ACL, an etcd role, a Redis ACL rule)
  126/127  CMD could not be executed / was not found
  130/143  interrupted by SIGINT/SIGTERM (everything held was released first)";

/// Why a command ends other than with a status of its own: the exit code
/// and a message for stderr.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    pub fn new(code: u8, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
        }
    }

    /// A coord error met while doing `what`.
    pub fn coord(what: &str, e: Error) -> Self {
        Self::coord_ref(what, &e)
    }

    /// [`Failure::coord`] for an error the caller does not own (one a
    /// recipe reports as an event).
    pub fn coord_ref(what: &str, e: &Error) -> Self {
        let code = match e {
            Error::Timeout(_) => TIMEOUT,
            Error::LockLost { .. } => LOST,
            Error::InvalidPath { .. } | Error::InvalidArgument(_) => USAGE,
            Error::Unauthenticated { .. } | Error::PermissionDenied { .. } => DENIED,
            _ => BACKEND,
        };
        Failure::new(code, format!("{what}: {e}"))
    }
}

impl From<ConnectError> for Failure {
    fn from(e: ConnectError) -> Self {
        match e {
            ConnectError::BackendNotCompiled {
                url,
                backend,
                feature,
            } => Failure::new(
                USAGE,
                format!(
                    "{url}: this coordctl was built without the {backend} backend; \
                     rebuild it with `--features {feature}` (or `--features all`)"
                ),
            ),
            e if e.is_usage() => Failure::new(USAGE, e.to_string()),
            e @ ConnectError::Connect {
                source: Error::Unauthenticated { .. } | Error::PermissionDenied { .. },
                ..
            } => Failure::new(DENIED, e.to_string()),
            e => Failure::new(BACKEND, e.to_string()),
        }
    }
}

//! The one error type every backend and every recipe returns.

use std::time::Duration;

/// What is wrong with a path; see [`crate::path`] for the rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathErrorKind {
    /// The path is empty.
    Empty,
    /// The path does not start with `/`.
    NotAbsolute,
    /// Two `/` in a row: an empty segment.
    EmptySegment,
    /// A `/` at the end of anything but the root.
    TrailingSlash,
    /// A `.` or `..` segment.
    RelativeSegment,
    /// NUL, a control character, or a character ZooKeeper forbids
    /// (U+007F–U+009F, U+D800–U+F8FF, U+FFF0–U+FFFF).
    ForbiddenCharacter,
    /// Longer than [`crate::path::MAX_PATH_LEN`] bytes.
    TooLong,
    /// The operation needs a path below the root, and got `/`.
    Root,
    /// `/zookeeper` or a path below it: ZooKeeper's own tree, reserved on
    /// every backend.
    Reserved,
    /// A name prefix (see [`crate::session::Session::children_prefixed`])
    /// holds a `/`: it must be the start of one name.
    NamePrefix,
}

impl std::fmt::Display for PathErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            PathErrorKind::Empty => "the path is empty",
            PathErrorKind::NotAbsolute => "the path must start with '/'",
            PathErrorKind::EmptySegment => "the path has an empty segment ('//')",
            PathErrorKind::TrailingSlash => "the path ends with '/'",
            PathErrorKind::RelativeSegment => "the path has a '.' or '..' segment",
            PathErrorKind::ForbiddenCharacter => {
                "the path has NUL, a control character or a reserved code point"
            }
            PathErrorKind::TooLong => "the path is too long",
            PathErrorKind::Root => "the operation is not allowed on the root '/'",
            PathErrorKind::Reserved => {
                "'/zookeeper' and the paths below it are reserved (ZooKeeper's own tree)"
            }
            PathErrorKind::NamePrefix => "a name prefix must not contain '/'",
        };
        f.write_str(s)
    }
}

/// Every error coord returns.
///
/// Backends map their own errors into this enum in one place each, so a caller
/// sees the same variant for the same condition on ZooKeeper, etcd, Redis and
/// in memory.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The path breaks a rule of [`crate::path`]; found before any I/O.
    #[error("invalid path {path:?}: {kind}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// Which rule it breaks.
        kind: PathErrorKind,
    },
    /// An argument other than a path is out of range (a lease count of 0,
    /// node data over [`crate::path::MAX_DATA_LEN`], …); found before any I/O.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The node does not exist.
    #[error("no node at {path}")]
    NotFound {
        /// The missing node.
        path: String,
    },
    /// A node already exists at that path.
    #[error("a node already exists at {path}")]
    AlreadyExists {
        /// The existing node.
        path: String,
    },
    /// A compare-and-set found another version.
    #[error("version mismatch at {path}: expected version {expected}")]
    VersionMismatch {
        /// The node written.
        path: String,
        /// The version the caller expected.
        expected: u64,
    },
    /// A delete was refused because the node has children.
    #[error("node {path} has children")]
    NotEmpty {
        /// The node that still has children.
        path: String,
    },
    /// The session expired: its ephemeral nodes are gone, and so is
    /// everything held through it. Final; open a new session.
    #[error("the session expired")]
    SessionExpired,
    /// The session was closed by its owner. Final.
    #[error("the session is closed")]
    SessionClosed,
    /// The connection dropped; the session may still be alive. Retryable:
    /// see [`Error::is_retryable`].
    #[error("connection lost: {0}")]
    ConnectionLost(String),
    /// A wait given a deadline ran out of time. Nothing is held.
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// A lock (or lease, or leadership) is no longer held: its node is gone,
    /// or a guarded write found its fence node replaced.
    #[error("lock lost: {path} is no longer held")]
    LockLost {
        /// The node that carried the hold.
        path: String,
    },
    /// The server refused the credentials, or wanted some and got none
    /// (a wrong user name or password, a missing password). Not retryable
    /// with the same options; `hint` says what to fix. Never carries the
    /// secret.
    #[error("{backend}: authentication failed: {hint}")]
    Unauthenticated {
        /// Which backend refused.
        backend: &'static str,
        /// What went wrong and what to fix, e.g. "the server requires a
        /// password: put user:password in the URL or options".
        hint: String,
    },
    /// The credentials were accepted, but an access rule of the server
    /// refuses this operation (a Redis ACL's NOPERM, etcd's permission
    /// denied, ZooKeeper's NoAuth).
    #[error("permission denied{}: {reason}", if path.is_empty() { String::new() } else { format!(" on {path}") })]
    PermissionDenied {
        /// The node the refused operation was about; empty when the
        /// refusal concerns no one node (a command run at connect).
        path: String,
        /// The server's explanation.
        reason: String,
    },
    /// A write's answer was lost with the connection and what the server
    /// holds now cannot tell whether it landed (another write moved the
    /// node meanwhile), so it was not repeated: it took effect once or not
    /// at all. Read the state before deciding to write again. Not
    /// retryable as is: a blind retry could apply it twice.
    #[error("outcome unknown at {path}: {detail}")]
    OutcomeUnknown {
        /// The node written.
        path: String,
        /// What was written and what the node holds now.
        detail: String,
    },
    /// A transaction ([`Session::commit`](crate::Session::commit)) was
    /// refused by the server: one of its steps did not hold, so **nothing**
    /// of it was applied. `step` names the step (a fence, or an op by its
    /// index among the ops), `path` its node, `failure` why.
    #[error("transaction refused at {step} ({path}): {failure}")]
    TransactionFailed {
        /// The step that failed.
        step: TxnStep,
        /// Its node (for a sequential create, the prefix).
        path: String,
        /// Why it failed.
        failure: TxnFailure,
    },
    /// The backend cannot do this.
    #[error("{operation} is not supported by the {backend} backend")]
    NotSupported {
        /// What was asked.
        operation: &'static str,
        /// Which backend said no.
        backend: &'static str,
    },
    /// Any other failure of a backend, with its own error as the source.
    #[error("{backend} backend error: {source}")]
    Backend {
        /// Which backend failed.
        backend: &'static str,
        /// The backend's own error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
}

impl Error {
    /// True where the same call may succeed if tried again on the same
    /// session: today only [`Error::ConnectionLost`].
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::ConnectionLost(_))
    }

    /// True where the session is over ([`Error::SessionExpired`] or
    /// [`Error::SessionClosed`]): nothing will succeed on it again.
    pub fn is_session_end(&self) -> bool {
        matches!(self, Error::SessionExpired | Error::SessionClosed)
    }

    /// Wrap a backend's own error.
    pub fn backend(
        backend: &'static str,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        Error::Backend {
            backend,
            source: source.into(),
        }
    }

    /// The error for a persistent sequential create whose answer was lost
    /// and whose node is not there when looked for: it may never have been
    /// made, or been made and already removed by another session (a queue
    /// item taken), so it is not made again (see
    /// [`PrimitiveSession::create`](crate::backend::PrimitiveSession::create)).
    /// `prefix` is the path asked for.
    pub fn lost_sequential_create(prefix: &str) -> Self {
        Error::OutcomeUnknown {
            path: prefix.to_owned(),
            detail: "the answer to this sequential create was lost and no node it made is \
                     there now: it was never made, or made and already removed by another \
                     session; it was not made again, which could have made it twice"
                .to_owned(),
        }
    }
}

/// Which step of a transaction failed (see [`Error::TransactionFailed`]).
/// Fences are numbered in the order they were added, ops in theirs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TxnStep {
    /// The transaction's fence with this index: it does not hold.
    Fence(usize),
    /// The op with this index (checks count as ops).
    Op(usize),
}

impl std::fmt::Display for TxnStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TxnStep::Fence(i) => write!(f, "fence {i}"),
            TxnStep::Op(i) => write!(f, "op {i}"),
        }
    }
}

/// Why a step of a transaction failed (see [`Error::TransactionFailed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TxnFailure {
    /// The fence node is gone or was made again (another stamp): the hold
    /// is lost.
    FenceLost,
    /// A check, set or delete found no node.
    NoNode,
    /// A create found a node already there.
    NodeExists,
    /// A check, set or delete with a version found another version.
    VersionConflict,
    /// A delete found children under the node.
    NotEmpty,
}

impl TxnFailure {
    /// What a single op's error means as a step of a transaction:
    /// `NotFound` is [`TxnFailure::NoNode`], `AlreadyExists`
    /// [`TxnFailure::NodeExists`], `VersionMismatch`
    /// [`TxnFailure::VersionConflict`], `NotEmpty` [`TxnFailure::NotEmpty`],
    /// `LockLost` [`TxnFailure::FenceLost`]; `None` for any other error
    /// (which is no refusal of the step, and stays as it is).
    pub fn of(e: &Error) -> Option<TxnFailure> {
        Some(match e {
            Error::NotFound { .. } => TxnFailure::NoNode,
            Error::AlreadyExists { .. } => TxnFailure::NodeExists,
            Error::VersionMismatch { .. } => TxnFailure::VersionConflict,
            Error::NotEmpty { .. } => TxnFailure::NotEmpty,
            Error::LockLost { .. } => TxnFailure::FenceLost,
            _ => return None,
        })
    }

    /// `e`, an op's own error, as the refusal of `step` of a transaction
    /// (see [`TxnFailure::of`]); any other error is returned as it is.
    pub fn refusal(e: Error, step: TxnStep, path: &str) -> Error {
        match TxnFailure::of(&e) {
            Some(failure) => Error::TransactionFailed {
                step,
                path: path.to_owned(),
                failure,
            },
            None => e,
        }
    }
}

impl std::fmt::Display for TxnFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TxnFailure::FenceLost => "the fence does not hold",
            TxnFailure::NoNode => "no node",
            TxnFailure::NodeExists => "a node already exists",
            TxnFailure::VersionConflict => "another version",
            TxnFailure::NotEmpty => "the node has children",
        })
    }
}

/// `Result` with coord's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

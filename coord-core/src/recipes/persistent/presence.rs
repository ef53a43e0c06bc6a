//! What a [`PersistentNode`](super::PersistentNode) reports: [`Presence`],
//! the state its task publishes ([`Shown`]), and [`PresenceWatcher`], the
//! stream of it.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use futures_core::Stream;
use tokio::sync::watch;

use crate::error::Error;
use crate::machinery::stream::ChangeWait;

/// Whether a [`PersistentNode`](super::PersistentNode) (or a
/// [`GroupMember`](super::GroupMember)) is on the server now, as its task
/// knows it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Presence {
    /// The node exists, made (or, for a TTL node, taken over) by the
    /// client's session of this generation.
    Present {
        /// Its full path (for
        /// [`PersistentMode::EphemeralSequential`](super::PersistentMode::EphemeralSequential),
        /// a new one each time it is made).
        path: String,
        /// The [`Client`](crate::Client) generation whose session made it.
        generation: u64,
    },
    /// Not there (not yet made, or gone with its session, or deleted by
    /// someone and not yet made again), or no longer kept (closed).
    Absent,
    /// The node cannot be kept: the server refused it in a way a retry
    /// does not mend (a TTL node on a ZooKeeper server without TTL nodes:
    /// [`Error::NotSupported`]; an ACL: [`Error::PermissionDenied`]). The
    /// task is over: this is the last event.
    Failed(Arc<Error>),
}

impl Presence {
    /// The node's path while [`Presence::Present`].
    pub fn path(&self) -> Option<&str> {
        match self {
            Presence::Present { path, .. } => Some(path),
            Presence::Absent | Presence::Failed(_) => None,
        }
    }
}

/// What the task publishes.
#[derive(Debug, Clone)]
pub(super) struct Shown {
    pub(super) presence: Presence,
    /// How many times `presence` changed: a watcher that sees two
    /// different `Present`s in a row knows an `Absent` came between.
    pub(super) changes: u64,
}

impl Shown {
    pub(super) fn new() -> Self {
        Shown {
            presence: Presence::Absent,
            changes: 0,
        }
    }
}

/// Follows a [`PersistentNode`](super::PersistentNode)'s
/// [`Presence`]: the first [`PresenceWatcher::next`] returns the presence
/// now, each later one the presence after the next change.
///
/// It reads the latest presence, so a node deleted and made again between
/// two reads may be seen only once; but two `Present`s are never reported
/// in a row: when the node it last reported present has gone and another
/// is present since (a new session's, or one made again after a delete),
/// it reports [`Presence::Absent`] first. So a loss is always seen before
/// the node that replaces it.
///
/// An [event stream](crate#event-streams) of `Presence`: a failure shows as
/// [`Presence::Failed`]; it ends (`None`) once the node's task is over
/// (closed, dropped, its client closed), after reporting `Absent`.
#[derive(Debug, Clone)]
pub struct PresenceWatcher {
    shown: watch::Receiver<Shown>,
    first: bool,
    /// The `changes` count and presence last returned.
    last: Option<(u64, bool)>,
    /// Returned before the next read: the `Present` that followed a
    /// synthesised `Absent`.
    queued: Option<Presence>,
    change: ChangeWait,
}

impl PresenceWatcher {
    pub(super) fn new(shown: watch::Receiver<Shown>) -> Self {
        PresenceWatcher {
            shown,
            first: true,
            last: None,
            queued: None,
            change: ChangeWait::default(),
        }
    }

    /// The presence now on the first call, then the next change; `None`
    /// once the node's task is over and its last presence was returned.
    /// The same as
    /// [`StreamExt::next`](https://docs.rs/futures/latest/futures/stream/trait.StreamExt.html#method.next).
    ///
    /// # Errors
    /// None: a failure shows as [`Presence::Failed`].
    ///
    /// # Cancel safety
    /// Cancel safe: dropped, nothing is consumed.
    pub async fn next(&mut self) -> Option<Presence> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }

    /// Return `shown`, remembering it; an `Absent` first if it replaces
    /// another `Present` than the last returned.
    fn report(&mut self, shown: Shown) -> Presence {
        let present = matches!(shown.presence, Presence::Present { .. });
        let skipped_absent = matches!(self.last, Some((n, true)) if n != shown.changes);
        self.last = Some((shown.changes, present));
        if present && skipped_absent {
            self.queued = Some(shown.presence);
            return Presence::Absent;
        }
        shown.presence
    }
}

impl Stream for PresenceWatcher {
    type Item = Presence;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Presence>> {
        let this = self.get_mut();
        if let Some(p) = this.queued.take() {
            return Poll::Ready(Some(p));
        }
        if std::mem::take(&mut this.first) {
            let shown = this.shown.borrow_and_update().clone();
            return Poll::Ready(Some(this.report(shown)));
        }
        loop {
            let open = ready!(this.change.poll_changed(&this.shown, cx));
            let unseen = this.shown.has_changed().unwrap_or(false);
            if !open && !unseen {
                return Poll::Ready(None);
            }
            let shown = this.shown.borrow_and_update().clone();
            // A value with no change of presence (published again): wait on.
            if this.last.is_some_and(|(n, _)| n == shown.changes) {
                continue;
            }
            return Poll::Ready(Some(this.report(shown)));
        }
    }
}

/// A copy of `e`, for a failure reported more than once (the error itself
/// is not `Clone`: a backend's own error is kept as its message).
pub(super) fn again(e: &Error) -> Error {
    match e {
        Error::InvalidPath { path, kind } => Error::InvalidPath {
            path: path.clone(),
            kind: *kind,
        },
        Error::InvalidArgument(s) => Error::InvalidArgument(s.clone()),
        Error::NotFound { path } => Error::NotFound { path: path.clone() },
        Error::AlreadyExists { path } => Error::AlreadyExists { path: path.clone() },
        Error::VersionMismatch { path, expected } => Error::VersionMismatch {
            path: path.clone(),
            expected: *expected,
        },
        Error::NotEmpty { path } => Error::NotEmpty { path: path.clone() },
        Error::SessionExpired => Error::SessionExpired,
        Error::SessionClosed => Error::SessionClosed,
        Error::ConnectionLost(s) => Error::ConnectionLost(s.clone()),
        Error::Timeout(d) => Error::Timeout(*d),
        Error::LockLost { path } => Error::LockLost { path: path.clone() },
        Error::Unauthenticated { backend, hint } => Error::Unauthenticated {
            backend,
            hint: hint.clone(),
        },
        Error::PermissionDenied { path, reason } => Error::PermissionDenied {
            path: path.clone(),
            reason: reason.clone(),
        },
        Error::OutcomeUnknown { path, detail } => Error::OutcomeUnknown {
            path: path.clone(),
            detail: detail.clone(),
        },
        Error::TransactionFailed {
            step,
            path,
            failure,
        } => Error::TransactionFailed {
            step: *step,
            path: path.clone(),
            failure: *failure,
        },
        Error::NotSupported { operation, backend } => Error::NotSupported { operation, backend },
        Error::Backend { backend, source } => Error::backend(backend, source.to_string()),
    }
}

//! What a session, its keep-alive task and its watches share: the
//! session's state, as coord sees it: ZooKeeper's states mapped to
//! Connected / Suspended / Expired / Closed, kept by the task of
//! [`crate::states`] that follows the client's state watcher.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use coord_core::{Error, SessionState};
use tokio::sync::watch;
use zookeeper_client as zk;

/// What the session's tasks and watches share (never the client itself, so
/// dropping the session's client closes the session).
#[derive(Debug)]
pub(crate) struct Shared {
    state: watch::Sender<SessionState>,
    /// Set by `close()` before it drops the client: a `Closed` from the
    /// client is then ours; otherwise the session was lost (→ `Expired`).
    closing: AtomicBool,
    /// The session's data watches and tree watches, kept off each other's
    /// paths (see [`crate::paths`]).
    pub(crate) paths: Arc<crate::paths::PathWatches>,
}

impl Shared {
    pub fn new() -> Arc<Self> {
        let (state, _) = watch::channel(SessionState::Connected);
        Arc::new(Shared {
            state,
            closing: AtomicBool::new(false),
            paths: Arc::default(),
        })
    }

    pub fn subscribe(&self) -> watch::Receiver<SessionState> {
        self.state.subscribe()
    }

    pub fn get(&self) -> SessionState {
        *self.state.borrow()
    }

    /// Move to `next`, unless the state is already final.
    pub fn set(&self, next: SessionState) {
        self.state.send_if_modified(|current| {
            if current.is_terminal() || *current == next {
                false
            } else {
                // Logged once, by coord-core's `Session` (target `coord`).
                tracing::trace!(from = ?*current, to = ?next, "zk session state");
                *current = next;
                true
            }
        });
    }

    pub fn mark_closing(&self) {
        self.closing.store(true, Ordering::SeqCst);
    }

    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// coord's view of a state the client reports.
    pub fn map_state(&self, state: zk::SessionState) -> SessionState {
        match state {
            zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly => {
                SessionState::Connected
            }
            zk::SessionState::Disconnected => SessionState::Suspended,
            zk::SessionState::Closed if self.is_closing() => SessionState::Closed,
            // Closed without `close()` (the client gave up on every host),
            // or authentication failed: the session is lost, not closed.
            zk::SessionState::Closed | zk::SessionState::Expired | zk::SessionState::AuthFailed => {
                SessionState::Expired
            }
        }
    }

    /// The error for an operation on a session that is over.
    pub fn ended_error(&self) -> Error {
        // A state not yet final: closing means closed, anything else lost.
        self.get().end_error().unwrap_or_else(|| {
            if self.is_closing() {
                Error::SessionClosed
            } else {
                Error::SessionExpired
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_client_states() {
        let shared = Shared::new();
        assert_eq!(
            shared.map_state(zk::SessionState::SyncConnected),
            SessionState::Connected
        );
        assert_eq!(
            shared.map_state(zk::SessionState::ConnectedReadOnly),
            SessionState::Connected
        );
        assert_eq!(
            shared.map_state(zk::SessionState::Disconnected),
            SessionState::Suspended
        );
        assert_eq!(
            shared.map_state(zk::SessionState::Expired),
            SessionState::Expired
        );
        assert_eq!(
            shared.map_state(zk::SessionState::AuthFailed),
            SessionState::Expired
        );
        assert_eq!(
            shared.map_state(zk::SessionState::Closed),
            SessionState::Expired
        );
        shared.mark_closing();
        assert_eq!(
            shared.map_state(zk::SessionState::Closed),
            SessionState::Closed
        );
    }

    #[test]
    fn final_states_stay() {
        let shared = Shared::new();
        let rx = shared.subscribe();
        shared.set(SessionState::Suspended);
        assert_eq!(*rx.borrow(), SessionState::Suspended);
        shared.set(SessionState::Connected);
        shared.set(SessionState::Expired);
        shared.set(SessionState::Connected);
        shared.set(SessionState::Closed);
        assert_eq!(*rx.borrow(), SessionState::Expired);
        assert!(matches!(shared.ended_error(), Error::SessionExpired));
    }
}

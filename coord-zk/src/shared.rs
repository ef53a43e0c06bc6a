//! What a session, its keep-alive task and its watches share: the
//! session's state, as coord sees it: ZooKeeper's states mapped to
//! Connected / Suspended / Expired / Closed, kept by a task that follows the
//! client's state watcher.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock, Weak};

use coord_core::backend::lease::LeaseClock;
use coord_core::{Error, SessionState};
use tokio::sync::watch;
use tokio::time::Instant;
use zookeeper_client as zk;

use crate::error::is_connection_error;
use crate::handle::client_in;

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

/// Follow the client's state watcher until the session ends.
///
/// A `SyncConnected` after a reconnection is `Connected` only once a
/// request sent after it is answered ([`confirm`]); until then the session
/// stays `Suspended`. zookeeper-client 0.11 reports `SyncConnected` as
/// soon as the server accepts the session on a new connection, while that
/// connection's handshake (authentication, the watches set again, a ping)
/// is still under way; a connection lost then is not reported: the client
/// goes on trying others (its backoff still growing, from the attempt that
/// failed) and says `Disconnected` only once one is made. With the server
/// out of reach it stays `SyncConnected` without any connection, requests
/// waiting, until the lease runs out; a fault that waits for the session
/// to notice the loss never ends (the flake of
/// `prim_txn_cut_or_lost_answer_never_half_applied` on a loaded machine:
/// the cut hit the handshake after a lost answer's reconnection). The
/// client sends requests only on a connection whose handshake is over,
/// and reports the loss of such a connection at once, so an answered
/// request proves the `SyncConnected` true.
pub(crate) fn follow(
    shared: Arc<Shared>,
    mut watcher: zk::StateWatcher,
    slot: Weak<RwLock<Option<zk::Client>>>,
    lease: Arc<LeaseClock>,
) {
    tokio::spawn(async move {
        let mut state = watcher.peek_state();
        loop {
            let next = shared.map_state(state);
            let confirmation = (next == SessionState::Connected && shared.get() != next)
                .then(|| confirm(&slot))
                .flatten();
            match confirmation {
                Some(answered) => {
                    tokio::select! {
                        biased;
                        // The client moved on before the answer (the
                        // connection was lost: `Disconnected` once another
                        // is made, or the session ended).
                        changed = watcher.changed() => {
                            state = changed;
                            continue;
                        }
                        sent = answered => {
                            if let Some(sent) = sent {
                                lease.renewed(sent);
                                shared.set(next);
                            }
                            // No answer: that connection is gone; the
                            // client reports the next state.
                        }
                    }
                }
                None => shared.set(next),
            }
            if state.is_terminated() {
                break;
            }
            state = watcher.changed().await;
        }
    });
}

/// Send a request now (an `exists` on the session's root, as a lease ping)
/// through the client in `slot` (`None` once the client is gone: the
/// session is closing). Resolves with the request's send time once the
/// server answered it, `None` when the connection was lost first.
fn confirm(
    slot: &Weak<RwLock<Option<zk::Client>>>,
) -> Option<impl std::future::Future<Output = Option<Instant>>> {
    let slot = slot.upgrade()?;
    let client = client_in(&slot).ok()?;
    drop(slot);
    let sent = Instant::now();
    // The request leaves now; its answer needs no client (holding one
    // would keep a dropped session open).
    let answer = client.check_stat("/");
    drop(client);
    Some(async move {
        match answer.await {
            Ok(_) => Some(sent),
            // The connection was lost, or the session is over (which the
            // state watcher reports).
            Err(
                zk::Error::SessionExpired
                | zk::Error::SessionMoved
                | zk::Error::ClientClosed
                | zk::Error::AuthFailed,
            ) => None,
            Err(e) if is_connection_error(&e) => None,
            // Any other error is the server's answer too.
            Err(_) => Some(sent),
        }
    })
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

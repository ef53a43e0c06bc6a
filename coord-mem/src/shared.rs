//! What every handle on a [`crate::MemStore`] shares: the store's lock and
//! everything behind it (the tree, the sessions' entries), and the session
//! bookkeeping done under it. Both the store and the session handles use
//! this module; it knows neither.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use coord_core::{Error, Result, SessionState};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::tree::{SessionKey, Tree};

/// What every handle on a store shares.
#[derive(Default)]
pub(crate) struct Shared {
    state: Mutex<State>,
}

impl Shared {
    /// The store's lock. Nothing panics while holding it, but should
    /// something ever do, the tree is still consistent between operations
    /// (each checks before it changes anything), so poisoning is ignored.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Everything behind the store's lock.
pub(crate) struct State {
    pub(crate) tree: Tree,
    pub(crate) sessions: HashMap<SessionKey, SessionEntry>,
    pub(crate) next_session: SessionKey,
}

impl Default for State {
    fn default() -> Self {
        State {
            tree: Tree::new(),
            sessions: HashMap::new(),
            next_session: 1,
        }
    }
}

/// The store's side of a live session. Removed when the session ends.
pub(crate) struct SessionEntry {
    /// The state every handle watches; changed only under the store lock.
    pub(crate) state: Arc<watch::Sender<SessionState>>,
    pub(crate) ttl: Duration,
    /// The session expires at this instant unless a heartbeat moves it.
    pub(crate) deadline: Instant,
    pub(crate) heartbeat_paused: bool,
    /// Suspended by [`crate::MemStore::silence`]: the store still hears the
    /// session's heartbeats, but the client hears no answers.
    pub(crate) silenced: bool,
    /// The client gave the session up
    /// ([`coord_core::backend::PrimitiveSession::abandon`]): no more heartbeats;
    /// ended as soon as the client reaches the store.
    pub(crate) abandoned: bool,
    /// Test hook: the next create's answer is lost after it was applied.
    pub(crate) lose_next_create_answer: bool,
}

impl SessionEntry {
    pub(crate) fn current(&self) -> SessionState {
        *self.state.borrow()
    }

    /// Whether a heartbeat from a live handle would reach the store now.
    pub(crate) fn beats(&self) -> bool {
        !self.heartbeat_paused
            && !self.abandoned
            && (self.current() == SessionState::Connected || self.silenced)
    }

    /// Whether the client hears the store's answers now.
    pub(crate) fn answers(&self) -> bool {
        self.current() == SessionState::Connected
    }
}

impl State {
    /// End a session the store still holds: set its final state (unless the
    /// handle already closed itself) and delete its ephemeral nodes, firing
    /// their watchers. Returns whether there was such a session.
    pub(crate) fn end_session(&mut self, key: SessionKey, end: SessionState) -> bool {
        let Some(entry) = self.sessions.remove(&key) else {
            return false;
        };
        if !entry.current().is_terminal() {
            entry.state.send_replace(end);
        }
        let deleted = self.tree.remove_ephemerals(key);
        tracing::debug!(session = key, state = ?end, deleted, "mem session ended");
        true
    }

    /// Called by every operation of a session's handle, under the lock:
    /// fails as the session's state says, expires a session whose TTL ran
    /// out, and otherwise counts as a heartbeat (also for a silenced
    /// session: the store hears it, though the client hears no answer).
    pub(crate) fn touch(
        &mut self,
        key: SessionKey,
        state: &watch::Sender<SessionState>,
        now: Instant,
    ) -> Result<()> {
        // Copied out, like in `close`: no `borrow()` guard held on.
        let current = *state.borrow();
        if let Some(end) = current.end_error() {
            return Err(end);
        }
        let Some(entry) = self.sessions.get_mut(&key) else {
            // Unreachable: a session is removed only as it turns terminal.
            return Err(Error::SessionExpired);
        };
        if entry.beats() {
            entry.deadline = now + entry.ttl;
            if entry.answers() {
                return Ok(());
            }
        } else if now >= entry.deadline {
            self.end_session(key, SessionState::Expired);
            return Err(Error::SessionExpired);
        }
        match entry.current() {
            SessionState::Suspended => Err(Error::ConnectionLost(format!(
                "mem session mem-{key} is suspended"
            ))),
            _ => Ok(()),
        }
    }

    /// The handle's `abandon`: the client gave the session up. A session the
    /// client can reach is ended now; a suspended one as soon as it is
    /// resumed (or when its TTL runs out, whichever comes first). Either
    /// way its state is `Expired` from now on.
    pub(crate) fn abandon(&mut self, key: SessionKey) {
        let Some(entry) = self.sessions.get_mut(&key) else {
            return;
        };
        if entry.current() == SessionState::Connected {
            self.end_session(key, SessionState::Expired);
        } else {
            entry.abandoned = true;
            entry.state.send_replace(SessionState::Expired);
        }
    }

    /// Whether the session's next create answer is to be lost (the flag
    /// stays set).
    pub(crate) fn loses_next_create_answer(&self, key: SessionKey) -> bool {
        self.sessions
            .get(&key)
            .is_some_and(|e| e.lose_next_create_answer)
    }

    /// Take the session's lost-create-answer flag.
    pub(crate) fn take_lost_create_answer(&mut self, key: SessionKey) -> bool {
        self.sessions
            .get_mut(&key)
            .is_some_and(|e| std::mem::take(&mut e.lose_next_create_answer))
    }

    /// The handle's `close`: end the session as `Closed`. A suspended
    /// session cannot tell the store; its handle becomes `Closed` and the
    /// store expires it when its TTL runs out.
    pub(crate) fn close(
        &mut self,
        key: SessionKey,
        state: &watch::Sender<SessionState>,
    ) -> Result<()> {
        // Copy the state out: a `borrow()` guard kept through the match
        // would deadlock `end_session`'s `send_replace` on the same lock.
        let current = *state.borrow();
        match current {
            SessionState::Connected => {
                self.end_session(key, SessionState::Closed);
                return Ok(());
            }
            s if s.is_terminal() => return Ok(()),
            // Suspended (or a state added later, neither live nor final):
            // the store cannot be told.
            _ => {}
        }
        state.send_replace(SessionState::Closed);
        Err(Error::ConnectionLost(format!(
            "mem session mem-{key} is suspended: closed here, the store ends it when its TTL runs out"
        )))
    }
}

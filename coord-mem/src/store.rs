//! [`MemStore`]: one shared tree, the sessions over it, their keep-alive
//! and the fault hooks tests use.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use coord_core::{Error, Result, Session, SessionId, SessionState};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::session::MemSession;
use crate::tree::{SessionKey, Tree};

/// The session TTL of [`MemStore::open`].
pub const DEFAULT_TTL: Duration = Duration::from_secs(10);

/// The shortest TTL a session gets (a zero TTL would spin its keep-alive).
const MIN_TTL: Duration = Duration::from_millis(1);

/// An in-process store: one tree of nodes shared by every session opened on
/// it. Cheap to clone (an `Arc`); clones are the same store.
///
/// It implements the primitive contract of [`coord_core::PrimitiveSession`]
/// exactly (it is the reference the other backends are checked against),
/// plus hooks a test uses to inject the faults a real server would:
/// [`MemStore::expire`], [`MemStore::suspend`] / [`MemStore::resume`] and
/// [`MemStore::pause_heartbeat`].
///
/// # Sessions and their TTL
/// A session keeps itself alive while any handle to it (a
/// [`coord_core::Session`] clone) exists, by a small heartbeat task that
/// runs every third of its TTL. When no handle is left without
/// [`coord_core::Session::close`] having been called (the process holding it
/// "crashed"), or its heartbeat is paused, or it is suspended, the store
/// expires it once its TTL has passed since its last heartbeat: its
/// ephemeral nodes are deleted and its state becomes
/// [`SessionState::Expired`], as a ZooKeeper server would do. Any operation
/// of a connected session counts as a heartbeat too, unless the heartbeat
/// is paused. Time is [`tokio::time`], so a test under
/// `tokio::time::pause()` runs a TTL in no time.
#[derive(Clone, Default)]
pub struct MemStore {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for MemStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.shared.lock();
        f.debug_struct("MemStore")
            .field("sessions", &state.sessions.len())
            .finish_non_exhaustive()
    }
}

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
    sessions: HashMap<SessionKey, SessionEntry>,
    next_session: SessionKey,
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
struct SessionEntry {
    /// The state every handle watches; changed only under the store lock.
    state: Arc<watch::Sender<SessionState>>,
    ttl: Duration,
    /// The session expires at this instant unless a heartbeat moves it.
    deadline: Instant,
    heartbeat_paused: bool,
    /// Suspended by [`MemStore::silence`]: the store still hears the
    /// session's heartbeats, but the client hears no answers.
    silenced: bool,
    /// The client gave the session up ([`PrimitiveSession::abandon`]): no
    /// more heartbeats; ended as soon as the client reaches the store.
    abandoned: bool,
    /// Test hook: the next create's answer is lost after it was applied.
    lose_next_create_answer: bool,
}

impl SessionEntry {
    fn current(&self) -> SessionState {
        *self.state.borrow()
    }

    /// Whether a heartbeat from a live handle would reach the store now.
    fn beats(&self) -> bool {
        !self.heartbeat_paused
            && !self.abandoned
            && (self.current() == SessionState::Connected || self.silenced)
    }

    /// Whether the client hears the store's answers now.
    fn answers(&self) -> bool {
        self.current() == SessionState::Connected
    }
}

impl State {
    /// End a session the store still holds: set its final state (unless the
    /// handle already closed itself) and delete its ephemeral nodes, firing
    /// their watchers. Returns whether there was such a session.
    fn end_session(&mut self, key: SessionKey, end: SessionState) -> bool {
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
    ) -> Result<()> {
        let now = Instant::now();
        // Copied out, like in `close`: no `borrow()` guard held on.
        let current = *state.borrow();
        match current {
            SessionState::Expired => return Err(Error::SessionExpired),
            SessionState::Closed => return Err(Error::SessionClosed),
            SessionState::Connected | SessionState::Suspended => {}
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
            SessionState::Expired | SessionState::Closed => return Ok(()),
            SessionState::Connected => {
                self.end_session(key, SessionState::Closed);
                return Ok(());
            }
            SessionState::Suspended => {}
        }
        state.send_replace(SessionState::Closed);
        Err(Error::ConnectionLost(format!(
            "mem session mem-{key} is suspended: closed here, the store ends it when its TTL runs out"
        )))
    }
}

/// A [`SessionId`] of this backend back to the store's key.
fn key_of(id: &SessionId) -> Option<SessionKey> {
    id.0.strip_prefix("mem-")?.parse().ok()
}

impl MemStore {
    /// An empty store: just the root `/`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Open a session with the [`DEFAULT_TTL`] (10 s).
    ///
    /// # Panics
    /// Outside a tokio runtime: the session's keep-alive is a tokio task.
    pub fn open(&self) -> Session {
        self.open_with_ttl(DEFAULT_TTL)
    }

    /// Open a session that expires `ttl` after its last heartbeat once no
    /// handle keeps it alive (see [`MemStore`]). A TTL under 1 ms counts as
    /// 1 ms, one over [`coord_core::limits::MAX_SESSION_TIMEOUT`] (a day) as
    /// that maximum.
    ///
    /// # Panics
    /// Outside a tokio runtime: the session's keep-alive is a tokio task.
    pub fn open_with_ttl(&self, ttl: Duration) -> Session {
        let ttl = ttl.clamp(MIN_TTL, coord_core::limits::MAX_SESSION_TIMEOUT);
        let runtime = tokio::runtime::Handle::current();
        let (tx, _) = watch::channel(SessionState::Connected);
        let tx = Arc::new(tx);
        let key = {
            let mut state = self.shared.lock();
            let key = state.next_session;
            state.next_session += 1;
            state.sessions.insert(
                key,
                SessionEntry {
                    state: Arc::clone(&tx),
                    ttl,
                    deadline: Instant::now() + ttl,
                    heartbeat_paused: false,
                    silenced: false,
                    abandoned: false,
                    lose_next_create_answer: false,
                },
            );
            key
        };
        let session = Arc::new(MemSession::new(Arc::clone(&self.shared), key, tx, ttl));
        runtime.spawn(keep_alive(
            Arc::clone(&self.shared),
            Arc::downgrade(&session),
            key,
        ));
        tracing::debug!(session = key, ?ttl, "mem session opened");
        Session::new(session)
    }

    /// Expire a session now, as a server whose session timeout ran out:
    /// its ephemeral nodes are deleted (their watchers fire), its state
    /// becomes [`SessionState::Expired`], and its operations fail with
    /// [`Error::SessionExpired`]. Returns whether the store still held it.
    pub fn expire(&self, id: &SessionId) -> bool {
        key_of(id).is_some_and(|key| self.shared.lock().end_session(key, SessionState::Expired))
    }

    /// Cut a session off as if its connection dropped: its state becomes
    /// [`SessionState::Suspended`] and its operations fail with
    /// [`Error::ConnectionLost`]. Its ephemeral nodes stay, its pending
    /// watches stay set, and its heartbeats stop reaching the store: unless
    /// resumed within its TTL it expires. Returns whether it was connected.
    pub fn suspend(&self, id: &SessionId) -> bool {
        self.with_session(id, |entry| {
            if entry.current() != SessionState::Connected {
                return false;
            }
            entry.state.send_replace(SessionState::Suspended);
            true
        })
    }

    /// Cut a session off one way: its requests (and heartbeats) still reach
    /// the store, which keeps the session alive, but the client hears no
    /// answer: its state becomes [`SessionState::Suspended`], its
    /// operations fail with [`Error::ConnectionLost`] and its lease clock
    /// is not renewed, so the client gives the session up at its lease
    /// deadline while the store still holds it (an asymmetric partition).
    /// [`MemStore::resume`] heals it. Returns whether it was connected.
    pub fn silence(&self, id: &SessionId) -> bool {
        self.with_session(id, |entry| {
            if entry.current() != SessionState::Connected {
                return false;
            }
            entry.silenced = true;
            entry.state.send_replace(SessionState::Suspended);
            true
        })
    }

    /// Lose the answer to the session's next create after the store has
    /// applied it, as a dropped connection would: the session must find the
    /// node again rather than make a second one. Returns whether the store
    /// holds the session.
    pub fn lose_next_create_answer(&self, id: &SessionId) -> bool {
        self.with_session(id, |entry| {
            entry.lose_next_create_answer = true;
            true
        })
    }

    /// Reconnect a suspended session: [`SessionState::Connected`] again,
    /// which counts as a heartbeat. A session whose TTL ran out meanwhile
    /// is expired instead. Returns whether it is connected again.
    pub fn resume(&self, id: &SessionId) -> bool {
        let Some(key) = key_of(id) else {
            return false;
        };
        let mut state = self.shared.lock();
        let now = Instant::now();
        let Some(entry) = state.sessions.get_mut(&key) else {
            return false;
        };
        if entry.abandoned {
            // The client gave it up while cut off: reaching the store
            // again, it ends the session at once.
            state.end_session(key, SessionState::Expired);
            return false;
        }
        if entry.current() != SessionState::Suspended {
            return false;
        }
        entry.silenced = false;
        if now >= entry.deadline {
            state.end_session(key, SessionState::Expired);
            return false;
        }
        entry.state.send_replace(SessionState::Connected);
        if !entry.heartbeat_paused {
            entry.deadline = now + entry.ttl;
        }
        true
    }

    /// Stop a session's heartbeats (a stalled process, a GC pause): though
    /// its handle lives and it stays `Connected`, it expires once its TTL
    /// has passed since its last heartbeat. Returns whether the store holds
    /// the session.
    pub fn pause_heartbeat(&self, id: &SessionId) -> bool {
        self.with_session(id, |entry| {
            entry.heartbeat_paused = true;
            true
        })
    }

    /// Undo [`MemStore::pause_heartbeat`] for a session not yet expired.
    /// Returns whether the store holds the session.
    pub fn resume_heartbeat(&self, id: &SessionId) -> bool {
        self.with_session(id, |entry| {
            entry.heartbeat_paused = false;
            true
        })
    }

    /// How many sessions the store holds (opened and not yet ended).
    pub fn live_sessions(&self) -> usize {
        self.shared.lock().sessions.len()
    }

    /// How many watch registrations (children watches and `wait_gone`s)
    /// the store holds: those still awaited, plus dropped ones not yet
    /// cleaned up. A dropped watch is cleaned up at the next registration
    /// on the same node, when the node changes, or by a sweep every 1024
    /// registrations, so they never pile up. A diagnostic for tests.
    pub fn registered_watches(&self) -> usize {
        self.shared.lock().tree.registered_watches()
    }

    fn with_session(&self, id: &SessionId, f: impl FnOnce(&mut SessionEntry) -> bool) -> bool {
        let Some(key) = key_of(id) else {
            return false;
        };
        self.shared.lock().sessions.get_mut(&key).is_some_and(f)
    }
}

/// A session's keep-alive: every third of its TTL, a heartbeat if a handle
/// still exists (and the session is connected and not paused); expiry once
/// its deadline passes without one. Ends with the session.
async fn keep_alive(shared: Arc<Shared>, handle: Weak<MemSession>, key: SessionKey) {
    loop {
        let wake = {
            let mut state = shared.lock();
            let now = Instant::now();
            let Some(entry) = state.sessions.get_mut(&key) else {
                return;
            };
            if let Some(handle) = handle.upgrade().filter(|_| entry.beats()) {
                entry.deadline = now + entry.ttl;
                if entry.answers() {
                    handle.lease.renewed(now);
                }
            }
            if now >= entry.deadline {
                tracing::debug!(session = key, "mem session missed its TTL");
                state.end_session(key, SessionState::Expired);
                return;
            }
            (now + (entry.ttl / 3).max(MIN_TTL)).min(entry.deadline)
        };
        tokio::time::sleep_until(wake).await;
    }
}

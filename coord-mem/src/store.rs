//! [`MemStore`]: one shared tree, the sessions over it, their keep-alive
//! and the fault hooks tests use.

use std::sync::{Arc, Weak};
use std::time::Duration;

use coord_core::{Session, SessionId, SessionState};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::session::MemSession;
use crate::shared::{SessionEntry, Shared};
use crate::tree::SessionKey;

/// The session timeout of [`MemStore::open`].
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// The shortest TTL a session gets (a zero TTL would spin its keep-alive).
const MIN_TTL: Duration = Duration::from_millis(1);

/// An in-process store: one tree of nodes shared by every session opened on
/// it. Cheap to clone (an `Arc`); clones are the same store.
///
/// It implements the primitive contract of [`coord_core::backend::PrimitiveSession`]
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

/// A [`SessionId`] of this backend back to the store's key.
fn key_of(id: &SessionId) -> Option<SessionKey> {
    id.0.strip_prefix("mem-")?.parse().ok()
}

impl MemStore {
    /// An empty store: just the root `/`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Open a session with the [`DEFAULT_SESSION_TIMEOUT`] (10 s).
    ///
    /// # Panics
    /// Outside a tokio runtime: the session's keep-alive is a tokio task.
    pub fn open(&self) -> Session {
        self.open_with_session_timeout(DEFAULT_SESSION_TIMEOUT)
    }

    /// A supervised [`coord_core::Client`] on this store: each of its
    /// sessions is opened with [`MemStore::open_with_session_timeout`]`(timeout)`,
    /// so the store's hooks ([`MemStore::expire`], `suspend`) end them as a
    /// server would, and the client opens the next one.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn client(
        &self,
        timeout: Duration,
        options: coord_core::ClientOptions,
    ) -> coord_core::Client {
        let store = self.clone();
        coord_core::Client::start(
            move || {
                let session = store.open_with_session_timeout(timeout);
                async move { Ok(session) }
            },
            options,
        )
    }

    /// Open a session that expires `timeout` (its TTL) after its last
    /// heartbeat once no handle keeps it alive (see [`MemStore`]). A
    /// timeout under 1 ms counts as 1 ms, one over
    /// [`coord_core::limits::MAX_SESSION_TIMEOUT`] (a day) as that maximum.
    ///
    /// # Panics
    /// Outside a tokio runtime: the session's keep-alive is a tokio task.
    pub fn open_with_session_timeout(&self, timeout: Duration) -> Session {
        let ttl = timeout.clamp(MIN_TTL, coord_core::limits::MAX_SESSION_TIMEOUT);
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
    /// [`Error::SessionExpired`](coord_core::Error::SessionExpired).
    /// Returns whether the store still held it.
    pub fn expire(&self, id: &SessionId) -> bool {
        key_of(id).is_some_and(|key| self.shared.lock().end_session(key, SessionState::Expired))
    }

    /// Cut a session off as if its connection dropped: its state becomes
    /// [`SessionState::Suspended`] and its operations fail with
    /// [`Error::ConnectionLost`](coord_core::Error::ConnectionLost). Its
    /// ephemeral nodes stay, its pending watches stay set, and its
    /// heartbeats stop reaching the store: unless resumed within its TTL it
    /// expires. Returns whether it was connected.
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
    /// operations fail with
    /// [`Error::ConnectionLost`](coord_core::Error::ConnectionLost) and its
    /// lease clock is not renewed, so the client gives the session up at its
    /// lease deadline while the store still holds it (an asymmetric
    /// partition).
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

    /// How many watch registrations (children watches, `wait_gone`s,
    /// `get_watch`es and tree watches) the store holds: those still
    /// awaited, plus dropped ones not yet cleaned up. A dropped watch is
    /// cleaned up at the next registration on the same node, when the node
    /// changes, or by a sweep every 1024 registrations (a tree watch: at
    /// the next change under it or the next tree watch), so they never pile
    /// up. A diagnostic for tests.
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

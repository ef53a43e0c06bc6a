//! [`Client`]: the handle users hold; its state is shared with the
//! supervisor task that opens the sessions (`supervisor.rs`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::events::ClientEvents;
use super::open::Open;
use super::state::{Current, Shared};
use super::supervisor;
use crate::backend::backoff::Backoff;
use crate::error::{Error, Result};
use crate::session::Session;

/// How a [`Client`] re-opens sessions and how long [`Client::session`]
/// waits for one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientOptions {
    backoff: Backoff,
    wait: Duration,
}

impl Default for ClientOptions {
    /// Re-open after 50 ms, doubling up to 2 s between failed attempts
    /// (jittered); [`Client::session`] waits up to 15 s.
    fn default() -> Self {
        ClientOptions {
            backoff: Backoff::new(Duration::from_millis(50), Duration::from_secs(2)),
            wait: Duration::from_secs(15),
        }
    }
}

impl ClientOptions {
    /// The backoff between a session's end and the next attempt to open
    /// one, and between failed attempts (attempt *n* waits a random time
    /// in `[c/2, c]`, `c = min(first × 2ⁿ, cap)`).
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// How long [`Client::session`] waits for a live session.
    pub fn with_wait(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }

    /// The backoff.
    pub fn backoff(&self) -> Backoff {
        self.backoff
    }

    /// How long [`Client::session`] waits.
    pub fn wait(&self) -> Duration {
        self.wait
    }
}

/// One session of a [`Client`] and its generation number (1 for the
/// client's first session, then one more for each next one).
#[derive(Debug, Clone)]
pub struct Generation {
    /// The generation number.
    pub number: u64,
    /// The session.
    pub session: Session,
}

/// Dropped with the last [`Client`] handle: stops the supervisor, which
/// closes the session.
struct Owner(Arc<Shared>);

impl Drop for Owner {
    fn drop(&mut self) {
        self.0.stop.send_replace(true);
    }
}

/// A supervised client: it keeps one live session and, once that session
/// has ended (expired on the server, given up at its lease deadline), opens
/// the next one, after a capped, jittered backoff; never two live at once.
/// Cheap to clone; the last handle dropped closes it.
///
/// Open one from a URL with `coordination::client(url)` or
/// `coordination::Connector::client(options)` (the first session is opened there,
/// so a wrong address or credential fails at once), or from a backend's own
/// options with [`Client::start`] and that backend's `connect`, e.g.
/// `Client::start(move || coord_zk::connect(zk_options.clone()), ClientOptions::default())`.
///
/// A session is final once it has ended, so what was *held* on it (a lock,
/// a lease, a leadership term, a queue delivery) is gone for good and is
/// reported lost by its own recipe: the client never takes it again by
/// itself. What a service *declares* persistent comes back on each new
/// session through the recipes built on the client:
/// [`PersistentNode`](crate::recipes::PersistentNode),
/// [`GroupMember`](crate::recipes::GroupMember),
/// [`RejoiningLatch`](crate::recipes::RejoiningLatch),
/// [`RejoiningPartitioner`](crate::recipes::RejoiningPartitioner), and
/// the caches' [`follow`](crate::recipes::TreeCache::follow).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> coord_core::Result<()> {
/// use coord_core::client::{Client, ClientEvent, ClientOptions};
/// let store = coord_mem::MemStore::new();
/// let opener = store.clone();
/// let client = Client::start(move || { let s = opener.clone(); async move { Ok(s.open()) } }, ClientOptions::default());
/// let mut events = client.events();
/// let first = client.session().await?;
/// store.expire(&first.id()); // the server ends it
/// let second = client.next_session(1).await?;
/// assert_ne!(first.id(), second.session.id());
/// assert_eq!(second.number, 2);
/// assert!(matches!(events.next().await, Some(ClientEvent::Started { generation: 1, .. })));
/// assert!(matches!(events.next().await, Some(ClientEvent::Lost { generation: 1, .. })));
/// client.close().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
    _owner: Arc<Owner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = self.shared.current.borrow();
        f.debug_struct("Client")
            .field("generation", &c.generation)
            .field("session", &c.session.as_ref().map(Session::id))
            .field("closed", &c.closed)
            .finish()
    }
}

impl Client {
    /// Start a client that opens its sessions with `open`. It returns at
    /// once; the first session opens in the background
    /// ([`Client::session`] waits for it).
    ///
    /// # Panics
    /// Outside a tokio runtime: the supervisor is a task on it, and that
    /// runtime must outlive the client.
    pub fn start(open: impl Open, options: ClientOptions) -> Client {
        let shared = Arc::new(Shared {
            current: watch::Sender::new(Current::default()),
            subscribers: Mutex::new(Vec::new()),
            stop: watch::Sender::new(false),
            done: watch::Sender::new(false),
            close_error: Mutex::new(None),
            wait: options.wait,
        });
        tokio::spawn(supervisor::supervise(
            Arc::clone(&shared),
            Box::new(open),
            options.backoff,
        ));
        Client {
            _owner: Arc::new(Owner(Arc::clone(&shared))),
            shared,
        }
    }

    /// The live session, waiting for one up to the client's wait
    /// ([`ClientOptions::with_wait`], 15 s by default).
    ///
    /// # Errors
    /// [`Error::Timeout`] when no session is live within the wait (the
    /// client goes on trying); [`Error::SessionClosed`] once the client is
    /// closed.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn session(&self) -> Result<Session> {
        self.session_within(self.shared.wait).await
    }

    /// [`Client::session`], waiting up to `wait`.
    ///
    /// # Errors
    /// As [`Client::session`].
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn session_within(&self, wait: Duration) -> Result<Session> {
        match tokio::time::timeout(wait, self.next_session(0)).await {
            Ok(g) => g.map(|g| g.session),
            Err(_) => Err(Error::Timeout(wait)),
        }
    }

    /// The live session now, if there is one.
    pub fn current(&self) -> Option<Session> {
        let c = self.shared.current.borrow();
        c.session.clone().filter(|s| !s.state().is_terminal())
    }

    /// The generation of the newest session opened (0 before the first).
    pub fn generation(&self) -> u64 {
        self.shared.current.borrow().generation
    }

    /// Wait for a live session of a generation after `after` (0: any),
    /// with no time limit: how a recipe that comes back waits for the next
    /// session to re-establish itself on.
    ///
    /// # Errors
    /// [`Error::SessionClosed`] once the client is closed.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn next_session(&self, after: u64) -> Result<Generation> {
        let mut rx = self.shared.current.subscribe();
        loop {
            {
                let c = rx.borrow_and_update();
                if c.closed {
                    return Err(Error::SessionClosed);
                }
                if let Some(s) = &c.session {
                    if c.generation > after && !s.state().is_terminal() {
                        return Ok(Generation {
                            number: c.generation,
                            session: s.clone(),
                        });
                    }
                }
            }
            if rx.changed().await.is_err() {
                return Err(Error::SessionClosed);
            }
        }
    }

    /// The client's events from now on (see [`ClientEvent`](super::ClientEvent)), beginning
    /// with the live session's `Started` (and `Suspended`, if it is) when
    /// there is one.
    pub fn events(&self) -> ClientEvents {
        self.shared.subscribe()
    }

    /// Whether [`Client::close`] was called (or every handle dropped).
    pub fn is_closed(&self) -> bool {
        *self.shared.stop.borrow()
    }

    /// Stop opening sessions and close the live one (waiting for its work
    /// that must finish, as [`Session::close`]). Recipes built on the
    /// client then end as they do when their session closes. Calling it
    /// again is `Ok`.
    ///
    /// # Errors
    /// The backend's, if the live session could not be closed (the server
    /// ends it by its timeout); to the first caller only.
    ///
    /// # Cancel safety
    /// Cancel safe in effect: the client is stopped at the first poll and
    /// the session is closed in the background either way.
    pub async fn close(&self) -> Result<()> {
        self.shared.stop.send_replace(true);
        let mut done = self.shared.done.subscribe();
        let _ = done.wait_for(|d| *d).await;
        let e = self
            .shared
            .close_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        e.map_or(Ok(()), Err)
    }
}

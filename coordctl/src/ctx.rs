//! What every command gets: the connector, the sessions it opened (closed
//! at exit, which releases whatever they hold), CMD, and the signal flag.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coordination::{Client, Connector, Session};

use crate::child::Children;
use crate::exit::Failure;
use crate::sessions::Sessions;

/// How long closing one session may take at exit.
pub const CLOSE_PATIENCE: Duration = Duration::from_secs(5);

pub struct Ctx {
    pub connector: Connector,
    pub children: Children,
    interrupted: Arc<AtomicBool>,
    sessions: Sessions,
    /// How many [`Shield`]s are up.
    shields: AtomicUsize,
}

/// While one is alive, a SIGINT or SIGTERM does not cut the command short:
/// `main` lets it finish (see [`Ctx::shield`]).
pub struct Shield<'a>(&'a AtomicUsize);

impl Drop for Shield<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Ctx {
    pub fn new(connector: Connector, interrupted: Arc<AtomicBool>) -> Self {
        Ctx {
            sessions: Sessions::new(connector.clone()),
            connector,
            children: Children::default(),
            interrupted,
            shields: AtomicUsize::new(0),
        }
    }

    /// Open a session, to be closed at exit.
    pub async fn open(&self) -> Result<Session, Failure> {
        Ok(self.sessions.open().await?)
    }

    /// Open a supervised client: it opens a new session after each one
    /// ends. Closed at exit.
    pub async fn client(&self) -> Result<Client, Failure> {
        Ok(self.sessions.client().await?)
    }

    /// Until the guard is dropped, a first SIGINT or SIGTERM lets the
    /// command finish instead of dropping its future: for a step that must
    /// not stop half way (acknowledging a queue item already printed). A
    /// second signal stops it all the same.
    pub fn shield(&self) -> Shield<'_> {
        self.shields.fetch_add(1, Ordering::SeqCst);
        Shield(&self.shields)
    }

    /// Whether a [`Shield`] is up.
    pub fn shielded(&self) -> bool {
        self.shields.load(Ordering::SeqCst) > 0
    }

    /// Whether SIGINT or SIGTERM arrived.
    pub fn interrupted(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }

    /// Close every client (its live session) and session: the server
    /// deletes their ephemeral nodes, so every lock, leadership, membership
    /// and queue lease is released.
    /// [`Session::close`] first waits for the session's clean-up still
    /// running in the background (a dropped guard's delete, a queue item
    /// given back), which takes a round trip on a server that answers.
    /// Bounded: a server that does not answer within [`CLOSE_PATIENCE`]
    /// ends the session at its timeout instead, which releases all the same
    /// (a leased queue item is then delivered again only after that).
    pub async fn close_all(&self) {
        for c in self.sessions.take_clients() {
            close_within_patience(c.close()).await;
        }
        for s in self.sessions.take_all() {
            close_within_patience(s.close()).await;
        }
    }
}

/// Await one close, for at most [`CLOSE_PATIENCE`], saying on stderr what
/// went wrong.
async fn close_within_patience(close: impl std::future::Future<Output = coordination::Result<()>>) {
    match tokio::time::timeout(CLOSE_PATIENCE, close).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => eprintln!("coordctl: closing the session: {e}"),
        Err(_) => {
            eprintln!("coordctl: closing the session timed out; the server ends it at its timeout")
        }
    }
}

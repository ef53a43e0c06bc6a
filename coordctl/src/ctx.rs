//! What every command gets: the connector, the sessions it opened (closed
//! at exit, which releases whatever they hold), CMD, and the signal flag.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coord::{Connector, Session};

use crate::child::Children;
use crate::exit::Failure;

pub struct Ctx {
    pub connector: Connector,
    pub children: Children,
    interrupted: Arc<AtomicBool>,
    sessions: Mutex<Vec<Session>>,
}

impl Ctx {
    pub fn new(connector: Connector, interrupted: Arc<AtomicBool>) -> Self {
        Ctx {
            connector,
            children: Children::default(),
            interrupted,
            sessions: Mutex::new(Vec::new()),
        }
    }

    /// Open a session, to be closed at exit.
    pub async fn open(&self) -> Result<Session, Failure> {
        let session = self.connector.connect().await?;
        if let Ok(mut all) = self.sessions.lock() {
            all.push(session.clone());
        }
        Ok(session)
    }

    /// Whether SIGINT or SIGTERM arrived.
    pub fn interrupted(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }

    /// Close every session: the server deletes their ephemeral nodes, so
    /// every lock, leadership and membership is released. Bounded: a
    /// server that does not answer ends them at their timeout instead.
    pub async fn close_all(&self) {
        let all = self
            .sessions
            .lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default();
        for s in all {
            match tokio::time::timeout(Duration::from_secs(5), s.close()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => eprintln!("coordctl: closing the session: {e}"),
                Err(_) => eprintln!(
                    "coordctl: closing the session timed out; the server ends it at its timeout"
                ),
            }
        }
    }
}

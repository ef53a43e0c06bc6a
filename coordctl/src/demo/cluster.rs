//! Where the demo runs: opens sessions, ends them as a crash would, and
//! scales time to the backend.

use std::time::Duration;

use coordination::{default_mem_store, Backend, ConnectError, Connector, Session};

use crate::sessions::Sessions;

/// The demo's sessions on one backend, under one fresh directory. Every
/// session it opens is kept, to be closed by [`Cluster::close_all`].
pub struct Cluster {
    sessions: Sessions,
    root: String,
    /// One demo "hour".
    pub hour: Duration,
}

impl Cluster {
    /// The demo on `connector`'s backend, under `/coord-demo/<uuid>`; one
    /// "hour" is 40 ms in memory, 250 ms on a server.
    pub fn new(connector: &Connector) -> Self {
        let mem = connector.backend() == Backend::Mem;
        Cluster {
            sessions: Sessions::new(connector.clone()),
            root: format!("/coord-demo/{}", uuid::Uuid::new_v4().simple()),
            hour: if mem {
                Duration::from_millis(40)
            } else {
                Duration::from_millis(250)
            },
        }
    }

    /// The directory everything of this run lives under.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// A fresh session (kept, to be closed at the end).
    pub async fn open(&self) -> Result<Session, ConnectError> {
        self.sessions.open().await
    }

    /// The demo's path for `rel` (which starts with `/`).
    pub fn path(&self, rel: &str) -> String {
        format!("{}{rel}", self.root)
    }

    /// End `session` as the server would end a crashed client's.
    pub async fn crash(&self, session: &Session) {
        if self.sessions.connector().backend() == Backend::Mem {
            default_mem_store().expire(&session.id());
        } else if let Err(e) = session.close().await {
            tracing::warn!(error = %e, "demo: closing a crashed session failed");
        }
    }

    /// Close every session opened, each given at most 5 s.
    pub async fn close_all(&self) {
        for s in self.sessions.take_all() {
            let _ = tokio::time::timeout(Duration::from_secs(5), s.close()).await;
        }
    }
}

//! The state a [`Client`](super::Client)'s handles share with its
//! supervisor task: the live session, the event subscribers, the stop flag.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use super::events::{ClientEvent, ClientEvents};
use crate::error::Error;
use crate::session::Session;

/// What the supervisor publishes: the live session, if any.
#[derive(Clone, Default)]
pub(super) struct Current {
    pub(super) generation: u64,
    /// The generation's session while it lives (`None` between sessions).
    pub(super) session: Option<Session>,
    pub(super) suspended: bool,
    pub(super) closed: bool,
}

/// State shared by every [`Client`] handle and the supervisor task.
pub(super) struct Shared {
    pub(super) current: watch::Sender<Current>,
    /// Every [`ClientEvents`] still listening. Events are sent, and
    /// `current` changed, under this lock, so a new subscriber's first
    /// events (the current session's) are neither missed nor repeated.
    pub(super) subscribers: Mutex<Vec<mpsc::UnboundedSender<ClientEvent>>>,
    /// Set to stop the supervisor.
    pub(super) stop: watch::Sender<bool>,
    /// Set by the supervisor when it has stopped (its session closed).
    pub(super) done: watch::Sender<bool>,
    /// The error of closing the last session, for the first
    /// [`Client::close`] to return.
    pub(super) close_error: Mutex<Option<Error>>,
    /// [`ClientOptions::wait`].
    pub(super) wait: Duration,
}

impl Shared {
    /// Change the published state and report `event`, as one step.
    pub(super) fn publish(&self, change: impl FnOnce(&mut Current), event: ClientEvent) {
        let mut subscribers = self.subscribers.lock().unwrap_or_else(|e| e.into_inner());
        self.current.send_modify(change);
        match &event {
            ClientEvent::Lost { .. } | ClientEvent::OpenFailed { .. } => {
                tracing::warn!(target: crate::telemetry::TARGET, ?event, "coord client")
            }
            _ => tracing::info!(target: crate::telemetry::TARGET, ?event, "coord client"),
        }
        subscribers.retain(|s| s.send(event.clone()).is_ok());
    }

    pub(super) fn subscribe(&self) -> ClientEvents {
        let mut subscribers = self.subscribers.lock().unwrap_or_else(|e| e.into_inner());
        let (tx, rx) = mpsc::unbounded_channel();
        let now = self.current.borrow().clone();
        if let Some(session) = &now.session {
            let (generation, id) = (now.generation, session.id());
            let _ = tx.send(ClientEvent::Started { generation, id });
            if now.suspended {
                let id = session.id();
                let _ = tx.send(ClientEvent::Suspended { generation, id });
            }
        }
        if now.closed {
            let _ = tx.send(ClientEvent::Closed);
        } else {
            subscribers.push(tx);
        }
        ClientEvents { rx }
    }
}

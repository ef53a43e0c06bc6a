//! [`ClientEvent`]: what a [`Client`](super::Client) reports about its
//! sessions, and [`ClientEvents`], the stream of them.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_core::Stream;
use tokio::sync::mpsc;

use crate::backend::node::SessionId;
use crate::error::Error;

/// One change of a [`Client`](super::Client)'s sessions. Each session the
/// client opens is one *generation*, numbered from 1; its events come in
/// the order `Started`, then any number of `Suspended` / `Reconnected`
/// pairs, then `Lost` (or `Closed` when the client closes). The next
/// generation's `Started` always comes after the last one's `Lost`: never
/// two live sessions at once.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ClientEvent {
    /// A new session is open and connected.
    Started {
        /// Its generation (1 for the client's first session).
        generation: u64,
        /// Its id on the server.
        id: SessionId,
    },
    /// The session's connection dropped; the server may still hold it
    /// (its holds live on until the lease deadline).
    Suspended {
        /// The session's generation.
        generation: u64,
        /// Its id.
        id: SessionId,
    },
    /// The connection came back in time: the same session goes on.
    Reconnected {
        /// The session's generation.
        generation: u64,
        /// Its id.
        id: SessionId,
    },
    /// The session ended (expired on the server, given up at its lease
    /// deadline, or closed by a holder of a handle): everything held on it
    /// is gone. The client opens the next generation after its backoff.
    Lost {
        /// The session's generation.
        generation: u64,
        /// Its id.
        id: SessionId,
        /// Why: [`Error::SessionExpired`] or [`Error::SessionClosed`].
        reason: Arc<Error>,
    },
    /// Opening a new session failed; the client tries again after its
    /// backoff.
    OpenFailed {
        /// How many attempts in a row have failed (1 for the first).
        attempt: u32,
        /// Why.
        error: Arc<Error>,
    },
    /// The client was closed: it opens no more sessions. The last event.
    Closed,
}

/// The stream of a client's [`ClientEvent`]s, made by
/// [`Client::events`](super::Client::events): every event from then on,
/// none lost, in order; it ends after [`ClientEvent::Closed`].
#[derive(Debug)]
pub struct ClientEvents {
    pub(super) rx: mpsc::UnboundedReceiver<ClientEvent>,
}

impl ClientEvents {
    /// The next event; `None` once the client is closed and every event
    /// was read.
    ///
    /// # Errors
    /// None.
    ///
    /// # Cancel safety
    /// Cancel safe: a dropped call loses no event.
    pub async fn next(&mut self) -> Option<ClientEvent> {
        self.rx.recv().await
    }

    /// The next event if one is waiting, without waiting.
    pub fn try_next(&mut self) -> Option<ClientEvent> {
        self.rx.try_recv().ok()
    }
}

impl Stream for ClientEvents {
    type Item = ClientEvent;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ClientEvent>> {
        self.rx.poll_recv(cx)
    }
}

//! [`Open`]: how a [`Client`](super::Client) opens each of its sessions.

use std::future::Future;
use std::pin::Pin;

use crate::error::Result;
use crate::session::Session;

/// The future [`Open::open`] returns.
pub type OpenFuture = Pin<Box<dyn Future<Output = Result<Session>> + Send>>;

/// Opens one new session each time it is called: a backend's `connect`
/// with its options, a `MemStore`'s `open`, the facade's `Connector`.
/// Every closure `Fn() -> impl Future<Output = Result<Session>>` is one.
///
/// An error is retried after the client's backoff, forever, until the
/// client is closed (the client reports each failure as
/// [`ClientEvent::OpenFailed`](super::ClientEvent::OpenFailed)).
pub trait Open: Send + Sync + 'static {
    /// Open a new session.
    fn open(&self) -> OpenFuture;
}

impl<F, Fut> Open for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Session>> + Send + 'static,
{
    fn open(&self) -> OpenFuture {
        Box::pin(self())
    }
}

//! One-shot and persistent watches: [`Watch`] fires once, [`TreeWatch`]
//! reports every change under a subtree.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use futures_core::Stream;

use crate::error::Result;

/// What a [`TreeWatch`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TreeChange {
    /// The node at this path (the watched root or any node under it) was
    /// made, had its data set, or was deleted. Read it again to learn
    /// which: the event says only that it changed. One event may stand for
    /// several changes of the node (coalesced); none is ever dropped.
    Changed(String),
    /// Changes may have been missed (the connection was lost and the
    /// server does not replay what happened meanwhile, or its history was
    /// compacted): read the whole subtree again. Changes after this event
    /// are reported again as they happen.
    Resync,
}

/// A persistent watch on a subtree, from
/// [`PrimitiveSession::watch_tree`](crate::backend::PrimitiveSession::watch_tree): every change of the root or of a node
/// under it, in the order the server applied them, until it is dropped or
/// the session ends.
///
/// An [event stream](crate#event-streams) of `Result<TreeChange>`: an
/// error (the session's end) is its last item.
///
/// # Cancel safety
/// [`TreeWatch::next`] is cancel safe: an event not returned stays queued.
/// Dropping the watch unregisters it on the server.
#[must_use = "a tree watch does nothing unless read"]
pub struct TreeWatch {
    rx: tokio::sync::mpsc::UnboundedReceiver<Result<TreeChange>>,
    /// The error that ended the watch was yielded.
    over: bool,
    /// The backend's task feeding `rx`, aborted when the watch is dropped
    /// (dropping what it owns removes the watch from the server).
    feed: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for TreeWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeWatch").finish_non_exhaustive()
    }
}

impl Drop for TreeWatch {
    fn drop(&mut self) {
        self.feed.abort();
    }
}

impl TreeWatch {
    /// A tree watch fed through `rx` by a backend's task `feed`. The task
    /// sends the error that ended the watch (the session's end) as its last
    /// item; it is aborted when the watch is dropped, so it should own
    /// whatever keeps the server-side watch (a stream, a watcher).
    pub fn new(
        rx: tokio::sync::mpsc::UnboundedReceiver<Result<TreeChange>>,
        feed: tokio::task::JoinHandle<()>,
    ) -> Self {
        TreeWatch {
            rx,
            over: false,
            feed,
        }
    }

    /// The next change; `None` once the error that ended the watch was
    /// returned. The same as
    /// [`StreamExt::next`](https://docs.rs/futures/latest/futures/stream/trait.StreamExt.html#method.next).
    ///
    /// # Errors
    /// `Some(Err)`, once: the error that ended the watch (the session's
    /// end, or [`Error::ConnectionLost`](crate::Error::ConnectionLost)
    /// when the backend could not keep it); `SessionClosed` if the backend
    /// dropped it without saying why.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn next(&mut self) -> Option<Result<TreeChange>> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }
}

impl Stream for TreeWatch {
    type Item = Result<TreeChange>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.over {
            return Poll::Ready(None);
        }
        let r = ready!(this.rx.poll_recv(cx)).unwrap_or(Err(crate::Error::SessionClosed));
        this.over = r.is_err();
        Poll::Ready(Some(r))
    }
}

/// A one-shot notification: resolves `Ok(())` at the first change after the
/// read it was set with, or with the error that ended the session. It may
/// fire for a change that turns out not to matter (callers read again);
/// it never misses one.
///
/// # Cancel safety
/// Dropping it unregisters interest; no change is consumed for anyone else.
#[must_use = "a watch does nothing unless awaited"]
pub struct Watch(Pin<Box<dyn Future<Output = Result<()>> + Send + 'static>>);

impl Watch {
    /// Wrap a backend's future.
    pub fn new(fut: impl Future<Output = Result<()>> + Send + 'static) -> Self {
        Watch(Box::pin(fut))
    }
}

impl Future for Watch {
    type Output = Result<()>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.0.as_mut().poll(cx)
    }
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Watch")
    }
}

//! [`SharedValueWatcher`]: the changes of a shared value's node, decoded by
//! its codec, never missing the latest one.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::sync::watch;

use super::codec::{decode_at, Codec, RawBytes};
use super::value::{SharedValue, Versioned};
use crate::backend::watch::Watch;
use crate::error::{Error, Result};
use crate::machinery::retry::{backoff, list_watch_retrying, settle_watch};
use crate::machinery::stream::{Advance, Resumable};
use crate::path;

impl SharedValue {
    /// Follow the value; see [`SharedValueWatcher`].
    pub fn watch(&self) -> SharedValueWatcher {
        SharedValueWatcher::new(self.clone(), Arc::new(RawBytes))
    }
}

/// The changes of a shared value, one [`SharedValueWatcher::next`] at a time
/// (Curator's `SharedValueListener`, `SharedCountListener`). The first
/// `next` returns the value now; each later one waits for a change and
/// returns the value then, with its version: `Some(Versioned)`, or `None`
/// while the node does not exist (deleted, or never written: a watcher
/// never makes the node). Each new version is reported, even one that
/// holds the same bytes; a node deleted and made again is reported missing
/// if a read saw it missing, and then as it is made.
///
/// Changes between two calls are coalesced: a burst of writes may be seen
/// as its last value only, but the latest value is never missed — the
/// watch is armed by the read that returns a value (a data watch), or,
/// while the node is missing, on its parent's children, so its return is
/// seen (that makes a missing parent directory). Unlike Curator's, it
/// survives the node's deletion and lost connections.
///
/// An [event stream](crate#event-streams) of `Result<Option<Versioned<T>>>`
/// (`T` is `Vec<u8>` for a [`SharedValue`], the codec's type for a
/// [`TypedSharedValue`](super::TypedSharedValue)). An
/// [`Error::InvalidArgument`] (data the codec cannot decode) or a lost
/// connection leaves it going; any other error is its last item. Once its
/// value is [closed](SharedValue::close), it yields
/// [`Error::SessionClosed`] once, then ends.
pub struct SharedValueWatcher<T = Vec<u8>, C = RawBytes> {
    follow: Resumable<Follow>,
    closed: watch::Receiver<bool>,
    /// The close was reported (`Err(SessionClosed)`): only `None` now.
    ended: bool,
    node: String,
    codec: Arc<C>,
    value: PhantomData<fn() -> T>,
}

impl<T, C> fmt::Debug for SharedValueWatcher<T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedValueWatcher")
            .field("follow", &self.follow)
            .finish_non_exhaustive()
    }
}

impl<T, C: Codec<T>> SharedValueWatcher<T, C> {
    /// A watcher of `value`'s node, decoding with `codec`.
    pub(super) fn new(value: SharedValue, codec: Arc<C>) -> Self {
        SharedValueWatcher {
            closed: value.closed_watch(),
            ended: false,
            node: value.path().to_owned(),
            follow: Resumable::new(Follow {
                value,
                last: None,
                watch: None,
            }),
            codec,
            value: PhantomData,
        }
    }

    /// The next value: the current one on the first call, then the first
    /// one of a version other than the last one returned (`None` inside:
    /// the node is missing); `None` after an error other than
    /// `InvalidArgument` or `ConnectionLost`.
    /// The same as
    /// [`StreamExt::next`](https://docs.rs/futures/latest/futures/stream/trait.StreamExt.html#method.next).
    ///
    /// # Errors
    /// `Some(Err)`: [`Error::InvalidArgument`] when the node holds data
    /// the codec cannot decode (the watcher stays usable: the next call
    /// waits for the next change); [`Error::SessionClosed`] once the value
    /// is closed; the session's end; backend errors. Lost connections are
    /// retried.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped while waiting, no change is consumed; the next
    /// call goes on from where this one was.
    pub async fn next(&mut self) -> Option<Result<Option<Versioned<T>>>> {
        std::future::poll_fn(|cx| self.poll_item(cx)).await
    }

    fn poll_item(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Option<Versioned<T>>>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        // Closed before or during this step: the end, reported once, as a
        // closed cache reports its own.
        if *self.closed.borrow() {
            self.ended = true;
            return Poll::Ready(Some(Err(Error::SessionClosed)));
        }
        let item = std::task::ready!(self.follow.poll_next(cx));
        if *self.closed.borrow() {
            self.ended = true;
            return Poll::Ready(Some(Err(Error::SessionClosed)));
        }
        Poll::Ready(item.map(|r| {
            r.and_then(|seen| {
                seen.map(|v| {
                    Ok(Versioned {
                        value: decode_at(&*self.codec, &self.node, &v.value)?,
                        version: v.version,
                    })
                })
                .transpose()
            })
        }))
    }
}

impl<T, C: Codec<T>> futures_core::Stream for SharedValueWatcher<T, C> {
    type Item = Result<Option<Versioned<T>>>;

    fn poll_next(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_item(cx)
    }
}

/// What identifies one state of the node: a new stamp is a new node, a new
/// version a new write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    Missing,
    At { stamp: u64, version: u64 },
}

/// What a [`SharedValueWatcher`] carries from one value to the next.
#[derive(Debug)]
struct Follow {
    value: SharedValue,
    /// The state last returned.
    last: Option<Seen>,
    /// Armed at the read that gave `last`: on the node, or on its parent's
    /// children while it is missing.
    watch: Option<Watch>,
}

impl Follow {
    async fn step(&mut self) -> Result<Option<Versioned<Vec<u8>>>> {
        let mut attempt = 0;
        let session = self.value.session().clone();
        let node = self.value.path().to_owned();
        loop {
            settle_watch(&mut self.watch, &mut attempt).await?;
            match session.get_watch(&node).await {
                Ok(Some((n, w))) => {
                    self.watch = Some(w);
                    let seen = Seen::At {
                        stamp: n.stat.stamp,
                        version: n.stat.version,
                    };
                    if self.last != Some(seen) {
                        self.last = Some(seen);
                        return Ok(Some(Versioned {
                            value: n.data,
                            version: n.stat.version,
                        }));
                    }
                }
                Ok(None) => {
                    // Wait for the node to be made: a change among its
                    // parent's children. Listed after the read, so a make
                    // in between shows in the listing: read again.
                    let (children, w) = list_watch_retrying(&session, path::parent(&node)).await?;
                    let name = path::name(&node);
                    if children.iter().any(|c| c.name == name) {
                        continue;
                    }
                    self.watch = Some(w);
                    if self.last != Some(Seen::Missing) {
                        self.last = Some(Seen::Missing);
                        return Ok(None);
                    }
                }
                Err(e) if e.is_retryable() => backoff(&mut attempt).await,
                Err(e) => return Err(e),
            }
        }
    }
}

impl Advance for Follow {
    type Item = Option<Versioned<Vec<u8>>>;

    async fn advance(&mut self) -> Result<Self::Item> {
        let mut closed = self.value.closed_watch();
        tokio::select! {
            r = self.step() => r,
            // Closed: the watcher reports it (see `poll_item`).
            () = async {
                if closed.wait_for(|c| *c).await.is_err() {
                    // No sender: never closed (it lives in `self.value`).
                    std::future::pending::<()>().await;
                }
            } => Err(Error::SessionClosed),
        }
    }
}

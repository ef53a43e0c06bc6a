//! What a partitioner reports, shared by [`Partitioner`](super::set::Partitioner)
//! and [`RejoiningPartitioner`](super::rejoining::RejoiningPartitioner):
//! [`PartitionState`], the status its task publishes, and the
//! [`PartitionWatcher`] that follows it.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use futures_core::Stream;
use tokio::sync::watch;

use crate::machinery::stream::ChangeWait;

/// The state of a [`Partitioner`](crate::recipes::Partitioner) or a
/// [`RejoiningPartitioner`](crate::recipes::RejoiningPartitioner)
/// (kazoo's `PartitionState`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PartitionState {
    /// Splitting the set: reading the members and taking the locks of this
    /// member's share. Owns nothing.
    Allocating,
    /// This member owns these items (sorted) until the next `Release` (or,
    /// for a rejoining partitioner, `Lost`).
    Acquired(Vec<String>),
    /// The membership changed: finish with the items owned, then call
    /// [`Partitioner::release`](crate::recipes::Partitioner::release). They
    /// stay owned (locked) until then.
    Release,
    /// A [`RejoiningPartitioner`](crate::recipes::RejoiningPartitioner)
    /// lost what it owned: its session ended (or a lock or its member node
    /// was deleted under it), so its items' locks are gone, and another
    /// member may own them now. Owns nothing; stop working on the items.
    /// Not final: it joins again (on the client's next session if the
    /// session ended), `Allocating` follows, and what it acquires then
    /// carries new, larger fencing tokens. A
    /// [`PartitionWatcher`] never skips it.
    Lost,
    /// Ended by an error (the session's end, a lock deleted under us):
    /// owns nothing, final. `close` returns the error.
    Failed,
    /// Closed by its owner (`close` or drop): owns nothing, final.
    Closed,
}

/// What a partitioner's task publishes: the state, the tokens of the items
/// held, and how many times what it held was lost (a rejoining
/// partitioner's count of `Lost`; always 0 for a plain one).
#[derive(Debug, Clone)]
pub(crate) struct Status {
    pub(crate) state: PartitionState,
    pub(crate) tokens: BTreeMap<String, u64>,
    pub(crate) losses: u64,
}

impl Default for Status {
    fn default() -> Self {
        Status {
            state: PartitionState::Allocating,
            tokens: BTreeMap::new(),
            losses: 0,
        }
    }
}

/// Follows a partitioner's state: the first [`PartitionWatcher::next`]
/// returns the state now, each later one the state after the next change.
/// It reads the latest state, so a brief `Allocating` may be skipped, but
/// `Release` waits for [`Partitioner::release`](crate::recipes::Partitioner::release),
/// so a watcher never misses that it must let go; nor does it miss a
/// rejoining partitioner's `Lost`: a loss it has not returned yet is
/// returned before any later state (before the `Acquired` of the next
/// session).
///
/// An [event stream](crate#event-streams) of `PartitionState`: a failure
/// shows as [`PartitionState::Failed`]; it ends when the task is over.
#[derive(Debug, Clone)]
pub struct PartitionWatcher {
    status: watch::Receiver<Status>,
    first: bool,
    /// The losses returned (or seen before the first call).
    losses: u64,
    /// A `Lost` was returned in place of the state read: return that state
    /// next, without waiting.
    pending: Option<PartitionState>,
    change: ChangeWait,
}

impl PartitionWatcher {
    pub(crate) fn new(status: watch::Receiver<Status>) -> Self {
        PartitionWatcher {
            status,
            first: true,
            losses: 0,
            pending: None,
            change: ChangeWait::default(),
        }
    }

    /// The state now on the first call, then the next state; `None` once
    /// the partitioner's task is over and its last state was returned. The
    /// same as
    /// [`StreamExt::next`](https://docs.rs/futures/latest/futures/stream/trait.StreamExt.html#method.next).
    ///
    /// # Errors
    /// None: failures show as [`PartitionState::Failed`].
    ///
    /// # Cancel safety
    /// Cancel safe: dropped, nothing is consumed.
    pub async fn next(&mut self) -> Option<PartitionState> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }
}

impl Stream for PartitionWatcher {
    type Item = PartitionState;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<PartitionState>> {
        let this = self.get_mut();
        if std::mem::take(&mut this.first) {
            let s = this.status.borrow_and_update();
            this.losses = s.losses;
            return Poll::Ready(Some(s.state.clone()));
        }
        if let Some(state) = this.pending.take() {
            return Poll::Ready(Some(state));
        }
        let open = ready!(this.change.poll_changed(&this.status, cx));
        if !open && !this.status.has_changed().unwrap_or(false) {
            return Poll::Ready(None);
        }
        let s = this.status.borrow_and_update();
        let state = s.state.clone();
        let missed = s.losses > this.losses && state != PartitionState::Lost;
        this.losses = s.losses;
        if missed {
            this.pending = Some(state);
            return Poll::Ready(Some(PartitionState::Lost));
        }
        Poll::Ready(Some(state))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(state: PartitionState, losses: u64) -> Status {
        Status {
            state,
            tokens: BTreeMap::new(),
            losses,
        }
    }

    /// A loss published and overtaken before the watcher looked is still
    /// returned, before the state that overtook it; one seen as such is
    /// returned once.
    #[tokio::test]
    async fn a_watcher_never_skips_a_loss() {
        let acquired = PartitionState::Acquired(vec!["x".into()]);
        let (tx, rx) = watch::channel(status(acquired.clone(), 0));
        let mut w = PartitionWatcher::new(rx);
        assert_eq!(w.next().await, Some(acquired.clone()));
        tx.send_replace(status(PartitionState::Lost, 1));
        tx.send_replace(status(PartitionState::Allocating, 1));
        tx.send_replace(status(acquired.clone(), 1));
        assert_eq!(w.next().await, Some(PartitionState::Lost));
        assert_eq!(w.next().await, Some(acquired.clone()));
        tx.send_replace(status(PartitionState::Lost, 2));
        assert_eq!(w.next().await, Some(PartitionState::Lost));
        tx.send_replace(status(acquired.clone(), 2));
        assert_eq!(w.next().await, Some(acquired));
        drop(tx);
        assert_eq!(w.next().await, None);
    }
}

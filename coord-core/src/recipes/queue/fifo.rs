//! [`Queue`]: the FIFO queue, plain or reliable.

use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::machinery::stats::Stats;
use crate::machinery::wait::Wait;
use crate::session::Session;

use crate::recipes::queue::engine::{Engine, Got};
use crate::recipes::queue::reliable::ReliableQueue;

// Why lanes: all consumers racing for each next item made every item cost
// up to one delete per consumer (3.2 deletes an item for 4 consumers), so 4
// consumers drained no faster than one; with lanes, 4 consumers cost about
// 1.05 deletes an item.

/// A distributed FIFO queue (the ZooKeeper recipes' `DistributedQueue`) at a
/// directory path,
/// with a reliable mode where a taken item is leased to its consumer until
/// acknowledged.
///
/// Made by [`Queue::new`]`(session, path)`, or [`Queue::reliable`]`(session,
/// path)` for the reliable mode (a [`ReliableQueue`], whose takes return a
/// [`Delivery`](crate::recipes::Delivery) to acknowledge). Offer with
/// [`Queue::offer`], take with [`Queue::take`] (waits) or [`Queue::poll`]
/// (does not); code that takes any queue takes a `&dyn`
/// [`WorkQueue`](crate::prelude::WorkQueue). Ordered by a key instead:
/// [`PriorityQueue`](crate::recipes::PriorityQueue) and
/// [`DelayQueue`](crate::recipes::DelayQueue), each with its own `new` and
/// `reliable`.
///
/// Layout under the queue's directory:
/// - `items/_c_<uuid>-item-<seq>`: one persistent-sequential node per item,
///   the item as its data; FIFO by sequence;
/// - `claims/<item name>`: reliable mode only, an ephemeral node that leases
///   the item to the consumer whose session made it.
///
/// A consumer keeps the ordered names of one listing and lists again only
/// when they run out, so draining N items costs O(N) round trips, not
/// O(N²) as when re-listing per item (`DistributedQueue` does); [`Stats::listings`]
/// counts the listings. A plain consumer also reads the data of the next
/// items ahead, concurrently, so that a take costs one delete.
///
/// # Delivery
/// - Plain mode: an item is removed on the server before it is returned,
///   so a consumer that dies after a take loses that item (use the
///   reliable mode when that matters). A take dropped after the removal
///   loses nothing: the handle keeps the item for its next take (and puts
///   it back at the tail if the handle is dropped first). If the connection
///   drops during a removal and the item is found gone on retry, it is
///   delivered anyway: possibly twice, never lost.
/// - Reliable mode ([`Queue::reliable`]): see [`Delivery`](crate::recipes::Delivery). An item is
///   delivered again until acknowledged; an acknowledged item never is.
///
/// # Order
/// A consumer alone takes items (removes them, or in reliable mode claims
/// them) in sequence order: an item only after every item offered before
/// it was taken. Several consumers spread out instead of racing: a
/// consumer that loses an item to another moves to a *lane* of the queue —
/// one of 16: the items whose names' random uuid begins with one hex digit
/// — picked at random, and takes that lane's items in order, then another
/// lane's; consumers in different lanes never race. Where the backend
/// [lists by prefix](crate::Session::lists_by_prefix) (etcd, mem),
/// the next lane is listed alone, not the whole queue, while the queue is
/// large. So with several consumers an item may be taken
/// before an earlier one, as with Curator's and kazoo's queues under
/// concurrent consumers. [`Queue::strict_order`] (on every consumer) keeps
/// the strict order at the cost of the races: then each consumer receives
/// any one producer's items in the order offered. In reliable mode an item
/// whose lease is lost is delivered again after later ones may have been.
/// Priority and delay queues order each fresh listing by their key, and
/// spread the same way.
///
/// # Priority and delay queues
/// [`PriorityQueue`](crate::recipes::PriorityQueue) (lowest priority number first) and [`DelayQueue`](crate::recipes::DelayQueue)
/// (each item visible from its due time, earliest due first) run the same
/// engine, plain or reliable ([`ReliablePriorityQueue`](crate::recipes::ReliablePriorityQueue),
/// [`ReliableDelayQueue`](crate::recipes::ReliableDelayQueue)) with the same delivery guarantees; the item's
/// name carries its key in Curator's layout (`_c_<uuid>-item-<key><seq>`),
/// and a take orders a fresh listing by it.
///
/// Clones share the consumer's listing cache.
///
/// ```
/// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
/// use coord_core::recipes::Queue;
/// let queue = Queue::new(&session, "/queues/jobs")?;
/// queue.offer(b"job 1").await?;
/// assert_eq!(queue.take().await?, b"job 1".to_vec());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Queue {
    engine: Arc<Engine>,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.engine.fmt(f)
    }
}

impl Queue {
    /// A queue at `path` (a directory; made on first use). A take removes
    /// the item at once; an item whose taker dies before using it is lost
    /// to the queue — use [`Queue::reliable`] when that matters.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or `/`.
    pub fn new(session: &Session, path: &str) -> Result<Self> {
        Ok(Queue {
            engine: Arc::new(Engine::new(session, path, false)?),
        })
    }

    /// The reliable form of the queue at `path`: the same as
    /// [`ReliableQueue::new`]`(session, path)`. Do not mix plain and
    /// reliable consumers on one queue: plain takes ignore leases.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or `/`.
    pub fn reliable(session: &Session, path: &str) -> Result<ReliableQueue> {
        ReliableQueue::new(session, path)
    }

    /// Take items strictly in order (see [the queue's
    /// order](Queue#order)): every consumer races for each
    /// next item, so with several consumers an item costs up to one delete
    /// per consumer. Applies to this handle and its clones; every consumer
    /// of the queue must use it for the order to hold.
    pub fn strict_order(self) -> Self {
        self.engine.set_strict();
        self
    }

    /// This handle's counters: `listings` counts listings of the queue's
    /// directories, `wakeups` waits that ended with a change,
    /// `acquisitions` items taken, `attempts` deletes sent to take one.
    #[doc(hidden)]
    pub fn stats(&self) -> &Stats {
        &self.engine.stats
    }

    /// The queue's directory.
    pub fn path(&self) -> &str {
        &self.engine.dir
    }

    /// Add an item at the tail: any bytes (`&str`, `String`, `&[u8]`,
    /// `Vec<u8>`, `b"…"`). The [`WorkQueue`](crate::prelude::WorkQueue)
    /// trait's `offer` takes `&[u8]` so that it stays usable as
    /// `dyn WorkQueue`; a call on a `Queue` reaches this method first.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for data over the limit; session errors; [`Error::OutcomeUnknown`] when the
    /// answer was lost and the item is not in the queue now: it was never
    /// added, or added and already taken; it was not added again (that
    /// could deliver it twice). Offer again only if a second delivery is
    /// acceptable.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the item may or may not have been added.
    pub async fn offer(&self, data: impl AsRef<[u8]>) -> Result<()> {
        self.engine.offer(data.as_ref()).await
    }

    /// The item at the head, without taking it; `None` when empty.
    ///
    /// # Errors
    /// Session errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn peek(&self) -> Result<Option<Vec<u8>>> {
        self.engine.peek().await
    }

    /// Take the head item if there is one, without waiting.
    ///
    /// # Errors
    /// Session errors.
    ///
    /// # Cancel safety
    /// Cancel safe: an item removed for a dropped `poll` is kept by this
    /// handle and returned by its next take (or put back at the tail when
    /// the last clone of the handle is dropped).
    pub async fn poll(&self) -> Result<Option<Vec<u8>>> {
        Ok(self.engine.take(Wait::No).await?.and_then(Got::plain))
    }

    /// Take the head item, waiting for one.
    ///
    /// # Errors
    /// The session's end; backend errors.
    ///
    /// # Cancel safety
    /// Cancel safe, as [`Queue::poll`]: a dropped take loses no item.
    pub async fn take(&self) -> Result<Vec<u8>> {
        self.engine
            .take(Wait::Forever)
            .await?
            .and_then(Got::plain)
            .ok_or_else(|| Error::backend(self.engine.session.backend(), "take ended empty"))
    }

    /// [`Queue::take`], giving up after `timeout`. Every step is bounded
    /// by it, the server's answers included, so it returns on time with the
    /// server unreachable; a timeout too short for one round trip gives
    /// `Timeout` even when an item is there (use `poll` to take without
    /// waiting).
    ///
    /// # Errors
    /// [`Error::Timeout`]; otherwise as [`Queue::take`].
    ///
    /// # Cancel safety
    /// Cancel safe, as [`Queue::poll`].
    pub async fn take_timeout(&self, timeout: Duration) -> Result<Vec<u8>> {
        self.engine
            .take(Wait::timeout(timeout)?)
            .await?
            .and_then(Got::plain)
            .ok_or(Error::Timeout(timeout))
    }

    /// How many items are in the queue (in reliable mode including leased
    /// ones not yet acknowledged).
    ///
    /// # Errors
    /// Session errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn len(&self) -> Result<usize> {
        self.engine.len().await
    }

    /// Whether [`Queue::len`] is 0.
    ///
    /// # Errors
    /// As [`Queue::len`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn is_empty(&self) -> Result<bool> {
        Ok(self.len().await? == 0)
    }
}

#[async_trait::async_trait]
impl crate::recipes::queue::work_queue::WorkQueue for Queue {
    type Item = Vec<u8>;
    fn path(&self) -> &str {
        &self.engine.dir
    }
    async fn offer(&self, data: &[u8]) -> Result<()> {
        Queue::offer(self, data).await
    }
    async fn peek(&self) -> Result<Option<Vec<u8>>> {
        Queue::peek(self).await
    }
    async fn poll(&self) -> Result<Option<Vec<u8>>> {
        Queue::poll(self).await
    }
    async fn take(&self) -> Result<Vec<u8>> {
        Queue::take(self).await
    }
    async fn take_timeout(&self, timeout: Duration) -> Result<Vec<u8>> {
        Queue::take_timeout(self, timeout).await
    }
    async fn len(&self) -> Result<usize> {
        Queue::len(self).await
    }
    async fn is_empty(&self) -> Result<bool> {
        Queue::is_empty(self).await
    }
}

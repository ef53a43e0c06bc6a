//! The reliable form of the queue: a taken item is leased to its consumer
//! (an ephemeral claim node named after the item) until acknowledged.

use std::sync::Arc;
use std::time::Duration;

use crate::backend::node::Op;
use crate::error::{Error, Result};
use crate::hold::held::HeldNode;
use crate::machinery::retry::pause;
use crate::machinery::stats::Stats;
use crate::machinery::wait::Wait;
use crate::recipes::queue::claim::Claim;
use crate::recipes::queue::engine::{Engine, Got};
use crate::session::Session;

/// A queue whose taken items are leased until acknowledged, made by
/// [`ReliableQueue::new`]`(session, path)` (or, the same,
/// [`Queue::reliable`](super::Queue::reliable)); see
/// [`Queue`](super::Queue) for the layout and order and [`Delivery`] for
/// what a take hands out.
///
/// ```
/// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
/// use coord_core::recipes::ReliableQueue;
/// let queue = ReliableQueue::new(&session, "/queues/jobs")?;
/// queue.offer("job 1").await?;
/// let delivery = queue.take().await?;
/// assert_eq!(delivery.data(), b"job 1");
/// delivery.ack().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ReliableQueue {
    engine: Arc<Engine>,
}

/// Shows as `ReliableQueue { queue: Queue { items, reliable } }`.
impl std::fmt::Debug for ReliableQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReliableQueue")
            .field("queue", &self.engine)
            .finish()
    }
}

impl ReliableQueue {
    /// A reliable queue at `path` (a directory; made on first use): a
    /// take leases the item to this session until acknowledged. Do not mix
    /// plain and reliable consumers on one queue: plain takes ignore
    /// leases.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or `/`.
    pub fn new(session: &Session, path: &str) -> Result<Self> {
        Ok(ReliableQueue {
            engine: Arc::new(Engine::new(session, path, true)?),
        })
    }

    /// Claim items strictly in order, every consumer racing for each
    /// next item (see [`Queue::strict_order`](super::Queue::strict_order)).
    pub fn strict_order(self) -> Self {
        self.engine.set_strict();
        self
    }

    /// The underlying queue's counters (see
    /// [`Queue::stats`](super::Queue::stats)).
    #[doc(hidden)]
    pub fn stats(&self) -> &Stats {
        &self.engine.stats
    }

    /// The queue's directory.
    pub fn path(&self) -> &str {
        &self.engine.dir
    }

    /// Add an item at the tail (any bytes); see
    /// [`Queue::offer`](super::Queue::offer).
    ///
    /// # Errors
    /// As [`Queue::offer`](super::Queue::offer).
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the item may or may not have been added.
    pub async fn offer(&self, data: impl AsRef<[u8]>) -> Result<()> {
        self.engine.offer(data.as_ref()).await
    }

    /// The first item not leased to anyone, without taking it.
    ///
    /// # Errors
    /// Session errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn peek(&self) -> Result<Option<Vec<u8>>> {
        self.engine.peek().await
    }

    /// Lease the first free item if there is one, without waiting.
    ///
    /// # Errors
    /// Session errors.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped, any lease taken is given back (its claim is
    /// deleted in the background), so the item stays in the queue.
    pub async fn poll(&self) -> Result<Option<Delivery>> {
        Ok(self
            .engine
            .take(Wait::No)
            .await?
            .and_then(Got::leased)
            .map(Delivery::from_claim))
    }

    /// Lease the first free item, waiting for one (an item whose lease
    /// ends unacknowledged counts as free again).
    ///
    /// # Errors
    /// The session's end; backend errors.
    ///
    /// # Cancel safety
    /// Cancel safe, as [`ReliableQueue::poll`].
    pub async fn take(&self) -> Result<Delivery> {
        self.engine
            .take(Wait::Forever)
            .await?
            .and_then(Got::leased)
            .map(Delivery::from_claim)
            .ok_or_else(|| Error::backend(self.engine.session.backend(), "take ended empty"))
    }

    /// [`ReliableQueue::take`], giving up after `timeout`. Every step is bounded
    /// by it, the server's answers included, so it returns on time with the
    /// server unreachable; a timeout too short for one round trip gives
    /// `Timeout` even when an item is there (use `poll` to take without
    /// waiting).
    ///
    /// # Errors
    /// [`Error::Timeout`]; otherwise as [`ReliableQueue::take`].
    ///
    /// # Cancel safety
    /// Cancel safe, as [`ReliableQueue::poll`].
    pub async fn take_timeout(&self, timeout: Duration) -> Result<Delivery> {
        self.engine
            .take(Wait::timeout(timeout)?)
            .await?
            .and_then(Got::leased)
            .map(Delivery::from_claim)
            .ok_or(Error::Timeout(timeout))
    }

    /// Items in the queue, leased ones included.
    ///
    /// # Errors
    /// Session errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn len(&self) -> Result<usize> {
        self.engine.len().await
    }

    /// Whether [`ReliableQueue::len`] is 0.
    ///
    /// # Errors
    /// As [`ReliableQueue::len`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn is_empty(&self) -> Result<bool> {
        Ok(self.len().await? == 0)
    }
}

/// An item leased from a [`ReliableQueue`]. [`Delivery::ack`] removes it
/// for good; [`Delivery::release`] (or dropping the delivery, or the
/// consumer's session ending) gives it back to be delivered again.
#[must_use = "dropping a delivery gives the item back to the queue"]
#[derive(Debug)]
pub struct Delivery {
    claim: HeldNode,
    item: String,
    data: Vec<u8>,
}

impl Delivery {
    pub(crate) fn from_claim(claim: Claim) -> Self {
        Delivery {
            claim: claim.held,
            item: claim.item,
            data: claim.data,
        }
    }

    /// The item.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The item's node path (unique per item).
    pub fn item_path(&self) -> &str {
        &self.item
    }

    /// Resolve when the lease is lost (the session ended, or the claim was
    /// deleted): the item will be delivered again.
    ///
    /// # Errors
    /// None: it resolves *to* the reason the hold was lost.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn lost(&self) -> Error {
        self.claim.lost().await
    }

    /// Acknowledge: delete the item, only while the lease holds (one atomic
    /// guarded write), then end the lease. An acknowledged item is never
    /// delivered again.
    ///
    /// # Errors
    /// [`Error::LockLost`] when the lease was lost first (the item is, or
    /// will be, delivered again); session errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the item may or may not be acknowledged
    /// (if not, it is delivered again). Through a connection loss it retries
    /// until acknowledged or the lease is lost.
    pub async fn ack(self) -> Result<()> {
        // Through a connection loss the guarded delete is retried while the
        // lease holds; after a lost answer, "no such item" under a lease
        // that still holds is our own delete having landed.
        let mut attempt = 0;
        let mut tried = false;
        loop {
            let done = self
                .claim
                .write(Op::Delete {
                    path: self.item.clone(),
                    version: None,
                })
                .await;
            match done {
                Ok(_) => break,
                Err(Error::NotFound { .. }) if tried => break,
                Err(e) if e.is_retryable() => {
                    tried = true;
                    pause(self.claim.session(), &mut attempt).await;
                }
                Err(e) => return Err(e),
            }
        }
        match self.claim.discard().await {
            Ok(()) => Ok(()),
            Err(e) if e.is_retryable() => Ok(()), // the claim goes with the session
            Err(e) => Err(e),
        }
    }

    /// Give the item back without processing it: it is delivered again.
    ///
    /// # Errors
    /// Session errors ([`Error::LockLost`] when the lease was already lost).
    ///
    /// # Cancel safety
    /// Cancel safe in effect: dropped, the lease ends in the background.
    pub async fn release(self) -> Result<()> {
        self.claim.release().await
    }
}

crate::hold::impl_hold!(Delivery, |d| &d.claim, release);

#[async_trait::async_trait]
impl crate::recipes::queue::work_queue::WorkQueue for ReliableQueue {
    type Item = Delivery;
    fn path(&self) -> &str {
        &self.engine.dir
    }
    async fn offer(&self, data: &[u8]) -> Result<()> {
        ReliableQueue::offer(self, data).await
    }
    async fn peek(&self) -> Result<Option<Vec<u8>>> {
        ReliableQueue::peek(self).await
    }
    async fn poll(&self) -> Result<Option<Delivery>> {
        ReliableQueue::poll(self).await
    }
    async fn take(&self) -> Result<Delivery> {
        ReliableQueue::take(self).await
    }
    async fn take_timeout(&self, timeout: Duration) -> Result<Delivery> {
        ReliableQueue::take_timeout(self, timeout).await
    }
    async fn len(&self) -> Result<usize> {
        ReliableQueue::len(self).await
    }
    async fn is_empty(&self) -> Result<bool> {
        ReliableQueue::is_empty(self).await
    }
}

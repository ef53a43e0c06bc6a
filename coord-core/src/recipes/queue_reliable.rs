//! The reliable form of the queue: a taken item is leased to its consumer
//! (an ephemeral claim node named after the item) until acknowledged.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::primitive::Op;
use crate::recipes::held::HeldNode;
use crate::recipes::queue::Queue;
use crate::recipes::queue_engine::{Got, Wait};
use crate::recipes::retry::pause;
use crate::recipes::stats::Stats;

/// A queue whose taken items are leased until acknowledged; see
/// [`Queue::reliable`] and [`Delivery`].
#[derive(Clone, Debug)]
pub struct ReliableQueue {
    pub(crate) queue: Queue,
}

impl ReliableQueue {
    /// The underlying queue's counters (see [`Queue::stats`]).
    pub fn stats(&self) -> &Stats {
        self.queue.stats()
    }

    /// Add an item at the tail; see [`Queue::offer`].
    ///
    /// # Errors
    /// As [`Queue::offer`].
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the item may or may not have been added.
    pub async fn offer(&self, data: &[u8]) -> Result<()> {
        self.queue.offer(data).await
    }

    /// The first item not leased to anyone, without taking it.
    ///
    /// # Errors
    /// Session errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn peek(&self) -> Result<Option<Vec<u8>>> {
        self.queue.peek().await
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
        Ok(self.queue.take_inner(Wait::No).await?.and_then(Got::leased))
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
        self.queue
            .take_inner(Wait::Forever)
            .await?
            .and_then(Got::leased)
            .ok_or_else(|| Error::backend(self.queue.inner.session.backend(), "take ended empty"))
    }

    /// [`ReliableQueue::take`], giving up after `timeout`.
    ///
    /// # Errors
    /// [`Error::Timeout`]; otherwise as [`ReliableQueue::take`].
    ///
    /// # Cancel safety
    /// Cancel safe, as [`ReliableQueue::poll`].
    pub async fn take_timeout(&self, timeout: Duration) -> Result<Delivery> {
        self.queue
            .take_inner({
                let (at, timeout) = crate::limits::deadline(timeout)?;
                Wait::Until(at, timeout)
            })
            .await?
            .and_then(Got::leased)
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
        self.queue.len().await
    }

    /// Whether [`ReliableQueue::len`] is 0.
    ///
    /// # Errors
    /// As [`ReliableQueue::len`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn is_empty(&self) -> Result<bool> {
        self.queue.is_empty().await
    }
}

/// An item leased from a [`ReliableQueue`]. [`Delivery::ack`] removes it
/// for good; [`Delivery::release`] (or dropping the delivery, or the
/// consumer's session ending) gives it back to be delivered again.
#[must_use = "dropping a delivery gives the item back to the queue"]
#[derive(Debug)]
pub struct Delivery {
    pub(crate) claim: HeldNode,
    pub(crate) item: String,
    pub(crate) data: Vec<u8>,
}

impl Delivery {
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

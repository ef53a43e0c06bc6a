//! The queue trait.

use std::time::Duration;

use async_trait::async_trait;

use crate::error::Result;

/// A distributed FIFO queue of byte items, implemented by
/// [`Queue`](crate::recipes::Queue) (`Item = Vec<u8>`: a take removes the
/// item) and [`ReliableQueue`](crate::recipes::ReliableQueue)
/// (`Item = Delivery`: a taken item is leased until acknowledged, and comes
/// back if its consumer dies), and likewise by
/// [`PriorityQueue`](crate::recipes::PriorityQueue) and
/// [`DelayQueue`](crate::recipes::DelayQueue) and their reliable forms,
/// whose trait `offer` offers at priority 0, or due at once.
///
/// ```
/// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
/// use coord_core::prelude::*;
/// use coord_core::recipes::Queue;
///
/// async fn drain(queue: &dyn WorkQueue<Item = Vec<u8>>) -> coord_core::Result<usize> {
///     let mut n = 0;
///     while let Some(_item) = queue.poll().await? {
///         n += 1;
///     }
///     Ok(n)
/// }
/// let queue = Queue::new(&session, "/queues/jobs")?;
/// queue.offer(b"job 1").await?;
/// assert_eq!(drain(&queue).await?, 1);
/// # Ok(()) }
/// ```
#[async_trait]
pub trait WorkQueue: Send + Sync + std::fmt::Debug {
    /// What a take hands out.
    type Item: Send;

    /// The queue's path (its directory).
    fn path(&self) -> &str;

    /// Add an item at the tail.
    ///
    /// `data` is `&[u8]` here, not `impl AsRef<[u8]>` as on the queues
    /// themselves: a generic method would make the trait unusable as
    /// `dyn WorkQueue`. Each queue's own `offer` (which a call on the queue
    /// reaches first) takes any bytes; through the trait, pass `b"…"`,
    /// `s.as_bytes()` or `&vec`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for data
    /// over the limit; session errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the item may or may not have been added.
    async fn offer(&self, data: &[u8]) -> Result<()>;

    /// The head item's data without taking it; `None` when empty.
    ///
    /// # Errors
    /// Session errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    async fn peek(&self) -> Result<Option<Vec<u8>>>;

    /// Take the head item if there is one.
    ///
    /// # Errors
    /// Session errors.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped, no item is lost (the implementations keep an
    /// item removed for a dropped take, or give it back).
    async fn poll(&self) -> Result<Option<Self::Item>>;

    /// Wait for an item and take it.
    ///
    /// # Errors
    /// The session's end; backend errors.
    ///
    /// # Cancel safety
    /// As [`WorkQueue::poll`].
    async fn take(&self) -> Result<Self::Item>;

    /// [`WorkQueue::take`], waiting at most `timeout`.
    ///
    /// # Errors
    /// [`Error::Timeout`](crate::Error::Timeout) when nothing came;
    /// otherwise as [`WorkQueue::take`].
    ///
    /// # Cancel safety
    /// As [`WorkQueue::poll`].
    async fn take_timeout(&self, timeout: Duration) -> Result<Self::Item>;

    /// How many items are queued (leased ones of a reliable queue
    /// included).
    ///
    /// # Errors
    /// Session errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    async fn len(&self) -> Result<usize>;

    /// Whether no item is queued.
    ///
    /// # Errors
    /// Session errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    async fn is_empty(&self) -> Result<bool> {
        Ok(self.len().await? == 0)
    }
}

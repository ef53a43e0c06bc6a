//! [`PriorityQueue`] and [`DelayQueue`], plain or reliable: the queue's
//! engine with an ordering key in each item's name.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::error::{Error, Result};
use crate::machinery::stats::Stats;
use crate::machinery::wait::Wait;
use crate::recipes::queue::engine::{Engine, Got};
use crate::recipes::queue::keys::{due_after, due_at, due_key, now_ms, priority_key, Order};
use crate::recipes::queue::reliable::Delivery;
use crate::session::Session;

/// The take side every ordered queue shares, and its [`WorkQueue`]
/// implementation (whose `offer` uses the type's default key).
///
/// [`WorkQueue`]: crate::recipes::queue::work_queue::WorkQueue
macro_rules! take_side {
    ($ty:ident, $item:ty, $got:expr, $taken:literal) => {
        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field("queue", &self.engine)
                    .finish()
            }
        }

        impl $ty {
            /// Take items strictly in key order, every consumer racing
            /// for each next item (see
            /// [`Queue::strict_order`](super::Queue::strict_order)).
            pub fn strict_order(self) -> Self {
                self.engine.set_strict();
                self
            }

            /// This handle's counters (see
            /// [`Queue::stats`](super::Queue::stats)).
            #[doc(hidden)]
            pub fn stats(&self) -> &Stats {
                &self.engine.stats
            }

            /// The queue's directory.
            pub fn path(&self) -> &str {
                &self.engine.dir
            }

            /// The item a take would get now, without taking it; `None`
            /// when there is none.
            ///
            /// # Errors
            /// Session errors.
            ///
            /// # Cancel safety
            /// Cancel safe: it only reads.
            pub async fn peek(&self) -> Result<Option<Vec<u8>>> {
                self.engine.peek().await
            }

            #[doc = concat!("Take (", $taken, ") the first item if there is one, without waiting.")]
            ///
            /// # Errors
            /// Session errors.
            ///
            /// # Cancel safety
            /// Cancel safe: no item is lost (as [`Queue::poll`](super::Queue::poll)
            /// and [`ReliableQueue::poll`](super::ReliableQueue::poll)).
            pub async fn poll(&self) -> Result<Option<$item>> {
                Ok(self.engine.take(Wait::No).await?.and_then($got))
            }

            #[doc = concat!("Take (", $taken, ") the first item, waiting for one.")]
            ///
            /// # Errors
            /// The session's end; backend errors.
            ///
            /// # Cancel safety
            #[doc = concat!("Cancel safe, as [`", stringify!($ty), "::poll`].")]
            pub async fn take(&self) -> Result<$item> {
                self.engine
                    .take(Wait::Forever)
                    .await?
                    .and_then($got)
                    .ok_or_else(|| {
                        Error::backend(self.engine.session.backend(), "take ended empty")
                    })
            }

            #[doc = concat!("[`", stringify!($ty), "::take`], giving up after `timeout` (every step bounded by it,")]
            /// as [`Queue::take_timeout`](super::Queue::take_timeout)).
            ///
            /// # Errors
            /// [`Error::Timeout`]; [`Error::InvalidArgument`] for a timeout
            /// over [`crate::limits::MAX_TIMEOUT`]; otherwise as `take`.
            ///
            /// # Cancel safety
            #[doc = concat!("Cancel safe, as [`", stringify!($ty), "::poll`].")]
            pub async fn take_timeout(&self, timeout: Duration) -> Result<$item> {
                self.engine
                    .take(Wait::timeout(timeout)?)
                    .await?
                    .and_then($got)
                    .ok_or(Error::Timeout(timeout))
            }

            /// How many items are in the queue: those not due yet and those
            /// leased but not acknowledged included.
            ///
            /// # Errors
            /// Session errors.
            ///
            /// # Cancel safety
            /// Cancel safe: it only reads.
            pub async fn len(&self) -> Result<usize> {
                self.engine.len().await
            }

            #[doc = concat!("Whether [`", stringify!($ty), "::len`] is 0.")]
            ///
            /// # Errors
            /// As `len`.
            ///
            /// # Cancel safety
            /// Cancel safe.
            pub async fn is_empty(&self) -> Result<bool> {
                Ok(self.len().await? == 0)
            }
        }

        #[async_trait::async_trait]
        impl crate::recipes::queue::work_queue::WorkQueue for $ty {
            type Item = $item;
            fn path(&self) -> &str {
                &self.engine.dir
            }
            /// Offers with the type's default key: priority 0, or due at
            /// once.
            async fn offer(&self, data: &[u8]) -> Result<()> {
                self.engine.offer_keyed(data, &Self::default_key()).await
            }
            async fn peek(&self) -> Result<Option<Vec<u8>>> {
                $ty::peek(self).await
            }
            async fn poll(&self) -> Result<Option<$item>> {
                $ty::poll(self).await
            }
            async fn take(&self) -> Result<$item> {
                $ty::take(self).await
            }
            async fn take_timeout(&self, timeout: Duration) -> Result<$item> {
                $ty::take_timeout(self, timeout).await
            }
            async fn len(&self) -> Result<usize> {
                $ty::len(self).await
            }
            async fn is_empty(&self) -> Result<bool> {
                $ty::is_empty(self).await
            }
        }
    };
}

fn leased(g: Got) -> Option<Delivery> {
    g.leased().map(Delivery::from_claim)
}

/// A distributed priority queue: items are taken lowest priority number
/// first (as Curator's `DistributedPriorityQueue`: "lower numbers come out
/// of the queue first"), and in the order offered among equal priorities.
/// A take removes the item; [`PriorityQueue::reliable`] leases it instead.
///
/// Each item's node is named `_c_<uuid>-item-<priority key><sequence>`,
/// the key in Curator's layout (`1`/`0` for a priority ≥ 0 / < 0, then
/// its 32 bits in 8 hex digits: priority 5 is `100000005`, −1 is
/// `0FFFFFFFF`). A take lists the queue afresh, so an item of a higher
/// priority offered since the last take comes first; that costs one listing
/// per take, where [`Queue`](super::Queue) lists once per batch (Curator:
/// "the priority queue will perform far worse than a standard queue").
///
/// Order among equal priorities: an item offered after another's offer
/// returned is taken after it. Do not mix this with other kinds of queue
/// on one path: a [`Queue`](super::Queue) ignores priorities, and a name
/// without a key reads as priority 0.
///
/// ```
/// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
/// use coord_core::recipes::PriorityQueue;
/// let queue = PriorityQueue::new(&session, "/queues/jobs")?;
/// queue.offer(b"routine", 10).await?;
/// queue.offer(b"urgent", -5).await?;
/// queue.offer(b"routine too", 10).await?;
/// assert_eq!(queue.take().await?, b"urgent".to_vec());
/// assert_eq!(queue.take().await?, b"routine".to_vec());
/// assert_eq!(queue.take().await?, b"routine too".to_vec());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PriorityQueue {
    engine: Arc<Engine>,
}

/// The reliable form of [`PriorityQueue`], made by
/// [`ReliablePriorityQueue::new`]`(session, path)` (or, the same,
/// [`PriorityQueue::reliable`]): a taken item is leased as a [`Delivery`]
/// until acknowledged, and comes back if its consumer's session ends
/// first.
#[derive(Clone)]
pub struct ReliablePriorityQueue {
    engine: Arc<Engine>,
}

impl PriorityQueue {
    /// A priority queue at `path` (a directory; made on first use). A take
    /// removes the item at once; use [`PriorityQueue::reliable`] when a
    /// consumer that dies must not lose its item.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or `/`.
    pub fn new(session: &Session, path: &str) -> Result<Self> {
        Ok(PriorityQueue {
            engine: Arc::new(Engine::ordered(session, path, false, Order::Priority)?),
        })
    }

    /// The reliable form of the priority queue at `path`: the same as
    /// [`ReliablePriorityQueue::new`]`(session, path)`. Do not mix plain and
    /// reliable consumers on one queue: plain takes ignore leases.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or `/`.
    pub fn reliable(session: &Session, path: &str) -> Result<ReliablePriorityQueue> {
        ReliablePriorityQueue::new(session, path)
    }

    /// Add an item (any bytes: `&str`, `String`, `&[u8]`, `Vec<u8>`,
    /// `b"…"`) with `priority`: lower numbers are taken first; equal ones
    /// in the order offered. Every `i32` is a valid priority.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for data over the limit (before any
    /// I/O); session errors; [`Error::OutcomeUnknown`] when the
    /// answer was lost and the item is not in the queue now: it was never
    /// added, or added and already taken; it was not added again (that
    /// could deliver it twice). Offer again only if a second delivery is
    /// acceptable.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the item may or may not have been added.
    pub async fn offer(&self, data: impl AsRef<[u8]>, priority: i32) -> Result<()> {
        self.engine
            .offer_keyed(data.as_ref(), &priority_key(priority))
            .await
    }

    fn default_key() -> String {
        priority_key(0)
    }
}

impl ReliablePriorityQueue {
    /// A reliable priority queue at `path` (a directory; made on first
    /// use): a take leases the item to this session until acknowledged. Do
    /// not mix plain and reliable consumers on one queue: plain takes
    /// ignore leases.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or `/`.
    pub fn new(session: &Session, path: &str) -> Result<Self> {
        Ok(ReliablePriorityQueue {
            engine: Arc::new(Engine::ordered(session, path, true, Order::Priority)?),
        })
    }

    /// Add an item with `priority`; see [`PriorityQueue::offer`].
    ///
    /// # Errors
    /// As [`PriorityQueue::offer`].
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the item may or may not have been added.
    pub async fn offer(&self, data: impl AsRef<[u8]>, priority: i32) -> Result<()> {
        self.engine
            .offer_keyed(data.as_ref(), &priority_key(priority))
            .await
    }

    fn default_key() -> String {
        priority_key(0)
    }
}

take_side!(PriorityQueue, Vec<u8>, Got::plain, "remove");
take_side!(ReliablePriorityQueue, Delivery, leased, "lease");

/// A distributed delay queue: each item becomes visible to takers at its
/// due time, and items are taken earliest due first (as Curator's
/// `DistributedDelayQueue`), in the order offered among equal due times.
/// A take removes the item; [`DelayQueue::reliable`] leases it instead.
///
/// Each item's node is named `_c_<uuid>-item-|<due>|<sequence>`, `<due>`
/// being the due time in milliseconds since the Unix epoch in (at least 8)
/// hex digits, Curator's layout (`|18BF3A2C4D0|`).
///
/// A take with nothing due waits on the queue's children (an offer wakes
/// it) and on a timer set for the earliest due time; it never polls. Each
/// take lists the queue afresh, so an item due earlier offered while a
/// taker waits for a later one is taken first.
///
/// # Clocks
/// Visibility is decided by the *taker's* clock, as in Curator: an item
/// offered with a delay is due at the producer's clock plus the delay, and
/// is taken when the taker's clock reaches that time. A taker whose clock
/// runs ahead of the producer's sees items early by that much; one whose
/// clock lags sees them late. Keep clocks synchronised (NTP) when that
/// matters; no server clock is involved.
///
/// Do not mix this with other kinds of queue on one path: a name without
/// a due time reads as due at once.
///
/// ```
/// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
/// use std::time::{Duration, Instant};
/// use coord_core::recipes::DelayQueue;
/// let queue = DelayQueue::new(&session, "/queues/reminders")?;
/// let start = Instant::now();
/// queue.offer(b"later", Duration::from_millis(300)).await?;
/// queue.offer(b"sooner", Duration::from_millis(100)).await?;
/// assert_eq!(queue.poll().await?, None); // nothing due yet
/// assert_eq!(queue.take().await?, b"sooner".to_vec());
/// assert_eq!(queue.take().await?, b"later".to_vec());
/// assert!(start.elapsed() >= Duration::from_millis(300));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct DelayQueue {
    engine: Arc<Engine>,
}

/// The reliable form of [`DelayQueue`], made by
/// [`ReliableDelayQueue::new`]`(session, path)` (or, the same,
/// [`DelayQueue::reliable`]): a taken item is leased as a [`Delivery`]
/// until acknowledged, and comes back if its consumer's session ends
/// first.
#[derive(Clone)]
pub struct ReliableDelayQueue {
    engine: Arc<Engine>,
}

impl DelayQueue {
    /// A delay queue at `path` (a directory; made on first use). A take
    /// removes the item at once; use [`DelayQueue::reliable`] when a
    /// consumer that dies must not lose its item.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or `/`.
    pub fn new(session: &Session, path: &str) -> Result<Self> {
        Ok(DelayQueue {
            engine: Arc::new(Engine::ordered(session, path, false, Order::Delay)?),
        })
    }

    /// The reliable form of the delay queue at `path`: the same as
    /// [`ReliableDelayQueue::new`]`(session, path)`. Do not mix plain and
    /// reliable consumers on one queue: plain takes ignore leases.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or `/`.
    pub fn reliable(session: &Session, path: &str) -> Result<ReliableDelayQueue> {
        ReliableDelayQueue::new(session, path)
    }

    /// Add an item (any bytes: `&str`, `String`, `&[u8]`, `Vec<u8>`,
    /// `b"…"`) due `delay` from now by this process's clock
    /// ([`Duration::ZERO`]: at once). See the type's docs on clocks.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`], before any I/O, for a delay over
    /// [`MAX_DELAY`](crate::limits::MAX_DELAY) or data over the limit; session
    /// errors; [`Error::OutcomeUnknown`] when the
    /// answer was lost and the item is not in the queue now: it was never
    /// added, or added and already taken; it was not added again (that
    /// could deliver it twice). Offer again only if a second delivery is
    /// acceptable.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the item may or may not have been added.
    pub async fn offer(&self, data: impl AsRef<[u8]>, delay: Duration) -> Result<()> {
        self.engine
            .offer_keyed(data.as_ref(), &due_key(due_after(delay)?))
            .await
    }

    /// Add an item due at the wall-clock time `at` (a time past is due at
    /// once), to the millisecond. See the type's docs on clocks.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`], before any I/O, for a time before the
    /// Unix epoch or more than [`MAX_DELAY`](crate::limits::MAX_DELAY) ahead, or
    /// data over the limit; session errors; [`Error::OutcomeUnknown`] when the
    /// answer was lost and the item is not in the queue now: it was never
    /// added, or added and already taken; it was not added again (that
    /// could deliver it twice). Offer again only if a second delivery is
    /// acceptable.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the item may or may not have been added.
    pub async fn offer_at(&self, data: impl AsRef<[u8]>, at: SystemTime) -> Result<()> {
        self.engine
            .offer_keyed(data.as_ref(), &due_key(due_at(at)?))
            .await
    }

    fn default_key() -> String {
        due_key(now_ms())
    }
}

impl ReliableDelayQueue {
    /// A reliable delay queue at `path` (a directory; made on first use):
    /// a take leases the item to this session until acknowledged. Do not
    /// mix plain and reliable consumers on one queue: plain takes ignore
    /// leases.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or `/`.
    pub fn new(session: &Session, path: &str) -> Result<Self> {
        Ok(ReliableDelayQueue {
            engine: Arc::new(Engine::ordered(session, path, true, Order::Delay)?),
        })
    }

    /// Add an item due `delay` from now; see [`DelayQueue::offer`].
    ///
    /// # Errors
    /// As [`DelayQueue::offer`].
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the item may or may not have been added.
    pub async fn offer(&self, data: impl AsRef<[u8]>, delay: Duration) -> Result<()> {
        self.engine
            .offer_keyed(data.as_ref(), &due_key(due_after(delay)?))
            .await
    }

    /// Add an item due at `at`; see [`DelayQueue::offer_at`].
    ///
    /// # Errors
    /// As [`DelayQueue::offer_at`].
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the item may or may not have been added.
    pub async fn offer_at(&self, data: impl AsRef<[u8]>, at: SystemTime) -> Result<()> {
        self.engine
            .offer_keyed(data.as_ref(), &due_key(due_at(at)?))
            .await
    }

    fn default_key() -> String {
        due_key(now_ms())
    }
}

take_side!(DelayQueue, Vec<u8>, Got::plain, "remove");
take_side!(ReliableDelayQueue, Delivery, leased, "lease");

//! The recipes, written once over [`crate::Session`]: they work the same on
//! every backend. Every type is here, flat: [`Lock`], [`RwLock`] (with
//! its [`ReadLock`] and [`WriteLock`] halves), [`Semaphore`] and
//! [`SemaphoreMutex`], [`SimpleLock`], [`MultiLock`], [`ReentrantLock`],
//! [`Barrier`] and [`DoubleBarrier`], [`Election`] (and its
//! [`LeaderLatch`]), [`Group`], [`Queue`] and the other queues,
//! [`PeriodicJob`], [`Counter`], [`Partitioner`], the caches, service
//! discovery ([`ServiceDiscovery`], [`ServiceCache`], [`ServiceProvider`]);
//! and, built
//! on a [`Client`](crate::Client) rather than one session, the recipes
//! that come back after a session ends: [`PersistentNode`],
//! [`GroupMember`], [`ServiceRegistration`], [`RejoiningLatch`],
//! [`RejoiningPartitioner`] and the caches' `follow`;
//! [`Contender`] says who holds and who waits, [`revocation`] asks a holder
//! to let go. Each recipe is made by its own constructor, and its type's
//! doc says what it writes on the server, what it guarantees and which
//! other clients share it: [`Election::new`] for every way of taking part
//! in an election, [`SetPartitioner::new`] for a partitioner; a reliable
//! queue is made by its own `new` ([`ReliableQueue::new`], the same as
//! [`Queue::reliable`]), a handle that an action starts (a latch, a
//! participant, a partitioner) by that action, which its type's doc names.
//!
//! Arguments have one shape across the recipes: data (a value, an item, a
//! member's or a contender's data) is any bytes, `impl AsRef<[u8]>`, so
//! `&str`, `String`, `&[u8]`, `Vec<u8>` and `b"…"` all work; paths, names
//! and ids are `&str` (a partitioner's set of items: any iterator of
//! `impl Into<String>`). The object-safe traits ([`LeaderElection`](crate::prelude::LeaderElection),
//! [`WorkQueue`](crate::prelude::WorkQueue)) take `&[u8]` instead, since a
//! generic method would rule out `dyn`; the recipes' own methods, which a
//! call reaches first, forward to the same code.
//!
//! They implement the traits of [`crate::prelude`]:
//! every lock is [`Lockable`](crate::prelude::Lockable), every guard a
//! [`Hold`](crate::prelude::Hold). The names they write on the server are
//! [`crate::layout`]'s.
//!
//! Every guard is `#[must_use]`, releases with an `async fn release` that
//! reports errors, releases best-effort in the background on `Drop` (the
//! session's end is the backstop), has a `fencing_token()` that strictly
//! increases across successive holders, and a `lost()` that resolves when
//! the hold is gone. Every acquire is cancel-safe: dropping its future at any
//! await point leaves no node behind.

// The families, private: every type is re-exported flat below.
pub(crate) mod barrier;
pub(crate) mod cache;
pub(crate) mod counter;
pub(crate) mod discovery;
pub(crate) mod election;
pub(crate) mod group;
pub(crate) mod lock;
pub(crate) mod partitioner;
pub(crate) mod periodic_job;
pub(crate) mod persistent;
pub(crate) mod queue;
pub(crate) mod shared;

pub use crate::hold::revocation;
pub use crate::hold::{while_held, Contender, ContenderState, HoldContext};
#[doc(hidden)]
pub use crate::machinery::stats::Stats;
pub use barrier::{Barrier, DoubleBarrier, Inside};
pub use cache::{CacheEvent, ChildrenCache, NodeCache, TreeCache};
pub use counter::{AddOutcome, Counter, CounterWatcher};
pub use discovery::{
    DownInstancePolicy, ProviderStrategy, ServiceCache, ServiceCacheEvent, ServiceDiscovery,
    ServiceInstance, ServiceProvider, ServiceRegistration, ServiceType,
};
pub use election::{
    Election, ElectionEvent, ElectionLayout, ElectionState, LatchEvent, LatchWatcher, Leader,
    LeaderLatch, LeaderObserver, Leadership, Participant, ParticipantStatus, RejoiningLatch,
    RejoiningLatchWatcher,
};
pub use group::{Group, GroupChange, GroupWatcher, Member, Membership};
pub use lock::{
    Lease, Lock, LockGuard, MultiLock, MultiLockGuard, ReadLock, ReentrantLock, RwLock, Semaphore,
    SemaphoreMutex, SimpleLock, WriteLock,
};
pub use partitioner::{
    PartitionState, PartitionWatcher, Partitioner, RejoiningPartitioner, SetPartitioner,
};
pub use periodic_job::{period_index, OnCrash, PeriodicJob, RunContext, RunOutcome};
pub use persistent::{GroupMember, PersistentMode, PersistentNode, Presence, PresenceWatcher};
pub use queue::{
    DelayQueue, Delivery, PriorityQueue, Queue, ReliableDelayQueue, ReliablePriorityQueue,
    ReliableQueue,
};
#[cfg(feature = "serde")]
pub use shared::Json;
pub use shared::{
    BigEndianI32, Codec, CodecError, RawBytes, SharedCount, SharedCountWatcher, SharedValue,
    SharedValueWatcher, TypedSharedValue, Update, Versioned,
};

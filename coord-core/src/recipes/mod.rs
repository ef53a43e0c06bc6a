//! The recipes, written once over [`crate::Session`]: they work the same on
//! every backend.
//!
//! One module per recipe, named after its type: [`Lock`], [`RwLock`] (with
//! its [`ReadLock`] and [`WriteLock`] halves), [`Semaphore`] and
//! [`SemaphoreMutex`], [`SimpleLock`], [`MultiLock`], [`ReentrantLock`],
//! [`Barrier`] and [`DoubleBarrier`], [`Election`], [`Group`], [`Queue`],
//! [`PeriodicJob`], [`Counter`], [`LeaderLatch`], [`Partitioner`];
//! [`participants`] lists who holds and who waits,
//! [`revocation`] asks a holder to let go. They implement the traits of
//! [`crate::traits`]: every lock is [`Lockable`](crate::traits::Lockable),
//! every guard a [`Hold`](crate::traits::Hold). What they share —
//! queueing contenders, cancel-safe creates, held nodes, retries, node
//! counters — is internal machinery; its public pieces are [`HeldNode`]
//! and [`Stats`]. The names they write are [`crate::layout`]'s.
//!
//! Every guard is `#[must_use]`, releases with an `async fn release` that
//! reports errors, releases best-effort in the background on `Drop` (the
//! session's end is the backstop), has a `fencing_token()` that strictly
//! increases across successive holders, and a `lost()` that resolves when
//! the hold is gone. Every acquire is cancel-safe: dropping its future at any
//! await point leaves no node behind.

pub mod barrier;
pub mod cache;
pub mod counter;
pub mod election;
pub mod group;
pub mod lock;
pub mod multi_lock;
pub mod partitioner;
pub mod periodic_job;
pub mod queue;
pub mod reentrant;
pub mod rwlock;
pub mod semaphore;
pub mod simple_lock;

// Old paths, until the compat module goes.
#[doc(hidden)]
pub use crate::compat::recipes::*;

pub use crate::hold::revocation;
pub use crate::hold::{while_held, Contender, ContenderState, HoldContext};
#[doc(hidden)]
pub use crate::machinery::stats::Stats;
pub use barrier::{Barrier, DoubleBarrier, Inside};
pub use cache::{CacheEvent, ChildrenCache, NodeCache, TreeCache};
pub use counter::{AddOutcome, Counter, CounterWatcher};
pub use election::{
    Election, ElectionEvent, ElectionLayout, ElectionState, LatchEvent, LatchWatcher, Leader,
    LeaderLatch, LeaderObserver, Leadership, Participant, ParticipantStatus,
};
pub use group::{Group, GroupChange, GroupWatcher, Member, Membership};
pub use lock::{Lock, LockGuard};
pub use multi_lock::{MultiLock, MultiLockGuard};
pub use partitioner::{PartitionState, PartitionWatcher, Partitioner, SetPartitioner};
pub use periodic_job::{period_index, OnCrash, PeriodicJob, RunContext, RunOutcome};
pub use queue::{
    DelayQueue, Delivery, PriorityQueue, Queue, ReliableDelayQueue, ReliablePriorityQueue,
    ReliableQueue,
};
pub use reentrant::ReentrantLock;
pub use rwlock::{ReadLock, RwLock, WriteLock};
pub use semaphore::{Lease, Semaphore, SemaphoreMutex};
pub use simple_lock::SimpleLock;

//! The recipes, written once over [`crate::Session`]: they work the same on
//! every backend.
//!
//! Every guard is `#[must_use]`, releases with an `async fn release` that
//! reports errors, releases best-effort in the background on `Drop` (the
//! session's end is the backstop), has a `fencing_token()` that strictly
//! increases across successive holders, and a `lost()` that resolves when
//! the hold is gone. Every acquire is cancel-safe: dropping its future at any
//! await point leaves no node behind.

pub mod barrier;
mod contend;
pub mod election;
mod election_participant;
pub mod held;
pub mod lock;
pub mod membership;
pub mod names;
mod pending;
pub mod queue;
mod queue_engine;
mod queue_reliable;
mod retry;
pub mod run_once;
pub mod rwlock;
pub mod semaphore;
pub mod simple_lock;
pub mod stats;

pub use barrier::{Barrier, DoubleBarrier, Inside};
pub use election::{
    Election, ElectionEvent, ElectionState, Leader, LeaderObserver, Leadership, Participant,
    ParticipantStatus,
};
pub use held::HeldNode;
pub use lock::{Lock, LockGuard};
pub use membership::{Group, GroupChange, GroupWatcher, Member, Membership};
pub use queue::{Delivery, Queue, ReliableQueue};
pub use run_once::{period_index, OnCrash, PeriodicJob, RunContext, RunOutcome};
pub use rwlock::RwLock;
pub use semaphore::{Lease, Semaphore, SemaphoreMutex};
pub use simple_lock::SimpleLock;
pub use stats::Stats;

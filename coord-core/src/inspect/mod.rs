//! What lives at a path, read from the server: [`inspect`].
//!
//! Given any path, [`inspect`] tells which recipe (if any) keeps its nodes
//! there and shows its state: the holders and waiters of a [`Lock`],
//! [`RwLock`] or [`Semaphore`], the leader and candidates of an
//! [`Election`], the members of a [`Group`], the length and head of a
//! [`Queue`] (plain or reliable; a priority or delay queue's head in its
//! own order, told from the item names), the last run of a
//! [`PeriodicJob`] — each node with its data, stamp, creation time and
//! age.
//!
//! The recipe is recognised by the names its nodes take (the markers of
//! [`crate::layout`] and [`ElectionLayout`]) and by the directories it lays
//! out (`leases/` and
//! `locks/` for a semaphore, `items/` and `claims/` for a queue, `lock/`,
//! `last` and `started` for a periodic job, one ephemeral `lock` node for a
//! [`SimpleLock`]). Curator and kazoo recipes that share those layouts on
//! ZooKeeper are recognised as the recipe they share with.
//!
//! Owner sessions: an ephemeral node's [`Stat::owner`](crate::Stat::owner)
//! names the session that made it (ZooKeeper's `ephemeralOwner`, an etcd
//! lease, a Redis or in-memory session id), and [`Entry::session`] shows
//! it — the same id that session's [`Session::id`](crate::Session::id) and coord's log lines
//! show. A persistent node has none, except where a recipe records an owner
//! itself: the claim of a [`ReliableQueue`](crate::recipes::ReliableQueue)
//! item holds the session id of the consumer it is leased to.
//! [`Entry::ephemeral`] tells whether a node dies with its session.
//!
//! A snapshot: each node is read once, one after the other, so a state that
//! changes during the reads may show half of a change (a node that goes
//! between the listing and its read is left out).
//!
//! [`Lock`]: crate::recipes::Lock
//! [`RwLock`]: crate::recipes::RwLock
//! [`Semaphore`]: crate::recipes::Semaphore
//! [`Election`]: crate::recipes::Election
//! [`Group`]: crate::recipes::Group
//! [`Queue`]: crate::recipes::Queue
//! [`PeriodicJob`]: crate::recipes::PeriodicJob
//! [`SimpleLock`]: crate::recipes::SimpleLock
//! [`ElectionLayout`]: crate::recipes::ElectionLayout

mod dispatch;
mod election;
mod group;
mod job;
mod lock;
mod queue;
mod reader;
mod report;

pub use dispatch::{inspect, inspect_with};
pub use report::{
    Entry, InspectOptions, Inspection, JobState, Kind, MaxLeases, QueueState, Role, Side,
};

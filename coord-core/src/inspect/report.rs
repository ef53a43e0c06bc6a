//! What an inspection reports: the kind of thing at a path, and its nodes.

use std::time::{Duration, SystemTime};
/// What lives at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// No node at the path and nothing under it.
    Missing,
    /// A directory (or node) with nothing under it and no data: possibly a
    /// recipe's directory with nobody in it now.
    Empty,
    /// A node with data and nothing under it (a barrier, a job's record…).
    Node,
    /// An exclusive [`Lock`](crate::recipes::Lock) (or an election in the
    /// `LeaderSelector` layout, whose offers are lock nodes).
    Lock,
    /// A [`RwLock`](crate::recipes::RwLock).
    RwLock,
    /// A [`Semaphore`](crate::recipes::Semaphore) (or
    /// [`SemaphoreMutex`](crate::recipes::SemaphoreMutex)).
    Semaphore,
    /// A [`SimpleLock`](crate::recipes::SimpleLock).
    SimpleLock,
    /// An [`Election`](crate::recipes::Election).
    Election,
    /// A [`Group`](crate::recipes::Group).
    Group,
    /// A [`Queue`](crate::recipes::Queue) or
    /// [`ReliableQueue`](crate::recipes::ReliableQueue).
    Queue,
    /// A [`PeriodicJob`](crate::recipes::PeriodicJob).
    PeriodicJob,
    /// Nodes no recipe of coord lays out this way: listed as they are.
    Unknown,
}

impl Kind {
    /// A short lower-case name: `missing`, `empty`, `node`, `lock`,
    /// `rwlock`, `semaphore`, `simple-lock`, `election`, `group`, `queue`,
    /// `periodic-job`, `unknown`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Missing => "missing",
            Kind::Empty => "empty",
            Kind::Node => "node",
            Kind::Lock => "lock",
            Kind::RwLock => "rwlock",
            Kind::Semaphore => "semaphore",
            Kind::SimpleLock => "simple-lock",
            Kind::Election => "election",
            Kind::Group => "group",
            Kind::Queue => "queue",
            Kind::PeriodicJob => "periodic-job",
            Kind::Unknown => "unknown",
        }
    }
}

/// What a node is to the recipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Role {
    /// Holds the lock (a read or write hold, a lease), or runs the job now.
    Holder,
    /// Queued for the lock, the lease or the run.
    Waiter,
    /// Leads the election.
    Leader,
    /// Waits to lead.
    Candidate,
    /// A member of the group.
    Member,
    /// The queue's head item (the next to be taken).
    Head,
    /// A queue item leased to a consumer (not yet acknowledged).
    Leased,
    /// The node itself (a [`Kind::Node`]).
    Node,
    /// A node of an unknown layout.
    Child,
}

impl Role {
    /// A short lower-case name: `holder`, `waiter`, `leader`, `candidate`,
    /// `member`, `head`, `leased`, `node`, `child`.
    pub fn name(self) -> &'static str {
        match self {
            Role::Holder => "holder",
            Role::Waiter => "waiter",
            Role::Leader => "leader",
            Role::Candidate => "candidate",
            Role::Member => "member",
            Role::Head => "head",
            Role::Leased => "leased",
            Role::Node => "node",
            Role::Child => "child",
        }
    }
}

/// Which half of a read/write lock a node takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// A reader (`__READ__`, or kazoo's `__rlock__`).
    Read,
    /// A writer (anything else).
    Write,
}

/// One node, as read from the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// What it is to the recipe.
    pub role: Role,
    /// For a [`Kind::RwLock`]: the half it takes.
    pub side: Option<Side>,
    /// Its full path.
    pub node: String,
    /// Its data.
    pub data: Vec<u8>,
    /// Its stamp: its place in the server's order of writes, and the
    /// fencing token it holds (or will hold) with.
    pub stamp: u64,
    /// Whether it dies with its session.
    pub ephemeral: bool,
    /// When it was made, by the server's clock (`None` on etcd, which keeps
    /// no time per key).
    pub created_at: Option<SystemTime>,
    /// How long ago it was made: this process's clock at the inspection
    /// less `created_at` (zero when the server's clock is ahead).
    pub age: Option<Duration>,
    /// The session that owns it: an ephemeral node's owner
    /// ([`Stat::owner`](crate::Stat::owner)), or the consumer a leased queue
    /// item is leased to (its claim records the consumer's session); `None`
    /// for other persistent nodes.
    pub session: Option<String>,
}

/// A queue's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueState {
    /// How many items it holds, leased ones included (as `Queue::len`).
    pub len: usize,
    /// How many of them are leased to a consumer (reliable mode).
    pub leased: usize,
}

/// A periodic job's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobState {
    /// The last period recorded as run (successfully), if any.
    pub last_run: Option<u64>,
    /// The last period started, if the job runs with `OnCrash::Skip`: a
    /// period started and not recorded was abandoned (its run failed or its
    /// runner died).
    pub started: Option<u64>,
}

/// A semaphore's lease count, as far as it can be told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxLeases {
    /// As given by the caller ([`InspectOptions::max_leases`]).
    Given(u32),
    /// Inferred: a waiter is counting while this many leases are held, so
    /// there is no room for more.
    Inferred(u32),
    /// Unknown: nobody waits, so at least this many.
    AtLeast(u32),
}

/// What [`inspect`](crate::inspect::inspect) found at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspection {
    /// The path inspected.
    pub path: String,
    /// What lives there.
    pub kind: Kind,
    /// Its nodes, in the recipe's order: holders (or the leader, or the
    /// runner) before waiters (or candidates), each queue in queue order;
    /// a group's members; a queue's head, then its leased items.
    pub entries: Vec<Entry>,
    /// For [`Kind::Queue`].
    pub queue: Option<QueueState>,
    /// For [`Kind::PeriodicJob`].
    pub job: Option<JobState>,
    /// For [`Kind::Semaphore`].
    pub max_leases: Option<MaxLeases>,
    /// What else a reader should know, in sentences (how the kind was told,
    /// what could not be).
    pub notes: Vec<String>,
}

impl Inspection {
    /// The entries with `role`.
    pub fn with_role(&self, role: Role) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(move |e| e.role == role)
    }

    /// How many entries have `role`.
    pub fn count(&self, role: Role) -> usize {
        self.with_role(role).count()
    }
}

/// What [`inspect_with`](crate::inspect::inspect_with) may be told.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct InspectOptions {
    /// A semaphore's lease count: with it, holders and waiters are told
    /// apart exactly, as `Semaphore::participants` does; without it they
    /// are inferred (see [`MaxLeases`]).
    pub max_leases: Option<u32>,
}

impl InspectOptions {
    /// No hints.
    pub fn new() -> Self {
        InspectOptions::default()
    }

    /// A semaphore's lease count (at least 1).
    pub fn max_leases(mut self, n: u32) -> Self {
        self.max_leases = Some(n);
        self
    }
}

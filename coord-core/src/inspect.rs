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
//! it — the same id that session's [`Session::id`] and coord's log lines
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

use std::time::{Duration, SystemTime};

use crate::backend::node::{Child, Node};
use crate::error::{Error, Result};
use crate::hold::contenders::{self, Contender, ContenderState};
use crate::layout::{self, ITEM as ITEM_MARKER, MEMBER as MEMBER_MARKER};
use crate::machinery::retry::backoff;
use crate::path;
use crate::recipes::election::ElectionLayout;
use crate::recipes::queue::keys as queue_keys;
use crate::session::Session;

// Old paths, until the compat module goes.
#[doc(hidden)]
pub use crate::compat::inspect::*;

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

/// What [`inspect`] found at a path.
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

/// What [`inspect_with`] may be told.
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

/// Tell what lives at `path` and read its state; see the [module
/// docs](self).
///
/// # Errors
/// [`Error::InvalidPath`] for a bad path (before any I/O); session and
/// backend errors. Connection drops are retried.
///
/// # Cancel safety
/// Cancel safe: it only reads.
pub async fn inspect(session: &Session, path: &str) -> Result<Inspection> {
    inspect_with(session, path, &InspectOptions::default()).await
}

/// [`inspect`], with hints.
///
/// # Errors
/// As [`inspect`]; also [`Error::InvalidArgument`] for `max_leases` 0.
///
/// # Cancel safety
/// Cancel safe: it only reads.
pub async fn inspect_with(
    session: &Session,
    path: &str,
    options: &InspectOptions,
) -> Result<Inspection> {
    path::validate(path)?;
    if options.max_leases == Some(0) {
        return Err(Error::InvalidArgument(
            "a semaphore has at least one lease".into(),
        ));
    }
    let now = SystemTime::now();
    let r = Reader { session, now };
    let mut out = Inspection {
        path: path.to_owned(),
        kind: Kind::Missing,
        entries: Vec::new(),
        queue: None,
        job: None,
        max_leases: None,
        notes: Vec::new(),
    };
    let node = r.get(path).await?;
    let children = match r.children(path).await? {
        Some(c) => c,
        None if node.is_none() => {
            out.notes.push(format!("nothing at {path}"));
            return Ok(out);
        }
        None => Vec::new(),
    };
    if children.is_empty() {
        match node {
            Some(n) if !n.data.is_empty() => {
                out.kind = Kind::Node;
                out.entries.push(r.entry(Role::Node, path, n));
                out.notes
                    .push("a node with data and nothing under it".to_owned());
            }
            _ => {
                out.kind = Kind::Empty;
                out.notes.push(format!(
                    "nothing under {path}: no recipe has anyone there now"
                ));
            }
        }
        return Ok(out);
    }
    let has = |name: &str| children.iter().any(|c| c.name == name);
    let sequenced: Vec<&Child> = children.iter().filter(|c| c.sequence.is_some()).collect();
    let marked = |marker: &str| sequenced.iter().any(|c| c.name.contains(marker));

    if has(layout::JOB_LAST)
        || has(layout::JOB_STARTED)
        || (has(layout::JOB_LOCK) && r.is_dir(path, layout::JOB_LOCK).await?)
    {
        job(&r, path, &mut out).await?;
    } else if let Some(held) = r
        .simple_lock_holder(path, has(layout::SIMPLE_LOCK_NODE))
        .await?
    {
        out.kind = Kind::SimpleLock;
        out.entries.push(held);
        out.notes
            .push("a simple lock's waiters make no node: only its holder is listed".to_owned());
    } else if has(layout::SEMAPHORE_LEASES) || has(layout::SEMAPHORE_LOCKS) {
        semaphore(&r, path, options.max_leases, &mut out).await?;
    } else if has(layout::QUEUE_ITEMS) || has(layout::QUEUE_CLAIMS) {
        queue(&r, path, &mut out).await?;
    } else if marked(layout::READ) || marked(layout::WRITE) || marked(layout::KAZOO_READ) {
        out.kind = Kind::RwLock;
        let listed = crate::recipes::RwLock::new(session, path)?
            .participants()
            .await?;
        for c in listed {
            let side = if path::name(&c.node).contains(layout::READ)
                || path::name(&c.node).contains(layout::KAZOO_READ)
            {
                Side::Read
            } else {
                Side::Write
            };
            let mut e = r.contender(&c, Role::Holder, Role::Waiter).await?;
            e.side = Some(side);
            out.entries.push(e);
        }
    } else if election_markers()
        .iter()
        .filter(|m| **m != layout::LOCK)
        .any(|m| marked(m))
    {
        out.kind = Kind::Election;
        for c in contenders::list(session, path, &contenders::exclusive).await? {
            out.entries
                .push(r.contender(&c, Role::Leader, Role::Candidate).await?);
        }
    } else if marked(layout::LOCK) {
        out.kind = Kind::Lock;
        for c in contenders::list(session, path, &contenders::exclusive).await? {
            out.entries
                .push(r.contender(&c, Role::Holder, Role::Waiter).await?);
        }
        out.notes.push(format!(
            "an election in the LeaderSelector layout (offers named `{}`) looks the same: \
             its leader is the holder",
            ElectionLayout::LeaderSelector.marker()
        ));
    } else if marked(ITEM_MARKER) && path::name(path) == layout::QUEUE_ITEMS && path != "/" {
        // A queue's item directory: show the queue it belongs to.
        let parent = path::parent(path).to_owned();
        queue(&r, &parent, &mut out).await?;
        out.notes
            .push(format!("{path} holds the items of the queue at {parent}"));
    } else if marked(MEMBER_MARKER) {
        group(&r, path, &children, &mut out).await?;
    } else {
        // Named members (`Group::join_as`) are ephemeral leaves; anything
        // else is listed as it is.
        let mut nodes = Vec::new();
        for c in &children {
            let p = path::join(path, &c.name);
            if let Some(n) = r.get(&p).await? {
                nodes.push((p, n));
            }
        }
        if !nodes.is_empty() && nodes.iter().all(|(_, n)| n.stat.ephemeral) {
            out.kind = Kind::Group;
            for (p, n) in nodes {
                out.entries.push(r.entry(Role::Member, &p, n));
            }
            out.notes.push(
                "every node here is ephemeral, as a group's named members are (the nodes of \
                 another client's lock or election that names them otherwise, such as \
                 etcdctl's, look the same)"
                    .to_owned(),
            );
        } else {
            out.kind = Kind::Unknown;
            for (p, n) in nodes {
                out.entries.push(r.entry(Role::Child, &p, n));
            }
            out.notes
                .push("no coord recipe lays its nodes out like this".to_owned());
        }
    }
    Ok(out)
}

/// The markers an election's offers may take, in any layout.
fn election_markers() -> [&'static str; 2] {
    [
        ElectionLayout::LeaderLatch.marker(),
        ElectionLayout::LeaderSelector.marker(),
    ]
}

/// Reads, retried through connection drops.
struct Reader<'a> {
    session: &'a Session,
    now: SystemTime,
}

impl Reader<'_> {
    async fn get(&self, p: &str) -> Result<Option<Node>> {
        let mut attempt = 0;
        loop {
            match self.session.get(p).await {
                Err(e) if e.is_retryable() => backoff(&mut attempt).await,
                r => return r,
            }
        }
    }

    /// The children of `dir`; `None` when it does not exist.
    async fn children(&self, dir: &str) -> Result<Option<Vec<Child>>> {
        let mut attempt = 0;
        loop {
            match self.session.children(dir).await {
                Ok(c) => return Ok(Some(c)),
                Err(Error::NotFound { .. }) => return Ok(None),
                Err(e) if e.is_retryable() => backoff(&mut attempt).await,
                Err(e) => return Err(e),
            }
        }
    }

    /// Whether `dir/name` has children (a directory, not a leaf).
    async fn is_dir(&self, dir: &str, name: &str) -> Result<bool> {
        Ok(self
            .children(&path::join(dir, name))
            .await?
            .is_some_and(|c| !c.is_empty()))
    }

    fn age(&self, at: Option<SystemTime>) -> Option<Duration> {
        at.map(|t| self.now.duration_since(t).unwrap_or_default())
    }

    fn entry(&self, role: Role, node: &str, n: Node) -> Entry {
        Entry {
            role,
            side: None,
            node: node.to_owned(),
            data: n.data,
            stamp: n.stat.stamp,
            ephemeral: n.stat.ephemeral,
            created_at: n.stat.created_at,
            age: self.age(n.stat.created_at),
            session: n.stat.owner.map(|id| id.0),
        }
    }

    /// A contender as an entry: `holding` or `waiting` by its state.
    async fn contender(&self, c: &Contender, holding: Role, waiting: Role) -> Result<Entry> {
        let stat = self.get(&c.node).await?.map(|n| n.stat);
        Ok(Entry {
            role: match c.state {
                ContenderState::Holding => holding,
                ContenderState::Waiting => waiting,
            },
            side: None,
            node: c.node.clone(),
            data: c.data.clone(),
            stamp: c.stamp,
            // Every contender node coord or its peers make is ephemeral;
            // read it rather than assume, and read its owner.
            ephemeral: stat.as_ref().is_none_or(|s| s.ephemeral),
            created_at: c.created_at,
            age: self.age(c.created_at),
            session: stat.and_then(|s| s.owner).map(|id| id.0),
        })
    }
}

async fn job(r: &Reader<'_>, dir: &str, out: &mut Inspection) -> Result<()> {
    out.kind = Kind::PeriodicJob;
    let period = |n: Option<Node>| -> Option<u64> {
        std::str::from_utf8(&n?.data).ok()?.trim().parse().ok()
    };
    let last = r.get(&path::join(dir, layout::JOB_LAST)).await?;
    let started = r.get(&path::join(dir, layout::JOB_STARTED)).await?;
    out.job = Some(JobState {
        last_run: period(last),
        started: period(started),
    });
    let lock = path::join(dir, layout::JOB_LOCK);
    for c in contenders::list(r.session, &lock, &contenders::exclusive).await? {
        out.entries
            .push(r.contender(&c, Role::Holder, Role::Waiter).await?);
    }
    if out.count(Role::Holder) > 0 {
        out.notes.push(
            "the holder of the job's lock is running it now (its stamp is the run's \
             fencing token)"
                .to_owned(),
        );
    }
    Ok(())
}

async fn semaphore(
    r: &Reader<'_>,
    dir: &str,
    max_leases: Option<u32>,
    out: &mut Inspection,
) -> Result<()> {
    out.kind = Kind::Semaphore;
    if let Some(n) = max_leases {
        out.max_leases = Some(MaxLeases::Given(n));
        let listed = crate::recipes::Semaphore::new(r.session, dir, n)?
            .participants()
            .await?;
        for c in listed {
            out.entries
                .push(r.contender(&c, Role::Holder, Role::Waiter).await?);
        }
        return Ok(());
    }
    let leases_dir = path::join(dir, layout::SEMAPHORE_LEASES);
    let mut leases = contenders::list(r.session, &leases_dir, &|_, _| false).await?;
    let waiting = contenders::list(
        r.session,
        &path::join(dir, layout::SEMAPHORE_LOCKS),
        &contenders::exclusive,
    )
    .await?;
    // The first waiter holds the internal lock and counts the leases; while
    // there is no room its own lease node is the newest: a lease made
    // after it without the lock (the semaphore's fast path) is kept only
    // if the waiter fits too, and then it is about to take its own; one
    // that does not fit is deleted at once.
    let counting = match (waiting.first(), leases.last()) {
        // Its lease is made after its lock node.
        (Some(w), Some(l)) => l.stamp > w.stamp,
        _ => false,
    };
    if counting {
        leases.pop();
        out.max_leases = Some(MaxLeases::Inferred(
            u32::try_from(leases.len()).unwrap_or(u32::MAX),
        ));
        out.notes.push(
            "the lease count is inferred: the first waiter is counting, and its own lease \
             node (the newest) is not counted as held; give the lease count to be exact"
                .to_owned(),
        );
    } else {
        out.max_leases = Some(MaxLeases::AtLeast(
            u32::try_from(leases.len()).unwrap_or(u32::MAX),
        ));
    }
    for c in &leases {
        out.entries
            .push(r.contender(c, Role::Holder, Role::Holder).await?);
    }
    for c in &waiting {
        out.entries
            .push(r.contender(c, Role::Waiter, Role::Waiter).await?);
    }
    Ok(())
}

async fn queue(r: &Reader<'_>, dir: &str, out: &mut Inspection) -> Result<()> {
    out.kind = Kind::Queue;
    let items_dir = path::join(dir, layout::QUEUE_ITEMS);
    let claims_dir = path::join(dir, layout::QUEUE_CLAIMS);
    let mut items: Vec<Child> = r
        .children(&items_dir)
        .await?
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.sequence.is_some())
        .collect();
    // A priority or delay queue's head is not its oldest item.
    let order = queue_keys::sort_for_inspection(&mut items);
    let claims = r.children(&claims_dir).await?.unwrap_or_default();
    let claimed = |name: &str| claims.iter().any(|c| c.name == name);
    // The head: the first item still there (one taken meanwhile is skipped).
    for c in &items {
        let p = path::join(&items_dir, &c.name);
        if let Some(n) = r.get(&p).await? {
            match order {
                queue_keys::Order::Priority => out.notes.push(
                    "items carry priority keys: the head is the lowest priority, the oldest \
                     among equals"
                        .to_owned(),
                ),
                queue_keys::Order::Delay => {
                    let due = queue_keys::parse_due(&c.name);
                    let now = queue_keys::now_ms();
                    out.notes.push(if due > now {
                        format!(
                            "items carry due times: the head is the earliest due, in {:.1} s \
                             (by this host's clock)",
                            (due - now) as f64 / 1000.0
                        )
                    } else {
                        "items carry due times: the head is the earliest due, due now".to_owned()
                    });
                }
                queue_keys::Order::Fifo => {}
            }
            let mut e = r.entry(Role::Head, &p, n);
            if claimed(&c.name) {
                e.session = r.claim_owner(&claims_dir, &c.name).await?;
            }
            out.entries.push(e);
            break;
        }
    }
    let head = out.entries.first().map(|e| path::name(&e.node).to_owned());
    let mut leased = 0;
    for c in &items {
        if !claimed(&c.name) {
            continue;
        }
        leased += 1;
        if head.as_deref() == Some(c.name.as_str()) {
            continue;
        }
        let p = path::join(&items_dir, &c.name);
        if let Some(n) = r.get(&p).await? {
            let mut e = r.entry(Role::Leased, &p, n);
            e.session = r.claim_owner(&claims_dir, &c.name).await?;
            out.entries.push(e);
        }
    }
    if out
        .entries
        .first()
        .is_some_and(|e| e.role == Role::Head && e.session.is_some())
    {
        out.notes
            .push("the head item is leased to a consumer (not yet acknowledged)".to_owned());
    }
    out.queue = Some(QueueState {
        len: items.len(),
        leased,
    });
    Ok(())
}

impl Reader<'_> {
    /// The holder of the simple lock at `dir`, if `dir/lock` is there and
    /// ephemeral (a simple lock's node; a periodic job's `lock` directory
    /// is not).
    async fn simple_lock_holder(&self, dir: &str, listed: bool) -> Result<Option<Entry>> {
        if !listed {
            return Ok(None);
        }
        let node = path::join(dir, layout::SIMPLE_LOCK_NODE);
        Ok(self
            .get(&node)
            .await?
            .filter(|n| n.stat.ephemeral)
            .map(|n| self.entry(Role::Holder, &node, n)))
    }

    /// The session recorded in an item's claim.
    async fn claim_owner(&self, claims_dir: &str, item: &str) -> Result<Option<String>> {
        Ok(self
            .get(&path::join(claims_dir, item))
            .await?
            .map(|n| String::from_utf8_lossy(&n.data).into_owned()))
    }
}

async fn group(r: &Reader<'_>, dir: &str, children: &[Child], out: &mut Inspection) -> Result<()> {
    out.kind = Kind::Group;
    for c in children {
        let p = path::join(dir, &c.name);
        if let Some(n) = r.get(&p).await? {
            out.entries.push(r.entry(Role::Member, &p, n));
        }
    }
    Ok(())
}

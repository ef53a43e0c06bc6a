//! The primitive contract a backend implements: sessions over a tree of
//! absolute paths, with ephemeral and sequential nodes, versions, stamps,
//! watches and the guarded write. Recipes use nothing else.
//!
//! Backends implement [`PrimitiveSession`]; users and recipes hold a
//! [`crate::Session`], which checks every argument (see [`crate::path`])
//! before it reaches the backend, so bad input gets the same typed error on
//! every backend and never costs a round trip.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use async_trait::async_trait;
use tokio::sync::watch;

use crate::error::Result;
use crate::lease::LeaseClock;

/// The state of a session. `Expired` and `Closed` are final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SessionState {
    /// Connected; its ephemeral nodes live.
    Connected,
    /// The connection dropped; the server may still hold the session, and
    /// operations fail with [`crate::Error::ConnectionLost`] until it is back
    /// (then `Connected` again) or found gone (then `Expired`).
    Suspended,
    /// The server ended the session: its ephemeral nodes are deleted. Final.
    Expired,
    /// The owner closed the session. Final.
    Closed,
}

impl SessionState {
    /// `Expired` or `Closed`.
    pub fn is_terminal(self) -> bool {
        matches!(self, SessionState::Expired | SessionState::Closed)
    }

    /// The error every operation of a session in this state fails with:
    /// [`crate::Error::SessionExpired`] for `Expired`,
    /// [`crate::Error::SessionClosed`] for `Closed`, `None` while the
    /// session lives.
    pub fn end_error(self) -> Option<crate::Error> {
        match self {
            SessionState::Expired => Some(crate::Error::SessionExpired),
            SessionState::Closed => Some(crate::Error::SessionClosed),
            SessionState::Connected | SessionState::Suspended => None,
        }
    }
}

/// A session's id, as the backend names it (ZooKeeper session id, etcd lease
/// id, …), for logs and for test hooks that expire a session.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(pub String);

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// How a node is created: persistent or ephemeral, sequential or not, and
/// for a persistent node optionally with a TTL.
///
/// # TTL nodes
/// [`CreateMode::PersistentWithTtl`] and
/// [`CreateMode::PersistentSequentialWithTtl`] make a persistent node (it
/// does not belong to the creating session and outlives its close or
/// expiry) that the backend deletes once it has gone its TTL without a
/// change. A `set` on the node is a change and restarts the TTL; a read is
/// not. The TTL must be at least [`MIN_NODE_TTL`] and at most
/// [`MAX_NODE_TTL`] (ZooKeeper's limit, used on every backend), otherwise
/// [`crate::Session::create`] refuses it with
/// [`crate::Error::InvalidArgument`] before any I/O. TTL creates are not
/// allowed in [`crate::Session::guarded`] (refused the same way).
///
/// The deletion is not exact to the millisecond, and differs per backend:
/// - ZooKeeper (3.5.3+): the server deletes the node at the first check of
///   its container reaper (`znode.container.checkIntervalMs`, 60 s by
///   default) after the TTL has passed since the last `set` (its `mtime`)
///   and while the node has no children: a child keeps it alive. The
///   server must run with `-Dzookeeper.extendedTypesEnabled=true`; a server
///   without it refuses the create, which coord reports as
///   [`crate::Error::NotSupported`] with `operation` naming the flag. The
///   TTL is rounded up to whole milliseconds.
/// - memory: as ZooKeeper, with an exact timer: deleted when the TTL has
///   passed since the create or the last `set`, or, if it still has
///   children then, as soon as the last one is gone.
/// - etcd: the key is attached to a lease of its own granted with the TTL
///   (rounded up to whole seconds, and at least the server's minimum lease
///   TTL), marked as a TTL node's by a key outside the tree on the same
///   lease; a `set` renews that lease once (a keep-alive), which restarts
///   its full TTL. etcd would delete the key alone and leave children
///   behind, so children of a TTL node are refused
///   ([`crate::Error::NotSupported`]), as under an ephemeral node. `get`,
///   `get_watch` and `set` cost one more read for a node on a lease not
///   the session's own (to tell a TTL node from another session's
///   ephemeral node). A TTL node deleted by hand leaves its lease (and
///   marker) on the server until the TTL runs out.
/// - Redis: the node gets a key of its own that expires after the TTL
///   (`PX`, set again by every `set`), tracked like a session's key: when
///   it expires, the node is deleted (and dropped from its parent's
///   children) by the same mechanism that deletes an ended session's
///   ephemeral nodes (the key's expiry notice, or the next read that finds
///   it gone). Children are refused as on etcd.
///
/// On every backend a TTL node's [`Stat`] says `ephemeral: false` and
/// `owner: None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CreateMode {
    /// Lives until deleted.
    Persistent,
    /// Lives until deleted; the backend makes the name unique and gives it a
    /// sequence.
    PersistentSequential,
    /// Deleted when its session ends.
    Ephemeral,
    /// Deleted when its session ends; unique name and a sequence. The name
    /// is unique among live nodes; a backend may give a session's new node
    /// the name of one that session deleted (etcd does, to keep its index
    /// small), never its sequence.
    EphemeralSequential,
    /// Persistent, but deleted by the backend once it has gone this long
    /// without a change (see [TTL nodes](CreateMode#ttl-nodes)).
    PersistentWithTtl(std::time::Duration),
    /// As [`CreateMode::PersistentWithTtl`], with a unique name and a
    /// sequence as [`CreateMode::PersistentSequential`].
    PersistentSequentialWithTtl(std::time::Duration),
}

/// The shortest TTL of a TTL node: 1 ms.
pub const MIN_NODE_TTL: std::time::Duration = std::time::Duration::from_millis(1);

/// The longest TTL of a TTL node: 2^40 - 1 ms (about 34.8 years),
/// ZooKeeper's limit, used on every backend.
pub const MAX_NODE_TTL: std::time::Duration = std::time::Duration::from_millis(0xFF_FFFF_FFFF);

impl CreateMode {
    /// Whether the node dies with its session.
    pub fn is_ephemeral(self) -> bool {
        matches!(
            self,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        )
    }

    /// Whether the backend appends to the name and assigns a sequence.
    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential
                | CreateMode::EphemeralSequential
                | CreateMode::PersistentSequentialWithTtl(_)
        )
    }

    /// The TTL of a TTL mode, `None` for the others.
    pub fn ttl(self) -> Option<std::time::Duration> {
        match self {
            CreateMode::PersistentWithTtl(ttl) | CreateMode::PersistentSequentialWithTtl(ttl) => {
                Some(ttl)
            }
            CreateMode::Persistent
            | CreateMode::PersistentSequential
            | CreateMode::Ephemeral
            | CreateMode::EphemeralSequential => None,
        }
    }

    /// Check a TTL mode's TTL: between [`MIN_NODE_TTL`] and
    /// [`MAX_NODE_TTL`]. Every other mode is valid.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] for a TTL out of that range.
    pub fn validate(self) -> Result<()> {
        let Some(ttl) = self.ttl() else {
            return Ok(());
        };
        if ttl < MIN_NODE_TTL {
            return Err(crate::Error::InvalidArgument(format!(
                "a node TTL of {ttl:?} is shorter than the minimum of {MIN_NODE_TTL:?}"
            )));
        }
        crate::limits::check("a node TTL", ttl, MAX_NODE_TTL).map(drop)
    }
}

/// What a node carries besides its data.
/// Built by backends with [`Stat::new`]; read its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stat {
    /// The data version: an opaque number that changes on every `set`, for
    /// compare-and-set. Compare it for equality only.
    pub version: u64,
    /// The node's stamp: taken from a counter that increases with every
    /// create anywhere in the store (ZooKeeper czxid, etcd create revision),
    /// so a later-created node always has a larger stamp. The fencing token.
    pub stamp: u64,
    /// Whether the node dies with its session.
    pub ephemeral: bool,
    /// When the node was created, by the server's clock (not this
    /// process's): ZooKeeper's `ctime`; on Redis the server's `TIME` taken
    /// by the create script and stored with the node; in memory the
    /// store's clock at the create. `None` on etcd, which keeps no time
    /// per key, for a node made by a client that recorded none (a Redis
    /// node made before coord-redis stored it), and for the root.
    ///
    /// Read it from [`PrimitiveSession::get`]; every backend also fills it
    /// in the stat a `set` answers with. For display and "since when"
    /// questions only: clocks of different servers disagree, so never
    /// order nodes by it (that is what [`Stat::stamp`] is for).
    pub created_at: Option<std::time::SystemTime>,
    /// The session that owns an ephemeral node, as that session's
    /// [`PrimitiveSession::id`] shows it (ZooKeeper's `ephemeralOwner`,
    /// the etcd lease the key is attached to, the Redis or in-memory
    /// session that made it); `None` for a persistent node. Every backend
    /// fills it in what [`PrimitiveSession::get`] answers and in the stat a
    /// `set` answers with. Shown by `inspect`; coord itself never decides
    /// anything by it.
    pub owner: Option<SessionId>,
}

impl Stat {
    /// A stat with these fields (see each field's docs).
    pub fn new(
        version: u64,
        stamp: u64,
        ephemeral: bool,
        created_at: Option<std::time::SystemTime>,
    ) -> Self {
        Stat {
            version,
            stamp,
            ephemeral,
            created_at,
            owner: None,
        }
    }

    /// This stat, owned by `owner` (an ephemeral node's session; see
    /// [`Stat::owner`]).
    pub fn with_owner(mut self, owner: Option<SessionId>) -> Self {
        self.owner = owner;
        self
    }
}

/// A node's data and stat, as read by [`PrimitiveSession::get`].
/// Built by backends with [`Node::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Node {
    /// The data.
    pub data: Vec<u8>,
    /// Version, stamp, ephemerality.
    pub stat: Stat,
}

impl Node {
    /// A node with this data and stat.
    pub fn new(data: Vec<u8>, stat: Stat) -> Self {
        Node { data, stat }
    }
}

/// The answer to a create.
/// Built by backends with [`Created::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Created {
    /// The full path of the created node. For a sequential create it is the
    /// path asked for with a suffix that makes it unique among its siblings
    /// (ZooKeeper, memory and Redis: ten digits). Recipes name their nodes
    /// `_c_<uuid>-<kind>-` themselves (Curator's protected names), so a
    /// backend can find a create whose answer was lost by that prefix.
    pub path: String,
    /// For a sequential create, the sequence that orders this node among its
    /// siblings by creation (never parse it from the name).
    pub sequence: Option<u64>,
    /// The node's stamp (see [`Stat::stamp`]).
    pub stamp: u64,
    /// The node's first data version.
    pub version: u64,
}

impl Created {
    /// The answer to a create of the node at `path` (see each field's
    /// docs).
    pub fn new(path: String, sequence: Option<u64>, stamp: u64, version: u64) -> Self {
        Created {
            path,
            sequence,
            stamp,
            version,
        }
    }
}

/// One child of a directory, as listed by [`PrimitiveSession::children`].
/// Built by backends with [`Child::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Child {
    /// The child's name (the last path segment).
    pub name: String,
    /// Orders siblings by creation. `Some` for every child created
    /// sequential; a backend may give one to other children too (on etcd
    /// every key has a create revision; on ZooKeeper any name ending in ten
    /// digits carries one, so nodes made by Curator or kazoo count — and so
    /// does a non-sequential name that happens to end in ten digits).
    pub sequence: Option<u64>,
}

impl Child {
    /// A child named `name` (the last path segment) with this sequence.
    pub fn new(name: String, sequence: Option<u64>) -> Self {
        Child { name, sequence }
    }
}

/// A node that must still exist with a given stamp for a guarded write to
/// happen: the hold a lock holder writes under. Two nodes at one path made
/// at different times have different stamps, so a fence is never fooled by a
/// node deleted and made again.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fence {
    /// The fence node (a lock holder's own node).
    pub path: String,
    /// Its stamp when the hold was taken (the fencing token).
    pub stamp: u64,
}

/// A write made only if a [`Fence`] holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Op {
    /// Create a node (missing parents are made, as in `create`).
    Create {
        /// Path, or prefix for a sequential create.
        path: String,
        /// Data.
        data: Vec<u8>,
        /// Mode.
        mode: CreateMode,
    },
    /// Set a node's data, compare-and-set when `version` is given.
    Set {
        /// Path.
        path: String,
        /// Data.
        data: Vec<u8>,
        /// The expected current version, or `None` for any.
        version: Option<u64>,
    },
    /// Delete a node, compare-and-delete when `version` is given.
    Delete {
        /// Path.
        path: String,
        /// The expected current version, or `None` for any.
        version: Option<u64>,
    },
}

/// The answer to a guarded write.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OpResult {
    /// What `Op::Create` made.
    Created(Created),
    /// The stat after `Op::Set`.
    Set(Stat),
    /// `Op::Delete` happened.
    Deleted,
}

/// What a [`TreeWatch`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TreeChange {
    /// The node at this path (the watched root or any node under it) was
    /// made, had its data set, or was deleted. Read it again to learn
    /// which: the event says only that it changed. One event may stand for
    /// several changes of the node (coalesced); none is ever dropped.
    Changed(String),
    /// Changes may have been missed (the connection was lost and the
    /// server does not replay what happened meanwhile, or its history was
    /// compacted): read the whole subtree again. Changes after this event
    /// are reported again as they happen.
    Resync,
}

/// A persistent watch on a subtree, from
/// [`PrimitiveSession::watch_tree`]: every change of the root or of a node
/// under it, in the order the server applied them, until it is dropped or
/// the session ends.
///
/// # Cancel safety
/// [`TreeWatch::next`] is cancel safe: an event not returned stays queued.
/// Dropping the watch unregisters it on the server.
#[must_use = "a tree watch does nothing unless read"]
pub struct TreeWatch {
    rx: tokio::sync::mpsc::UnboundedReceiver<Result<TreeChange>>,
    /// The backend's task feeding `rx`, aborted when the watch is dropped
    /// (dropping what it owns removes the watch from the server).
    feed: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for TreeWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeWatch").finish_non_exhaustive()
    }
}

impl Drop for TreeWatch {
    fn drop(&mut self) {
        self.feed.abort();
    }
}

impl TreeWatch {
    /// A tree watch fed through `rx` by a backend's task `feed`. The task
    /// sends the error that ended the watch (the session's end) as its last
    /// item; it is aborted when the watch is dropped, so it should own
    /// whatever keeps the server-side watch (a stream, a watcher).
    pub fn new(
        rx: tokio::sync::mpsc::UnboundedReceiver<Result<TreeChange>>,
        feed: tokio::task::JoinHandle<()>,
    ) -> Self {
        TreeWatch { rx, feed }
    }

    /// The next change.
    ///
    /// # Errors
    /// The error that ended the watch (the session's end, or
    /// [`Error::ConnectionLost`](crate::Error::ConnectionLost) when the
    /// backend could not keep it); `SessionClosed` if the backend dropped
    /// it without saying why. After an error the watch is over.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn next(&mut self) -> Result<TreeChange> {
        match self.rx.recv().await {
            Some(r) => r,
            None => Err(crate::Error::SessionClosed),
        }
    }
}

/// A one-shot notification: resolves `Ok(())` at the first change after the
/// read it was set with, or with the error that ended the session. It may
/// fire for a change that turns out not to matter (callers read again);
/// it never misses one.
///
/// # Cancel safety
/// Dropping it unregisters interest; no change is consumed for anyone else.
#[must_use = "a watch does nothing unless awaited"]
pub struct Watch(Pin<Box<dyn Future<Output = Result<()>> + Send + 'static>>);

impl Watch {
    /// Wrap a backend's future.
    pub fn new(fut: impl Future<Output = Result<()>> + Send + 'static) -> Self {
        Watch(Box::pin(fut))
    }
}

impl Future for Watch {
    type Output = Result<()>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.0.as_mut().poll(cx)
    }
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Watch")
    }
}

/// [`PrimitiveSession::take_leaf`] as a read, then a delete (the default;
/// also for a backend whose own way does not fit some node): at least
/// once, sending the delete again through lost connections.
///
/// # Errors
/// Those of [`PrimitiveSession::get`] and [`PrimitiveSession::delete`]
/// (not `NotFound`: a node found gone is `None`).
///
/// # Cancel safety
/// Not cancel safe: the delete may land after the drop, and the data is
/// then lost with the future.
pub async fn read_then_delete<S: PrimitiveSession + ?Sized>(
    session: &S,
    path: &str,
) -> Result<Option<Vec<u8>>> {
    let Some(node) = session.get(path).await? else {
        return Ok(None);
    };
    let ours = delete_at_least_once(|| session.delete(path, None)).await?;
    Ok(ours.then_some(node.data))
}

/// Send `delete` until it is answered (again through lost connections):
/// `true` when it removed the node. After a delete whose answer was lost,
/// "gone" may be that delete's doing, so it counts as removed (at least
/// once) rather than lose what the node held.
pub(crate) async fn delete_at_least_once<F, Fut>(mut delete: F) -> Result<bool>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<()>>,
{
    let backoff = crate::backoff::Backoff::RECIPES;
    let (mut attempt, mut ambiguous) = (0, false);
    loop {
        match delete().await {
            Ok(()) => return Ok(true),
            Err(crate::Error::NotFound { .. }) => return Ok(ambiguous),
            Err(e) if e.is_retryable() => {
                ambiguous = true;
                backoff.sleep(&mut attempt).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The primitive contract, implemented once per backend.
///
/// Callers reach it through [`crate::Session`], which has already checked
/// every path and size, so an implementation may assume valid arguments.
///
/// An implementation maps its own errors to [`crate::Error`] in one place.
///
/// Common errors of every operation: [`crate::Error::SessionExpired`] and
/// [`crate::Error::SessionClosed`] once the session is over,
/// [`crate::Error::ConnectionLost`] while it is suspended, and
/// [`crate::Error::Backend`] for anything else the server says.
///
/// Cancel safety: every method may be dropped at any await point. A write
/// whose future is dropped may or may not have happened; recipes account for
/// that (see `coord_core::recipes`).
#[async_trait]
pub trait PrimitiveSession: Send + Sync + 'static {
    /// The backend's short name (`"mem"`, `"zk"`, `"etcd"`, `"redis"`).
    fn backend(&self) -> &'static str;

    /// This session's id.
    fn id(&self) -> SessionId;

    /// The session's state, as a watch that sees every change.
    fn state(&self) -> watch::Receiver<SessionState>;

    /// Create a node with `data`, making missing parents (ZooKeeper makes
    /// them container nodes, which the server removes some time after their
    /// last child goes, so emptied lock directories do not pile up; a
    /// directory that must stay is made with `Session::ensure_dir` or an
    /// explicit persistent create). For a sequential mode, `path` is a
    /// prefix to which the backend appends a suffix unique among the
    /// siblings. Ephemeral nodes belong to this session.
    ///
    /// A create whose answer is lost to a dropped connection must be found
    /// again, not made twice (ZooKeeper's protected mode). A *persistent*
    /// sequential node (a queue item) may already have been removed by
    /// another session when the retry looks for it, and then the backend
    /// cannot tell "never made" from "made and taken": it must not create it
    /// again (that would make a second item) but return `OutcomeUnknown`.
    /// An ephemeral node is removed only by its own session, so a retry
    /// that does not find it may create it.
    ///
    /// Errors: `AlreadyExists` (non-sequential, taken), `NotSupported` where
    /// a parent is ephemeral and the backend forbids children there,
    /// `OutcomeUnknown` as just said.
    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<Created>;

    /// Read a node; `None` when there is none.
    async fn get(&self, path: &str) -> Result<Option<Node>>;

    /// Replace a node's data; with `version`, only if the node is at it.
    ///
    /// Errors: `NotFound`, `VersionMismatch`.
    async fn set(&self, path: &str, data: &[u8], version: Option<u64>) -> Result<Stat>;

    /// Delete a node; with `version`, only if the node is at it.
    ///
    /// Errors: `NotFound`, `VersionMismatch`, `NotEmpty` when it has children.
    async fn delete(&self, path: &str, version: Option<u64>) -> Result<()>;

    /// Take the leaf node at `path`: delete it and return the data it held;
    /// `None` when there is no node there. For a node that never has
    /// children and whose data never changes once made — a queue's item —
    /// so a backend may delete it without checking for children, and read
    /// its data at any moment it existed.
    ///
    /// At least once: when an answer is lost and the node is then found
    /// gone, the delete that removed it may have been this one, so its data
    /// is returned (a consumer may get an item another consumer got too,
    /// but no item is lost). Requests lost to a dropped connection are sent
    /// again until one is answered or the session ends. The node must be
    /// one this session has already seen (listed, read or made): a backend
    /// that takes at once may read the data back as it was at the last
    /// revision the session had seen (etcd), and a node made after that
    /// would then be found absent, as if another session had taken it.
    ///
    /// The default reads the node, then deletes it: two round trips. A
    /// backend that deletes and returns the data in one request says so in
    /// [`PrimitiveSession::takes_leaf_at_once`].
    ///
    /// Errors: `NotEmpty` where the backend checks for children and finds
    /// some; `OutcomeUnknown` when an answer was lost, the node is gone, and
    /// its data can no longer be read (etcd: its history was compacted);
    /// those of a read and a delete once the session is over.
    async fn take_leaf(&self, path: &str) -> Result<Option<Vec<u8>>> {
        read_then_delete(self, path).await
    }

    /// Whether [`PrimitiveSession::take_leaf`] is one request (etcd: a
    /// delete that returns the key's previous value). Where it is not, a
    /// caller that takes many nodes does better to read their data ahead,
    /// pipelined, then delete each.
    fn takes_leaf_at_once(&self) -> bool {
        false
    }

    /// The children of `dir`: those with a sequence first, by sequence, then
    /// the rest by name.
    ///
    /// Errors: `NotFound` when `dir` does not exist.
    async fn children(&self, dir: &str) -> Result<Vec<Child>>;

    /// The children of `dir` whose names begin with `prefix`, in the order
    /// of [`PrimitiveSession::children`]. The default lists every child and
    /// keeps those; a backend that reads only those at the server (a range
    /// of keys) says so in [`PrimitiveSession::lists_by_prefix`], and a
    /// caller that would list a large directory often may then list a part
    /// of it instead.
    ///
    /// Errors: `NotFound` when `dir` does not exist.
    async fn children_prefixed(&self, dir: &str, prefix: &str) -> Result<Vec<Child>> {
        let mut children = self.children(dir).await?;
        children.retain(|c| c.name.starts_with(prefix));
        Ok(children)
    }

    /// Whether [`PrimitiveSession::children_prefixed`] reads only the
    /// children it returns (etcd: a range of keys; in-memory: a range of a
    /// sorted map), so that it costs the server in proportion to them.
    fn lists_by_prefix(&self) -> bool {
        false
    }

    /// Like [`PrimitiveSession::children`], and also a [`Watch`] that fires
    /// at the first change to the set of children after that read: a change
    /// that lands between the read and the watch is never missed.
    ///
    /// Errors: `NotFound` when `dir` does not exist (no watch is left set).
    async fn children_watch(&self, dir: &str) -> Result<(Vec<Child>, Watch)>;

    /// Arm a watch on the deletion of the node at `path`. `None` when there
    /// is no node now. Otherwise a [`Watch`] that resolves `Ok` once *that*
    /// node is deleted (by anyone, or by its session's end) — even if
    /// another node is made at the same path afterwards — or with the error
    /// that ended this session.
    ///
    /// The watch is armed when this returns: a delete that lands after the
    /// call is never missed, so a caller may count itself as waiting from
    /// then on. No watch is left set on the server for a node that was
    /// already gone (ZooKeeper: `getData`, not `exists`).
    ///
    /// Errors: those of a read.
    async fn watch_gone(&self, path: &str) -> Result<Option<Watch>>;

    /// [`PrimitiveSession::watch_gone`] for the node a listing showed at
    /// `path` with `sequence` ([`Child::sequence`]): `None` also when the
    /// node there now is another one, made after the listing. A backend
    /// that may give a deleted node's name to a new node (etcd reuses a
    /// session's ephemeral-sequential names; see
    /// [`CreateMode::EphemeralSequential`]) must compare, or a waiter could
    /// wait for a node queued behind itself. Where names never repeat, the
    /// default is [`PrimitiveSession::watch_gone`].
    ///
    /// Errors: those of a read.
    async fn watch_gone_listed(&self, path: &str, sequence: Option<u64>) -> Result<Option<Watch>> {
        let _ = sequence;
        self.watch_gone(path).await
    }

    /// Read the node at `path` and arm a watch on its next change. `None`
    /// when there is no node now (and no watch is left set on the server).
    /// Otherwise the node as read, and a [`Watch`] that resolves `Ok` at
    /// the first change to *that* node after the read: its data set (even
    /// to the same bytes, by any session), or its deletion (by anyone, or
    /// by its session's end) — or with the error that ended this session.
    ///
    /// A change that lands between the read and the watch is never missed
    /// (ZooKeeper: `getData` with a watch; etcd: a watch from the read's
    /// revision + 1; Redis: subscribe, then read). A change to another
    /// node — a sibling, a child — does not fire it. This is what a lock
    /// holder waits on to hear a revocation request written into its node.
    ///
    /// Errors: those of a read.
    async fn get_watch(&self, path: &str) -> Result<Option<(Node, Watch)>>;

    /// Watch the subtree at `path` (the node and everything under it,
    /// whether or not it exists yet) with one persistent watch: ZooKeeper
    /// 3.6's persistent recursive watches, etcd's prefix watches. The watch
    /// is armed when this returns: a change applied after the call is
    /// reported (see [`TreeWatch`]).
    ///
    /// Optional: the default is `NotSupported`, and recipes that can use it
    /// (the tree cache) fall back to one watch per node there.
    ///
    /// Errors: `NotSupported` where the backend or server has no such
    /// watch, or cannot set one on that path now; those of a read.
    async fn watch_tree(&self, path: &str) -> Result<TreeWatch> {
        let _ = path;
        Err(crate::Error::NotSupported {
            operation: "tree watches",
            backend: self.backend(),
        })
    }

    /// How many requests this session has sent to its server so far: each
    /// is one round trip (requests pipelined on one connection count one
    /// each). A request sent again after a lost connection counts again.
    /// Keep-alives, pings and the messages of watch streams are not
    /// counted. `None` where the backend does not count. Benchmarks and
    /// tests read it to count what an operation costs, a figure that does
    /// not depend on the machine's speed.
    fn requests_sent(&self) -> Option<u64> {
        None
    }

    /// Do `op` only if `fence.path` exists with stamp `fence.stamp`, as one
    /// atomic write.
    ///
    /// Errors: `LockLost` when the fence does not hold (checked first);
    /// otherwise those of the operation.
    async fn guarded(&self, fence: &Fence, op: Op) -> Result<OpResult>;

    /// End the session: its ephemeral nodes are deleted and its state
    /// becomes `Closed`. Closing a closed or expired session is `Ok`.
    async fn close(&self) -> Result<()>;

    /// The session's lease clock (see [`crate::lease`]). The backend calls
    /// [`LeaseClock::renewed`] with the send time of every answered request
    /// that renews the session on the server (heartbeats included), so the
    /// deadline it keeps lies before the instant the server could end the
    /// session. [`crate::Session`] treats the session as lost when it passes.
    fn lease(&self) -> &LeaseClock;

    /// The client has given this session up: its lease deadline passed with
    /// no newer answer (see [`crate::lease`]). Stop renewing it, end it on
    /// the server as soon as the server can be reached (ZooKeeper: close the
    /// session; etcd: revoke the lease; Redis: delete the session), so its
    /// nodes stop blocking others, and set the state to `Expired`.
    ///
    /// Retries until the server confirms or the session is certainly over
    /// there (the server ends it `session_timeout` after it last heard from
    /// the client, and nothing renews it any more); never fails. Called at
    /// most once, by the session's monitor.
    ///
    /// Cancel safety: if dropped, the session may still be alive on the
    /// server until its timeout; the client-side state is `Expired` either
    /// way. [`crate::Session::close`] waits for it rather than dropping it.
    async fn abandon(&self);
}

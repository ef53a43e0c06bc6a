//! The primitive contract a backend implements: sessions over a tree of
//! absolute paths, with ephemeral and sequential nodes, versions, stamps,
//! watches and the guarded write. Recipes use nothing else.
//!
//! Backends implement [`PrimitiveSession`]; users and recipes hold a
//! [`crate::Session`], which checks every argument (see [`crate::path`])
//! before it reaches the backend, so bad input gets the same typed error on
//! every backend and never costs a round trip.

use async_trait::async_trait;
use tokio::sync::watch;

use crate::backend::delete::delete_at_least_once;
use crate::backend::lease::LeaseClock;
use crate::backend::node::{
    Child, CreateMode, Created, Fence, Node, Op, OpResult, SessionId, SessionState, Stat,
};
use crate::backend::order::{self, Blockers, Place};
use crate::backend::txn::{Transaction, TxnLimits, TxnResult};
use crate::backend::watch::{TreeWatch, Watch};
use crate::error::{Error, Result};

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

    /// Read many nodes: the answers in the order of `paths`, `None` for a
    /// node that is not there, as [`PrimitiveSession::get`] answers each.
    /// Not one snapshot: each node is as it was at some moment during the
    /// call, as with separate reads (a backend may read them in batches).
    ///
    /// The default sends every `get` at once and awaits them together
    /// (pipelined where the connection multiplexes: ZooKeeper); a backend
    /// that reads many keys in one request says so in
    /// [`PrimitiveSession::reads_many_at_once`].
    ///
    /// Errors: those of [`PrimitiveSession::get`]; the first one met fails
    /// the whole call (a read: ask again).
    async fn get_many(&self, paths: &[String]) -> Result<Vec<Option<Node>>> {
        futures_util::future::try_join_all(paths.iter().map(|p| self.get(p))).await
    }

    /// Whether [`PrimitiveSession::get_many`] reads its nodes in a few
    /// requests (a batch of keys each) rather than one request per node.
    fn reads_many_at_once(&self) -> bool {
        false
    }

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

    /// Where the contender `me` (a child of `dir`: its name and the
    /// sequence its create returned) stands in the queue of `dir`: gone,
    /// first, or behind the nearest earlier child that `blockers` says it
    /// waits for (see [`crate::backend::order`] for the rules). One read
    /// of the directory's state; the answer equals [`order::place_in`]
    /// over a listing at that moment.
    ///
    /// The default lists every child (what ZooKeeper has); a backend that
    /// answers from an ordered index says so in
    /// [`PrimitiveSession::orders_at_server`].
    ///
    /// Errors: those of a read (a missing `dir` is [`Place::Gone`], not
    /// `NotFound`).
    async fn place(&self, dir: &str, me: &Child, blockers: Blockers<'_>) -> Result<Place> {
        match self.children(dir).await {
            Ok(children) => Ok(order::place_in(&children, me, blockers)),
            Err(Error::NotFound { .. }) => Ok(Place::Gone),
            Err(e) => Err(e),
        }
    }

    /// The first `n` children of `dir`, in the order of
    /// [`PrimitiveSession::children`] (those with a sequence first, by
    /// sequence). The default lists every child and keeps the first `n`;
    /// see [`PrimitiveSession::orders_at_server`].
    ///
    /// Errors: `NotFound` when `dir` does not exist.
    async fn first_children(&self, dir: &str, n: usize) -> Result<Vec<Child>> {
        Ok(order::first_in(self.children(dir).await?, n))
    }

    /// Create the contender node `path` (ephemeral and sequential, as
    /// [`PrimitiveSession::create`] with [`CreateMode::EphemeralSequential`]
    /// makes it) and, where the backend reads it in the same atomic step as
    /// the create, where the new node stood in its directory's queue at
    /// that moment: what [`PrimitiveSession::place`] would have answered
    /// right after the create, before any other change (see
    /// [`crate::backend::order`]). A recipe that learns its place here need
    /// not ask for it: one request instead of two.
    ///
    /// The place is as of the create, not of the answer's arrival: the
    /// nodes before it may have gone since (a wait for one already gone
    /// ends at once), and the new node itself may have gone since (its
    /// session ended), which the next question or wait reports. No node
    /// can come before it later: sequences only grow.
    ///
    /// `None` when the backend did not read it (the default, which only
    /// creates; see [`PrimitiveSession::places_at_create`]) or could not
    /// tell from what it read (etcd reads a window of the nearest earlier
    /// keys): then ask [`PrimitiveSession::place`].
    ///
    /// Errors: those of [`PrimitiveSession::create`].
    async fn create_contender(
        &self,
        path: &str,
        data: &[u8],
        blockers: Blockers<'_>,
    ) -> Result<(Created, Option<Place>)> {
        let _ = blockers;
        let created = self
            .create(path, data, CreateMode::EphemeralSequential)
            .await?;
        Ok((created, None))
    }

    /// Whether [`PrimitiveSession::create_contender`] reads the new node's
    /// place in the create's own request (then a recipe asks nothing more
    /// when it is answered), rather than only creating.
    fn places_at_create(&self) -> bool {
        false
    }

    /// Whether [`PrimitiveSession::place`] and
    /// [`PrimitiveSession::first_children`] are answered by the server from
    /// an ordered index, at a cost that does not grow with the number of
    /// children beyond O(log N), rather than from a full listing.
    fn orders_at_server(&self) -> bool {
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

    /// Commit `txn` as one atomic step: every fence and every check holds
    /// and every write is applied, or nothing is (see
    /// [`crate::backend::txn`] for the whole contract). `txn` has been
    /// checked against [`PrimitiveSession::transaction_limits`] and the
    /// rules of [`Transaction::validate`] before it gets here.
    ///
    /// Errors: `TransactionFailed` naming the step that failed (a fence
    /// first, whatever else fails); `OutcomeUnknown` when the answer was
    /// lost and the backend cannot tell what happened; the session's end
    /// and `ConnectionLost` only when nothing was applied. The default
    /// says `NotSupported`: a backend added before transactions.
    async fn transaction(&self, txn: &Transaction) -> Result<Vec<TxnResult>> {
        let _ = txn;
        Err(Error::NotSupported {
            operation: "a transaction",
            backend: self.backend(),
        })
    }

    /// What one [`PrimitiveSession::transaction`] may carry here, checked
    /// before any I/O. The default is ZooKeeper's: 1,000 steps and
    /// 960,000 bytes. Its `jute.maxbuffer` (1 MiB, 1,048,575 bytes, by
    /// default) bounds the whole multi request, and each step costs up to
    /// about 60 bytes beyond its path and data (the op header, lengths,
    /// the ACL, flags, the version), so 1,000 steps and 960,000 bytes fit.
    fn transaction_limits(&self) -> TxnLimits {
        TxnLimits::new(1_000, 960_000)
    }

    /// Ask the server whether this session still lives there: `Ok` when it
    /// does; the session's end when the server no longer has it (and the
    /// state then says so). A holder asks when it finds its node gone: the
    /// ephemeral node of a session that lives can only have been deleted by
    /// another session, while a session's end takes its nodes with it, and
    /// the deletion may reach a waiter before the end does.
    ///
    /// The default reads the root: right where the server refuses every
    /// request of an ended session (ZooKeeper, Redis, in memory). A backend
    /// whose reads do not involve the session (etcd, whose session is a
    /// lease) asks otherwise.
    ///
    /// Errors: the session's end (`SessionClosed` when this session's own
    /// close ended it); `ConnectionLost` while it cannot tell (ask again).
    async fn alive(&self) -> Result<()> {
        self.get("/").await.map(|_| ())
    }

    /// End the session: its ephemeral nodes are deleted and its state
    /// becomes `Closed`. Closing a closed or expired session is `Ok`.
    async fn close(&self) -> Result<()>;

    /// The session's lease clock (see [`crate::backend::lease`]). The backend calls
    /// [`LeaseClock::renewed`] with the send time of every answered request
    /// that renews the session on the server (heartbeats included), so the
    /// deadline it keeps lies before the instant the server could end the
    /// session. [`crate::Session`] treats the session as lost when it passes.
    fn lease(&self) -> &LeaseClock;

    /// The client has given this session up: its lease deadline passed with
    /// no newer answer (see [`crate::backend::lease`]). Stop renewing it, end it on
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

    /// A way to end this session on the server that needs neither this
    /// session's connection nor its runtime: the future opens a connection
    /// of its own, on whatever runtime polls it, and ends the session
    /// there (ZooKeeper: takes the session over with its id and password
    /// and closes it; etcd: revokes its lease; Redis: runs its end). It
    /// must not disturb anything but this session.
    ///
    /// [`crate::Session`] uses it when the last handle of a session still
    /// open is dropped where its own connection can no longer carry the
    /// close: the runtime that runs that connection is shutting down (a
    /// `main` on a current-thread runtime returned or panicked), or there
    /// is none. Bounded by the caller. `None` (the default) where there is
    /// no such way, or no need (an in-process store).
    fn ender(&self) -> Option<SessionEnder> {
        None
    }

    /// Whether dropping the last handle of this session while it is still
    /// open closes it (see [`crate::Session`]'s "Dropping the last
    /// handle"): `true` (the default) for a session on a server. A backend
    /// that models a dropped session as a crashed process (the in-memory
    /// store: it expires after its TTL) says `false`.
    fn closes_on_drop(&self) -> bool {
        true
    }
}

/// A session's end over a connection of its own; see
/// [`PrimitiveSession::ender`].
pub type SessionEnder =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>> + Send + 'static>>;

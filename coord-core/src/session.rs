//! [`Session`]: the handle users and recipes hold. It checks every argument
//! before any I/O, identically for every backend, then asks the backend.

use std::sync::{Arc, Weak};

use tokio::sync::watch;

use crate::backend::node::{
    Child, CreateMode, Created, Fence, Node, Op, OpResult, SessionId, SessionState, Stat,
};
use crate::backend::order::{Blockers, Place};
use crate::backend::primitive::PrimitiveSession;
use crate::backend::txn::{Transaction, TxnLimits, TxnResult};
use crate::backend::watch::{TreeWatch, Watch};
use crate::error::{Error, Result};
use crate::machinery::in_drop;
use crate::path;
use crate::telemetry;

/// A session on some backend: cheap to clone (an `Arc`), shared by every
/// recipe that uses it. Its ephemeral nodes live as long as it does.
///
/// Every method checks its arguments first (see [`crate::path`]): an invalid
/// path or oversized data is an [`Error::InvalidPath`] or
/// [`Error::InvalidArgument`], the same on every backend, with no I/O. Each
/// method's other errors are listed on [`PrimitiveSession`].
///
/// # The lease deadline
/// A `Session` keeps the client's side of the session's life (see
/// [`crate::backend::lease`]): once the backend's [`LeaseClock`](crate::backend::lease::LeaseClock) deadline passes
/// without a newer answer from the server, the session counts as lost here,
/// before the server can end it and give its holds to anyone else. Its
/// state becomes [`SessionState::Expired`], every operation (and every
/// watch in flight) fails with [`Error::SessionExpired`], every `lost()` of
/// the recipes resolves, and the backend ends the session on the server as
/// soon as it reaches it ([`PrimitiveSession::abandon`]). A connection that
/// comes back in time changes nothing: `Suspended`, then `Connected` again.
///
/// # Work that must finish
/// Clean-up that recipes start in the background (deleting a released or
/// abandoned node, putting a queue item back) is retried until it is done
/// or the session is over, and [`Session::close`] waits for it.
///
/// # Dropping the last handle
/// A process that ends without [`Session::close`] (a `?` that returns an
/// error from `main`, a panic) does not leave its holds blocking others
/// for the session timeout. Dropping the last handle of a session still
/// open (every clone, every recipe and guard made on it; the session's
/// own background work does not count) closes it: its ephemeral nodes go
/// at once.
/// - On a multi-thread runtime (`#[tokio::main]`'s), the drop waits for
///   the server to confirm the close, at most 2 s (through
///   `block_in_place`: other tasks go on meanwhile).
/// - On a current-thread runtime the close runs when the runtime next gets
///   to it; if the runtime is shut down first (the `main` returned), the
///   session is ended over a connection of its own, at most 2 s, as the
///   runtime drops the work (likewise with no runtime at all).
/// - A server that does not answer in that time ends the session by its
///   timeout, as before.
///
/// Dropping a guard without `release` deletes its node in the
/// background; on a multi-thread runtime, while the session is connected,
/// the drop waits for that delete, at most 1 s, so a process that exits
/// right after (even through `std::process::exit`, which runs no
/// destructor) has freed the lock. On a current-thread runtime it cannot
/// wait: the delete leaves at the next `.await`, so there close the
/// session (or release the guard) before `std::process::exit`. Nothing
/// survives `std::process::abort` or a killed process: the server ends
/// that session after its timeout.
///
/// The in-memory backend keeps a dropped session a crashed process (it
/// expires after its TTL: see `coord_mem::MemStore`).
///
/// # Cancel safety
/// Every async method may be dropped. Reads are then simply not done; a
/// write may or may not have been applied.
#[derive(Clone)]
pub struct Session {
    inner: Arc<dyn PrimitiveSession>,
    local: Arc<Local>,
    /// Shared by every handle but those of the session's own background
    /// work: dropped with the last of them, it ends a session still open
    /// (see "Dropping the last handle"). Held for its drop only.
    #[allow(dead_code)]
    last: Option<Arc<LastHandle>>,
}

/// Dropped with the last [`Session`] handle (background work's handles
/// aside): ends the session if it is still open.
struct LastHandle {
    inner: Arc<dyn PrimitiveSession>,
    local: Arc<Local>,
}

impl Drop for LastHandle {
    fn drop(&mut self) {
        if self.local.state.borrow().is_terminal() || !self.inner.closes_on_drop() {
            return;
        }
        tracing::debug!(target: crate::telemetry::TARGET, session = %self.inner.id(), "last handle dropped without close: closing the session");
        let closing = Box::pin(close_session(
            Arc::clone(&self.inner),
            Arc::clone(&self.local),
        ));
        in_drop::close_on_drop(closing, self.inner.ender());
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("backend", &self.inner.backend())
            .field("id", &self.inner.id())
            .field("state", &*self.local.state.borrow())
            .finish()
    }
}

/// The client's view of the session, shared by every clone of a
/// [`Session`] and its monitor task.
struct Local {
    /// The backend's state, unless the lease deadline passed first (then
    /// `Expired`, final).
    state: watch::Sender<SessionState>,
    /// How many background tasks that must finish are running.
    pending: watch::Sender<usize>,
    /// The backend's name and the session's id, for telemetry.
    backend: &'static str,
    id: SessionId,
}

impl Local {
    /// Follow the backend's state, unless ours is already final.
    fn mirror(&self, next: SessionState) {
        self.change(
            |current| (!current.is_terminal() && current != next).then_some(next),
            None,
        );
    }

    /// Change the state to what `to` says (`None`: leave it), and say so
    /// (once per change, the only place a change is logged).
    fn change(
        &self,
        to: impl FnOnce(SessionState) -> Option<SessionState>,
        reason: Option<&str>,
    ) -> bool {
        let mut change = None;
        self.state.send_if_modified(|current| match to(*current) {
            Some(next) => {
                change = Some((std::mem::replace(current, next), next));
                true
            }
            None => false,
        });
        if let Some((from, next)) = change {
            telemetry::session_state(self.backend, &self.id, Some(from), next, reason);
        }
        change.is_some()
    }

    /// A task that must finish has begun; it ends when the guard drops.
    fn begin_work(self: &Arc<Self>) -> WorkGuard {
        self.pending.send_modify(|n| *n += 1);
        WorkGuard(Arc::clone(self))
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        telemetry::session_gone(self.backend, *self.state.borrow());
    }
}

/// Counts one running task that [`Session::close`] waits for.
struct WorkGuard(Arc<Local>);

impl Drop for WorkGuard {
    fn drop(&mut self) {
        self.0.pending.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// The error for a final state (`SessionClosed` for any other: only
/// called with one).
fn end_error(state: SessionState) -> Error {
    state.end_error().unwrap_or(Error::SessionClosed)
}

/// Resolve with the session's end, as seen through `rx`.
async fn ended_of(mut rx: watch::Receiver<SessionState>) -> Error {
    match rx.wait_for(|s| s.is_terminal()).await {
        Ok(s) => end_error(*s),
        // The sender is gone: nothing will ever change again.
        Err(_) => Error::SessionClosed,
    }
}

/// Follow the backend's state into `local`, and declare the session lost
/// when its lease deadline passes without a renewal; then have the backend
/// end it on the server. Holds the backend only weakly between wake-ups, so
/// dropping every `Session` still drops (and so closes) the backend.
async fn monitor(
    inner: Weak<dyn PrimitiveSession>,
    mut backend_state: watch::Receiver<SessionState>,
    local: Arc<Local>,
) {
    loop {
        let current = *backend_state.borrow_and_update();
        local.mirror(current);
        if current.is_terminal() {
            return;
        }
        // With every handle gone there is no deadline to keep, but the
        // backend's state still ends (its final state is mirrored).
        let deadline = inner.upgrade().map(|s| s.lease().deadline());
        let passed = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            changed = backend_state.changed() => {
                if changed.is_err() {
                    local.mirror(SessionState::Closed);
                    return;
                }
            }
            () = passed => {
                let Some(session) = inner.upgrade() else { continue };
                if !session.lease().expired() || backend_state.borrow().is_terminal() {
                    continue;
                }
                // Counted before the state says so: a `close` that sees
                // the loss also waits for the abandon.
                let work = local.begin_work();
                let lost = local.change(
                    |s| (!s.is_terminal()).then_some(SessionState::Expired),
                    Some(
                        "no answer from the server before the lease deadline: the session is lost \
                         here, before the server can give its holds away; ending it on the server",
                    ),
                );
                if lost {
                    session.abandon().await;
                }
                drop(work);
                return;
            }
        }
    }
}

impl telemetry::Origin for Session {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
    fn id(&self) -> SessionId {
        self.inner.id()
    }
}

impl Session {
    /// Wrap a backend's session, and start following its state and its
    /// lease deadline (see the type docs).
    ///
    /// # Panics
    /// Outside a tokio runtime: the deadline is watched by a tokio task.
    pub fn new(inner: Arc<dyn PrimitiveSession>) -> Self {
        let backend_state = inner.state();
        let initial = *backend_state.borrow();
        let local = Arc::new(Local {
            state: watch::Sender::new(initial),
            pending: watch::Sender::new(0),
            backend: inner.backend(),
            id: inner.id(),
        });
        telemetry::session_state(local.backend, &local.id, None, initial, None);
        if !initial.is_terminal() {
            tokio::spawn(monitor(
                Arc::downgrade(&inner),
                backend_state,
                Arc::clone(&local),
            ));
        }
        let last = Some(Arc::new(LastHandle {
            inner: Arc::clone(&inner),
            local: Arc::clone(&local),
        }));
        Session { inner, local, last }
    }

    /// A handle for the session's own background work: it does not keep
    /// the session from being closed when the users' last handle drops.
    pub(crate) fn for_work(&self) -> Session {
        Session {
            inner: Arc::clone(&self.inner),
            local: Arc::clone(&self.local),
            last: None,
        }
    }

    /// The backend's short name.
    pub fn backend(&self) -> &'static str {
        self.inner.backend()
    }

    /// This session's id.
    pub fn id(&self) -> SessionId {
        self.inner.id()
    }

    /// The current state, as the client sees it: the backend's, or
    /// `Expired` once the lease deadline has passed.
    pub fn state(&self) -> SessionState {
        let local = *self.local.state.borrow();
        if local.is_terminal() {
            return local;
        }
        let backend = *self.inner.state().borrow();
        if !backend.is_terminal() && self.inner.lease().expired() {
            return SessionState::Expired;
        }
        backend
    }

    /// A watch over [`Session::state`] that sees every change.
    pub fn state_watch(&self) -> watch::Receiver<SessionState> {
        self.local.state.subscribe()
    }

    /// The instant past which this session counts as lost unless the
    /// server answers a renewal first (see [`crate::backend::lease`]).
    pub fn lease_deadline(&self) -> tokio::time::Instant {
        self.inner.lease().deadline()
    }

    /// How many requests this session has sent to its server so far (see
    /// [`PrimitiveSession::requests_sent`]); `None` where the backend does
    /// not count them. The difference across an operation is its cost in
    /// round trips.
    pub fn requests_sent(&self) -> Option<u64> {
        self.inner.requests_sent()
    }

    /// The session timeout the server granted.
    pub fn session_timeout(&self) -> std::time::Duration {
        self.inner.lease().session_timeout()
    }

    /// Resolve when the session is over, with [`Error::SessionExpired`] or
    /// [`Error::SessionClosed`].
    ///
    /// # Errors
    /// None: it resolves *to* the error that ended the session.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn ended(&self) -> Error {
        ended_of(self.local.state.subscribe()).await
    }

    /// `Err` once the session is over here: its final state, or its lease
    /// deadline passed (the monitor is about to say so).
    fn check(&self) -> Result<()> {
        let state = *self.local.state.borrow();
        if state.is_terminal() {
            return Err(end_error(state));
        }
        if self.inner.lease().expired() {
            return Err(Error::SessionExpired);
        }
        Ok(())
    }

    /// Run a backend operation, unless the session is over; if it ends
    /// while the operation waits for an answer, say so at once.
    async fn run<T>(&self, op: impl std::future::Future<Output = Result<T>>) -> Result<T> {
        self.check()?;
        let end = ended_of(self.local.state.subscribe());
        tokio::select! {
            biased;
            r = op => r,
            e = end => Err(e),
        }
    }

    /// A backend's watch that also ends when the session ends here.
    fn bound(&self, watch: Watch) -> Watch {
        let end = ended_of(self.local.state.subscribe());
        Watch::new(async move {
            tokio::select! {
                biased;
                r = watch => r,
                e = end => Err(e),
            }
        })
    }

    /// Run `work` in the background as work that must finish:
    /// [`Session::close`] waits for it. `work` itself must end once the
    /// session is over (every operation then fails at once).
    pub(crate) fn spawn_work(&self, work: impl std::future::Future<Output = ()> + Send + 'static) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(target: crate::telemetry::TARGET,
                session = %self.id(),
                "no tokio runtime to finish a clean-up in; the session's end is left to do it"
            );
            return;
        };
        let guard = self.local.begin_work();
        rt.spawn(async move {
            let _guard = guard;
            work.await;
        });
    }

    /// Create a node; see [`PrimitiveSession::create`].
    ///
    /// # Errors
    /// `InvalidPath` (also for `/`), `InvalidArgument` for oversized data
    /// or a TTL mode's TTL out of range (see
    /// [TTL nodes](CreateMode#ttl-nodes)), then the backend's;
    /// `NotSupported` for a TTL mode on a ZooKeeper server without TTL
    /// nodes enabled; `OutcomeUnknown` for a persistent sequential create
    /// whose answer was lost and whose node is not there now (it may have
    /// been made and already removed by another session; see
    /// [`PrimitiveSession::create`]).
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped after the request left, the node may exist.
    /// Recipes that must not leave one behind run the create in a task
    /// (see `recipes::machinery::pending`).
    pub async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<Created> {
        path::validate_non_root(path)?;
        path::validate_data(data)?;
        mode.validate()?;
        self.run(self.inner.create(path, data, mode)).await
    }

    /// Read a node; `None` when there is none.
    ///
    /// # Errors
    /// `InvalidPath`, then the backend's.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn get(&self, path: &str) -> Result<Option<Node>> {
        path::validate(path)?;
        self.run(self.inner.get(path)).await
    }

    /// Read many nodes: the answers in the order of `paths`, `None` for a
    /// node that is not there. In as few requests as the backend allows
    /// (etcd: a transaction of reads per batch; Redis: a script per batch;
    /// PostgreSQL: one statement per batch; ZooKeeper: every read sent at
    /// once, pipelined; in memory: under one lock). Not one snapshot: each
    /// node is as it was at some moment during the call, as with separate
    /// [`Session::get`]s.
    ///
    /// # Errors
    /// `InvalidPath` for any path, before any I/O; then the backend's (the
    /// first one met fails the whole call).
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn get_many(&self, paths: &[String]) -> Result<Vec<Option<Node>>> {
        for p in paths {
            path::validate(p)?;
        }
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        self.run(self.inner.get_many(paths)).await
    }

    /// Whether [`Session::get_many`] reads its nodes a batch per request,
    /// rather than one request per node.
    pub fn reads_many_at_once(&self) -> bool {
        self.inner.reads_many_at_once()
    }

    /// Whether a node exists.
    ///
    /// # Errors
    /// As [`Session::get`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn exists(&self, path: &str) -> Result<bool> {
        Ok(self.get(path).await?.is_some())
    }

    /// Replace a node's data, compare-and-set when `version` is given.
    ///
    /// # Errors
    /// `InvalidPath`, `InvalidArgument`; `NotFound`, `VersionMismatch`.
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may land after the drop.
    pub async fn set(&self, path: &str, data: &[u8], version: Option<u64>) -> Result<Stat> {
        path::validate_non_root(path)?;
        path::validate_data(data)?;
        self.run(self.inner.set(path, data, version)).await
    }

    /// Delete a node, compare-and-delete when `version` is given.
    ///
    /// # Errors
    /// `InvalidPath`; `NotFound`, `VersionMismatch`, `NotEmpty`.
    ///
    /// # Cancel safety
    /// Not cancel safe: the delete may land after the drop.
    pub async fn delete(&self, path: &str, version: Option<u64>) -> Result<()> {
        path::validate_non_root(path)?;
        self.run(self.inner.delete(path, version)).await
    }

    /// Delete the leaf node at `path` and return its data, at least once
    /// (see [`PrimitiveSession::take_leaf`]): `None` when there is none.
    /// Only for nodes that never have children and whose data never
    /// changes, such as a queue's items: a backend may skip the check for
    /// children. The node must be one this session has listed, read or
    /// made already (see [`PrimitiveSession::take_leaf`]).
    ///
    /// # Errors
    /// `InvalidPath`; `OutcomeUnknown` when an answer was lost, the node is
    /// gone, and its data can no longer be read; `NotEmpty` where the
    /// backend checks for children; the session's end.
    ///
    /// # Cancel safety
    /// Not cancel safe: the delete may land after the drop, and the data
    /// is then lost with the future.
    pub async fn take_leaf(&self, path: &str) -> Result<Option<Vec<u8>>> {
        path::validate_non_root(path)?;
        self.run(self.inner.take_leaf(path)).await
    }

    /// Whether [`Session::take_leaf`] is one request on this backend (see
    /// [`PrimitiveSession::takes_leaf_at_once`]).
    pub fn takes_leaf_at_once(&self) -> bool {
        self.inner.takes_leaf_at_once()
    }

    /// The children of `dir` in creation order (see
    /// [`PrimitiveSession::children`]).
    ///
    /// # Errors
    /// `InvalidPath`; `NotFound`.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn children(&self, dir: &str) -> Result<Vec<Child>> {
        path::validate(dir)?;
        self.run(self.inner.children(dir)).await
    }

    /// The children of `dir` whose names begin with `prefix`, in creation
    /// order (see [`PrimitiveSession::children_prefixed`]); an empty prefix
    /// is every child.
    ///
    /// # Errors
    /// `InvalidPath` (checked before any I/O: see
    /// [`path::validate_name_prefix`]); `NotFound` when `dir` does not exist.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn children_prefixed(&self, dir: &str, prefix: &str) -> Result<Vec<Child>> {
        path::validate_name_prefix(dir, prefix)?;
        self.run(self.inner.children_prefixed(dir, prefix)).await
    }

    /// Whether [`Session::children_prefixed`] costs the server only the
    /// children it returns on this backend (see
    /// [`PrimitiveSession::lists_by_prefix`]).
    pub fn lists_by_prefix(&self) -> bool {
        self.inner.lists_by_prefix()
    }

    /// Where the contender `me` stands in the queue of `dir` (see
    /// [`crate::backend::order`]): gone, first, or behind the nearest
    /// earlier child `blockers` says it waits for. On a backend with an
    /// ordered index ([`Session::orders_at_server`]) this costs the server
    /// O(log N), not a listing.
    ///
    /// # Errors
    /// `InvalidPath` for a bad `dir` or a name that is not one path
    /// segment, `InvalidArgument` for a `me` without a sequence (both
    /// before any I/O); then the backend's read errors (a missing `dir` is
    /// [`Place::Gone`]).
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn place(&self, dir: &str, me: &Child, blockers: Blockers<'_>) -> Result<Place> {
        path::validate(dir)?;
        path::validate(&path::join(dir, &me.name))?;
        if me.sequence.is_none() {
            return Err(Error::InvalidArgument(
                "a contender's place needs the sequence its create returned".into(),
            ));
        }
        self.run(self.inner.place(dir, me, blockers)).await
    }

    /// Create the contender node `path` (ephemeral and sequential) and,
    /// where the backend reads it with the create, where it stood in its
    /// directory's queue at that moment; see
    /// [`PrimitiveSession::create_contender`].
    ///
    /// # Errors
    /// As [`Session::create`] with [`CreateMode::EphemeralSequential`]:
    /// `InvalidPath` (also for `/`) and `InvalidArgument` for oversized
    /// data, before any I/O; then the backend's.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped after the request left, the node may exist
    /// (as [`Session::create`]).
    pub async fn create_contender(
        &self,
        path: &str,
        data: &[u8],
        blockers: Blockers<'_>,
    ) -> Result<(Created, Option<Place>)> {
        path::validate_non_root(path)?;
        path::validate_data(data)?;
        self.run(self.inner.create_contender(path, data, blockers))
            .await
    }

    /// Whether [`Session::create_contender`] reads the new node's place
    /// with the create (see [`PrimitiveSession::places_at_create`]).
    pub fn places_at_create(&self) -> bool {
        self.inner.places_at_create()
    }

    /// The first `n` children of `dir`, in the order of
    /// [`Session::children`]; `n = 0` is an empty list, without I/O.
    ///
    /// # Errors
    /// `InvalidPath`; `NotFound` when `dir` does not exist.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn first_children(&self, dir: &str, n: usize) -> Result<Vec<Child>> {
        path::validate(dir)?;
        if n == 0 {
            return Ok(Vec::new());
        }
        self.run(self.inner.first_children(dir, n)).await
    }

    /// Whether [`Session::place`] and [`Session::first_children`] are
    /// answered from an ordered index at the server (see
    /// [`PrimitiveSession::orders_at_server`]).
    pub fn orders_at_server(&self) -> bool {
        self.inner.orders_at_server()
    }

    /// The children of `dir` and a watch for the next change to them.
    ///
    /// # Errors
    /// `InvalidPath`; `NotFound`.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn children_watch(&self, dir: &str) -> Result<(Vec<Child>, Watch)> {
        path::validate(dir)?;
        let (children, watch) = self.run(self.inner.children_watch(dir)).await?;
        Ok((children, self.bound(watch)))
    }

    /// Arm a watch on the deletion of the node at `path`: `None` when there
    /// is none now; see [`PrimitiveSession::watch_gone`].
    ///
    /// # Errors
    /// `InvalidPath`, then the backend's.
    ///
    /// # Cancel safety
    /// Cancel safe; dropping the returned watch unregisters it.
    pub async fn watch_gone(&self, path: &str) -> Result<Option<Watch>> {
        path::validate_non_root(path)?;
        Ok(self
            .run(self.inner.watch_gone(path))
            .await?
            .map(|w| self.bound(w)))
    }

    /// [`Session::watch_gone`] for the node a listing showed at `path` with
    /// `sequence` ([`Child::sequence`]): `None` also when the node there now
    /// is another one. Wait for a node found in a listing with this, not
    /// with `watch_gone`: on etcd a session may give the name of a node it
    /// deleted to its next one; see [`PrimitiveSession::watch_gone_listed`].
    ///
    /// # Errors
    /// `InvalidPath`, then the backend's.
    ///
    /// # Cancel safety
    /// Cancel safe; dropping the returned watch unregisters it.
    pub async fn watch_gone_listed(
        &self,
        path: &str,
        sequence: Option<u64>,
    ) -> Result<Option<Watch>> {
        path::validate_non_root(path)?;
        Ok(self
            .run(self.inner.watch_gone_listed(path, sequence))
            .await?
            .map(|w| self.bound(w)))
    }

    /// Read the node at `path` and arm a watch on its next change (a set,
    /// even to the same data, or its deletion): `None` when there is none
    /// now; see [`PrimitiveSession::get_watch`].
    ///
    /// # Errors
    /// `InvalidPath` (also for `/`), then the backend's.
    ///
    /// # Cancel safety
    /// Cancel safe; dropping the returned watch unregisters it.
    pub async fn get_watch(&self, path: &str) -> Result<Option<(Node, Watch)>> {
        path::validate_non_root(path)?;
        Ok(self
            .run(self.inner.get_watch(path))
            .await?
            .map(|(node, w)| (node, self.bound(w))))
    }

    /// Watch the subtree at `path` with one persistent watch; see
    /// [`PrimitiveSession::watch_tree`]. The watch ends with the session's
    /// end.
    ///
    /// # Errors
    /// `InvalidPath`; `NotSupported` where the backend or server has no
    /// tree watches (Redis; ZooKeeper before 3.6) or cannot set one there
    /// now (ZooKeeper before 3.9, while this session has a data watch on
    /// that very path); then the backend's.
    ///
    /// # Cancel safety
    /// Cancel safe; dropping the returned watch unregisters it.
    pub async fn watch_tree(&self, path: &str) -> Result<TreeWatch> {
        path::validate(path)?;
        self.run(self.inner.watch_tree(path)).await
    }

    /// Resolve once the node now at `path` is gone (at once if there is
    /// none).
    ///
    /// # Errors
    /// `InvalidPath`; the session's end while waiting.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait_gone(&self, path: &str) -> Result<()> {
        match self.watch_gone(path).await? {
            None => Ok(()),
            Some(gone) => gone.await,
        }
    }

    /// Ask the server whether this session still lives there (see
    /// [`PrimitiveSession::alive`]): what a holder that found its node gone
    /// asks to tell "the session ended" from "someone deleted it".
    ///
    /// # Errors
    /// The session's end; `ConnectionLost` while it cannot tell.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub(crate) async fn alive(&self) -> Result<()> {
        self.run(self.inner.alive()).await
    }

    /// Do `op` only while `fence` holds, atomically: the fence check and
    /// the write are one step on the server (a ZooKeeper multi, an etcd
    /// Txn, one Redis script, one step under the in-memory store's lock),
    /// so a holder that lost its hold cannot write after its successor.
    /// Holders usually call this through their guard
    /// ([`Hold::write`](crate::prelude::Hold::write), [`Hold::put`](crate::prelude::Hold::put)).
    ///
    /// # Errors
    /// `InvalidPath`, `InvalidArgument` for the fence or the op (also for
    /// an `Op::Create` with a TTL mode: TTL nodes are not made by guarded
    /// writes), before any I/O; `LockLost` when the fence does not hold
    /// (checked before the op's own errors, and nothing is written); then
    /// the op's own (`NotFound`, `AlreadyExists`, `VersionMismatch`, …).
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may land after the drop.
    pub async fn guarded(&self, fence: &Fence, op: Op) -> Result<OpResult> {
        path::validate_non_root(&fence.path)?;
        match &op {
            Op::Create { mode, .. } if mode.ttl().is_some() => {
                return Err(Error::InvalidArgument(
                    "a guarded write cannot create a TTL node".into(),
                ));
            }
            Op::Create { path, data, .. } | Op::Set { path, data, .. } | Op::Put { path, data } => {
                path::validate_non_root(path)?;
                path::validate_data(data)?;
            }
            Op::Delete { path, .. } => path::validate_non_root(path)?,
        }
        self.run(self.inner.guarded(fence, op)).await
    }

    /// Commit `txn`: every fence and check holds and every write is
    /// applied, as one atomic step, or nothing is — ZooKeeper's `multi`,
    /// etcd's `Txn`, one Redis script, one step under the in-memory store's
    /// lock. See [`Transaction`] for how to build one and the
    /// [`backend::txn`](crate::backend::txn) rules; under a hold, use
    /// [`Hold::commit`](crate::prelude::Hold::commit), which adds the
    /// hold's fence first.
    ///
    /// ```
    /// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
    /// use coord_core::{Error, Transaction, TxnFailure, TxnResult, TxnStep};
    ///
    /// session.create("/jobs/pending/17", b"job", coord_core::CreateMode::Persistent).await?;
    /// let txn = Transaction::new()
    ///     .delete("/jobs/pending/17")
    ///     .create("/jobs/running/17", "worker-2");
    /// let results = session.commit(txn).await?;
    /// assert_eq!(results[0], TxnResult::Deleted);
    ///
    /// // Run again, the delete finds no node: nothing is applied.
    /// let again = Transaction::new()
    ///     .delete("/jobs/pending/17")
    ///     .create("/jobs/running/18", "worker-2");
    /// match session.commit(again).await {
    ///     Err(Error::TransactionFailed { step, failure, .. }) => {
    ///         assert_eq!((step, failure), (TxnStep::Op(0), TxnFailure::NoNode));
    ///     }
    ///     other => panic!("{other:?}"),
    /// }
    /// assert!(session.get("/jobs/running/18").await?.is_none());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// Before any I/O: `InvalidPath`, `InvalidArgument` (no op, a path
    /// written twice or under another written path, data over the limit,
    /// a transaction over the backend's
    /// [`TxnLimits`](crate::TxnLimits)). Then
    /// [`Error::TransactionFailed`] naming the step that did not hold
    /// (nothing applied; a fence is named first); `OutcomeUnknown` when the
    /// answer was lost and the backend cannot tell (all or nothing was
    /// applied); `ConnectionLost` or the session's end when nothing was.
    ///
    /// # Cancel safety
    /// Not cancel safe: the transaction may land after the drop (all of
    /// it, or none).
    pub async fn commit(&self, txn: Transaction) -> Result<Vec<TxnResult>> {
        txn.validate(&self.inner.transaction_limits())?;
        self.run(self.inner.transaction(&txn)).await
    }

    /// What one [`Session::commit`] may carry on this session's backend:
    /// more is refused with `InvalidArgument` before any I/O.
    pub fn transaction_limits(&self) -> TxnLimits {
        self.inner.transaction_limits()
    }

    /// Make sure a persistent node exists at `path` (and its parents).
    ///
    /// # Errors
    /// `InvalidPath`, then the backend's.
    ///
    /// # Cancel safety
    /// Cancel safe: creating an existing directory again is harmless.
    pub async fn ensure_dir(&self, path: &str) -> Result<()> {
        path::validate(path)?;
        if path == "/" {
            return Ok(());
        }
        match self
            .run(self.inner.create(path, &[], CreateMode::Persistent))
            .await
        {
            Ok(_) | Err(Error::AlreadyExists { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// End the session; its ephemeral nodes are deleted. Waits first for
    /// the session's background work that must finish (a release or a
    /// withdrawn acquire deleting its node, a queue item put back): that
    /// work retries through connection losses until it is done or the
    /// session is over, so this wait is bounded by the lease deadline.
    ///
    /// # Errors
    /// The backend's, if it could not tell the server (the server then ends
    /// the session when its timeout runs out). Closing a session that is
    /// already over is `Ok`.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the session may or may not be closed; the
    /// background work goes on either way.
    pub async fn close(&self) -> Result<()> {
        close_session(Arc::clone(&self.inner), Arc::clone(&self.local)).await
    }
}

/// [`Session::close`]: wait for the background work that must finish,
/// then end the session.
async fn close_session(inner: Arc<dyn PrimitiveSession>, local: Arc<Local>) -> Result<()> {
    let mut pending = local.pending.subscribe();
    let _ = pending.wait_for(|n| *n == 0).await;
    let result = inner.close().await;
    let after = *inner.state().borrow();
    local.mirror(if after.is_terminal() {
        after
    } else {
        SessionState::Closed
    });
    result
}

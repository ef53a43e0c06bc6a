//! The primitive contract on ZooKeeper: [`PrimitiveSession`] for
//! [`ZkSession`].

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use coord_core::backoff::Backoff;
use coord_core::path::{name, parent};
use coord_core::{
    Child, CreateMode, Created, Error, Fence, LeaseClock, Node, Op, OpResult, PrimitiveSession,
    Result, SessionId, SessionState, Stat, TreeChange, TreeWatch, Watch,
};
use tokio::sync::{broadcast, mpsc, watch};
use zookeeper_client as zk;

use crate::error::{is_connection_error, map_error, Target};
use crate::names;
use crate::paths::{DataGuard, DataWatch, TreeGuard};
use crate::session::{
    client_in, created, session_owner, stamp_of, stat_of, ClientSlot, ZkSession, MAX_PARENT_ROUNDS,
};
use crate::state::Shared;
use crate::BACKEND;

/// How often a guarded write re-reads its fence when the fence node's data
/// changed between the read and the multi.
const MAX_FENCE_ROUNDS: usize = 16;

/// ZooKeeper's mode for `mode`, by what it promises (ephemeral,
/// sequential): so a mode added to coord-core maps by its nature too.
fn zk_mode(mode: CreateMode) -> zk::CreateMode {
    match (mode.is_ephemeral(), mode.is_sequential()) {
        (false, false) => zk::CreateMode::Persistent,
        (false, true) => zk::CreateMode::PersistentSequential,
        (true, false) => zk::CreateMode::Ephemeral,
        (true, true) => zk::CreateMode::EphemeralSequential,
    }
}

/// The create options for `mode`: the session's ACLs, and a TTL mode's TTL
/// rounded up to whole milliseconds (the server counts in milliseconds; the
/// session already checked it is within [`coord_core::MAX_NODE_TTL`], a
/// whole number of milliseconds, so rounding up stays within it).
fn zk_options(mode: CreateMode, acls: zk::Acls<'static>) -> zk::CreateOptions<'static> {
    let options = zk_mode(mode).with_acls(acls);
    match mode.ttl() {
        Some(ttl) => {
            let ms = ttl.as_nanos().div_ceil(1_000_000);
            let ms = u64::try_from(ms).unwrap_or(u64::MAX).max(1);
            options.with_ttl(Duration::from_millis(ms))
        }
        None => options,
    }
}

/// A version coord passes in, as ZooKeeper's `i32`; one that does not fit
/// can never match.
fn zk_version(path: &str, version: Option<u64>) -> Result<Option<i32>> {
    match version {
        None => Ok(None),
        Some(v) => i32::try_from(v)
            .map(Some)
            .map_err(|_| Error::VersionMismatch {
                path: path.to_owned(),
                expected: v,
            }),
    }
}

/// What a create asks the server for, and how to find it after a lost
/// answer.
struct CreateTarget {
    path: String,
    sequential: bool,
    /// Persistent: another session may remove the node (a queue item
    /// taken) before a retry looks for it.
    persistent: bool,
    /// For a sequential create with a protected name (`_c_<uuid>-…`): the
    /// name prefix that finds it again.
    findable: Option<String>,
}

impl CreateTarget {
    fn new(path: &str, mode: CreateMode) -> Self {
        let sequential = mode.is_sequential();
        let findable = (sequential && names::protected_id(name(path)).is_some())
            .then(|| name(path).to_owned());
        CreateTarget {
            path: path.to_owned(),
            sequential,
            persistent: !mode.is_ephemeral(),
            findable,
        }
    }

    fn dir(&self) -> &str {
        parent(&self.path)
    }

    /// The full path and sequence of what the server made, from its answer.
    fn made(
        &self,
        server_path: Option<&str>,
        sequence: Option<zk::CreateSequence>,
    ) -> (String, Option<u64>) {
        if !self.sequential {
            return (self.path.clone(), None);
        }
        let path = match (server_path, sequence) {
            (Some(path), _) => path.to_owned(),
            (None, Some(seq)) => format!("{}{seq}", self.path),
            (None, None) => self.path.clone(),
        };
        let sequence = names::sequence_of(name(&path));
        (path, sequence)
    }
}

/// The error for a sequential create without a protected name whose answer
/// was lost: it cannot be found again, so it is not retried either.
fn unfindable(path: &str, err: &zk::Error) -> Error {
    Error::ConnectionLost(format!(
        "{err}: the answer to the sequential create {path} was lost, and without a \
         protected name (`_c_<uuid>-…`) the node it may have made cannot be found"
    ))
}

/// Resolve a one-shot watch: `Ok` on any node event, the session's end
/// otherwise.
fn watch_of(shared: Arc<Shared>, watcher: zk::OneshotWatcher, guard: Option<DataGuard>) -> Watch {
    Watch::new(async move {
        let event = watcher.changed().await;
        drop(guard);
        session_event_result(&shared, &event)
    })
}

/// A data watch served by the session's tree watch on the same path (see
/// [`crate::paths`]): fires at the tree's signal (a change of the path, or
/// a `Resync`, or the last tree watch there gone: read again), or with the
/// session's end.
fn tree_signal_watch(shared: Arc<Shared>, mut signal: broadcast::Receiver<bool>) -> Watch {
    let mut state = shared.subscribe();
    Watch::new(async move {
        tokio::select! {
            biased;
            end = state.wait_for(|s| s.is_terminal()) => {
                let end = end.map_or(SessionState::Closed, |s| *s);
                Err(end.end_error().unwrap_or(Error::SessionClosed))
            }
            _ = signal.recv() => Ok(()),
        }
    })
}

/// How a deletion watch is armed.
enum Armed {
    /// Listening to the session's tree watch on the path.
    Tree(broadcast::Receiver<bool>),
    /// A `getData` watch on the server, counted by its guard.
    Server(zk::OneshotWatcher, DataGuard),
}

/// The czxid of the node at `path` now (`None`: no node), read plainly,
/// retrying connection losses while the session lives.
async fn czxid_now(shared: &Shared, slot: &ClientSlot, path: &str) -> Result<Option<i64>> {
    let retry = Backoff::new(Duration::from_millis(100), Duration::from_millis(100));
    let mut attempt = 0;
    loop {
        let client = client_in(slot).map_err(|_| shared.ended_error())?;
        match client.get_data(path).await {
            Ok((_, stat)) => return Ok(Some(stat.czxid)),
            Err(zk::Error::NoNode) => return Ok(None),
            Err(e) if is_connection_error(&e) && !shared.get().is_terminal() => {
                retry.sleep(&mut attempt).await;
            }
            Err(e) => return Err(map_error(e, Target::path(path))),
        }
    }
}

/// Arm a deletion watch on the node at `path` made with `stamp` again;
/// `None` once it is gone (or another node is there).
async fn arm_gone(
    shared: &Shared,
    slot: &ClientSlot,
    path: &str,
    stamp: i64,
) -> Result<Option<Armed>> {
    match shared.paths.data_watch(path) {
        DataWatch::FromTree(signal) => {
            // Subscribed first: a delete after this read is signalled.
            Ok(
                (czxid_now(shared, slot, path).await? == Some(stamp))
                    .then_some(Armed::Tree(signal)),
            )
        }
        DataWatch::OnServer(guard) => {
            // Through a connection loss, a fixed step (first = cap),
            // jittered: the client queues the request until it is back.
            let retry = Backoff::new(Duration::from_millis(100), Duration::from_millis(100));
            let mut attempt = 0;
            loop {
                let client = client_in(slot).map_err(|_| shared.ended_error())?;
                match client.get_and_watch_data(path).await {
                    Ok((_, stat, w)) if stat.czxid == stamp => {
                        return Ok(Some(Armed::Server(w, guard)))
                    }
                    Ok(_) | Err(zk::Error::NoNode) => return Ok(None),
                    Err(e) if is_connection_error(&e) && !shared.get().is_terminal() => {
                        retry.sleep(&mut attempt).await;
                    }
                    Err(e) => return Err(map_error(e, Target::path(path))),
                }
            }
        }
    }
}

/// Resolve once the node at `path` made with `stamp` is gone, from a watch
/// armed by [`arm_gone`].
async fn until_gone(
    shared: Arc<Shared>,
    slot: ClientSlot,
    path: String,
    stamp: i64,
    mut armed: Armed,
) -> Result<()> {
    let mut state = shared.subscribe();
    loop {
        let again = match armed {
            Armed::Server(watcher, guard) => {
                let event = watcher.changed().await;
                drop(guard);
                session_event_result(&shared, &event)?;
                if event.event_type == zk::EventType::NodeDeleted {
                    return Ok(());
                }
                // A data change: the node is still there; watch again.
                arm_gone(&shared, &slot, &path, stamp).await?
            }
            Armed::Tree(mut signal) => {
                let heard = tokio::select! {
                    biased;
                    end = state.wait_for(|s| s.is_terminal()) => {
                        let end = end.map_or(SessionState::Closed, |s| *s);
                        return Err(end.end_error().unwrap_or(Error::SessionClosed));
                    }
                    heard = signal.recv() => heard,
                };
                match heard {
                    // The last tree watch there is gone: arm another way.
                    Err(broadcast::error::RecvError::Closed) => {
                        arm_gone(&shared, &slot, &path, stamp).await?
                    }
                    // Changed, or may have: read again.
                    _ => (czxid_now(&shared, &slot, &path).await? == Some(stamp))
                        .then_some(Armed::Tree(signal)),
                }
            }
        };
        match again {
            Some(a) => armed = a,
            None => return Ok(()),
        }
    }
}

/// Feed a tree watch from `watcher` (see [`ZkSession::watch_tree`]) until
/// the session ends or the receiver is gone.
async fn feed_tree(
    shared: Arc<Shared>,
    slot: ClientSlot,
    root: String,
    (mut watcher, registration): (zk::PersistentWatcher, TreeGuard),
    tx: mpsc::UnboundedSender<Result<TreeChange>>,
) {
    let mut state = shared.subscribe();
    let ended = |state: SessionState| state.end_error().unwrap_or(Error::SessionClosed);
    let mut disconnected = false;
    loop {
        let event = tokio::select! {
            biased;
            end = state.wait_for(|s| s.is_terminal()) => {
                let end = end.map_or(SessionState::Closed, |s| *s);
                let _ = tx.send(Err(ended(end)));
                return;
            }
            event = watcher.changed() => event,
        };
        let change = if event.event_type == zk::EventType::Session {
            let s = event.session_state;
            if s.is_terminated() {
                // The watcher must not be read after a final state.
                let end = shared.map_state(s);
                shared.set(end);
                let _ = tx.send(Err(end.end_error().unwrap_or(Error::SessionExpired)));
                return;
            }
            match s {
                zk::SessionState::Disconnected => {
                    disconnected = true;
                    continue;
                }
                _ if disconnected => {
                    disconnected = false;
                    match rewatch(&shared, &slot, &root).await {
                        Ok(w) => watcher = w,
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            return;
                        }
                    }
                    TreeChange::Resync
                }
                _ => continue,
            }
        } else {
            TreeChange::Changed(event.path)
        };
        match &change {
            TreeChange::Changed(p) if *p == root => registration.signal(true),
            TreeChange::Changed(_) => {}
            _ => registration.signal(false),
        }
        if tx.send(Ok(change)).is_err() {
            return;
        }
    }
}

/// Add the persistent recursive watch on `root` again after a
/// reconnection, retrying connection losses until the session ends.
async fn rewatch(shared: &Shared, slot: &ClientSlot, root: &str) -> Result<zk::PersistentWatcher> {
    const AGAIN: Backoff = Backoff::new(Duration::from_millis(20), Duration::from_secs(1));
    let mut attempt = 0;
    loop {
        if let Some(end) = shared.get().end_error() {
            return Err(end);
        }
        let client = client_in(slot).map_err(|_| shared.ended_error())?;
        match client
            .watch(root, zk::AddWatchMode::PersistentRecursive)
            .await
        {
            Ok(w) => return Ok(w),
            Err(e) if is_connection_error(&e) => AGAIN.sleep(&mut attempt).await,
            Err(e) => return Err(map_error(e, Target::path(root))),
        }
    }
}

fn session_event_result(shared: &Shared, event: &zk::WatchedEvent) -> Result<()> {
    if event.event_type == zk::EventType::Session {
        let state = shared.map_state(event.session_state);
        shared.set(state);
        // Only a final state says which end; any other session event ends
        // the watch as `SessionExpired`.
        return Err(state.end_error().unwrap_or(Error::SessionExpired));
    }
    Ok(())
}

impl ZkSession {
    /// getData with a watch, retried through connection losses like every
    /// read: `None` for a missing node, on which getData fails with NoNode
    /// and leaves no watch set (`exists` would leave one).
    async fn get_and_watch(
        &self,
        path: &str,
    ) -> Result<Option<(Vec<u8>, zk::Stat, zk::OneshotWatcher)>> {
        match self
            .read(|c| async move { c.get_and_watch_data(path).await })
            .await
        {
            Ok(read) => Ok(Some(read)),
            Err(zk::Error::NoNode) => Ok(None),
            Err(e) => Err(self.map(e, Target::path(path))),
        }
    }

    /// A non-sequential create's node exists after an attempt whose answer
    /// was lost: ours if it is an ephemeral of this session.
    async fn claim_existing(&self, path: &str, mode: CreateMode) -> Result<Created> {
        let found = self.read(|c| async move { c.get_data(path).await }).await;
        match found {
            Ok((_, stat))
                if mode.is_ephemeral() && stat.ephemeral_owner == self.raw_session_id() =>
            {
                Ok(created(path.to_owned(), None, &stat))
            }
            Ok((_, stat))
                if !mode.is_ephemeral() && session_owner(stat.ephemeral_owner).is_none() =>
            {
                Err(Error::ConnectionLost(format!(
                    "the answer to creating {path} was lost and a node is there now; \
                     it may be the one this create made"
                )))
            }
            Ok(_) => Err(Error::AlreadyExists {
                path: path.to_owned(),
            }),
            // Gone again: say what the server said last.
            Err(zk::Error::NoNode) => Err(Error::AlreadyExists {
                path: path.to_owned(),
            }),
            Err(e) => Err(self.map(e, Target::path(path))),
        }
    }

    /// A stat the server left out (multi-create on some servers): read it.
    async fn complete(
        &self,
        path: String,
        sequence: Option<u64>,
        stat: zk::Stat,
    ) -> Result<Created> {
        if !stat.is_invalid() {
            return Ok(created(path, sequence, &stat));
        }
        let read = self
            .read(|c| {
                let path = path.as_str();
                async move { c.get_data(path).await }
            })
            .await;
        match read {
            Ok((_, stat)) => Ok(created(path, sequence, &stat)),
            Err(e) => Err(self.map(e, Target::path(&path))),
        }
    }

    /// One attempt at a guarded write: read the fence, then
    /// `multi(check(fence, version read), op)`.
    async fn guarded_once(
        &self,
        fence: &Fence,
        op: &Op,
        target: Option<&CreateTarget>,
    ) -> std::result::Result<OpResult, GuardedFailure> {
        let fence_path = fence.path.as_str();
        // The fence is read once, on a live connection: a guarded write is
        // a write, and fails at once while the session is suspended, like
        // every other write (a retried read would hold it until the
        // connection came back, however long the caller can wait).
        let read = self
            .writer(Target::path(fence_path))
            .map_err(GuardedFailure::Done)?
            .check_stat(fence_path)
            .await;
        let stat = match read {
            Ok(Some(stat)) if stamp_of(&stat) == fence.stamp => stat,
            Ok(_) => return Err(GuardedFailure::Done(lock_lost(fence))),
            Err(e) if is_connection_error(&e) => return Err(GuardedFailure::Lost(e)),
            Err(e) => return Err(GuardedFailure::Done(self.map(e, Target::path(fence_path)))),
        };
        let client = self
            .writer(Target::path(fence_path))
            .map_err(GuardedFailure::Done)?;
        let mut writer = client.new_multi_writer();
        let added = writer
            .add_check_version(fence_path, stat.version)
            .and_then(|()| match (op, target) {
                (Op::Create { data, mode, .. }, Some(target)) => {
                    writer.add_create(&target.path, data, &zk_options(*mode, self.acls()))
                }
                (
                    Op::Set {
                        path,
                        data,
                        version,
                    },
                    _,
                ) => writer.add_set_data(
                    path,
                    data,
                    zk_version(path, *version).map_err(|_| zk::Error::BadVersion)?,
                ),
                (Op::Delete { path, version }, _) => writer.add_delete(
                    path,
                    zk_version(path, *version).map_err(|_| zk::Error::BadVersion)?,
                ),
                (Op::Create { .. }, None) => Err(zk::Error::UnexpectedError(
                    "guarded create without a target".into(),
                )),
                // Refused by `guarded` before any I/O.
                _ => Err(zk::Error::UnexpectedError(
                    "a guarded write this backend does not know".into(),
                )),
            });
        let op_target = op_target(op);
        if let Err(e) = added {
            return Err(GuardedFailure::Done(self.map(e, op_target)));
        }
        let mut results = match writer.commit().await {
            Ok(results) => results,
            Err(zk::MultiWriteError::OperationFailed { index: 0, source }) => {
                return Err(match source {
                    // The fence's data changed since the read: read again.
                    zk::Error::BadVersion => GuardedFailure::FenceMoved,
                    zk::Error::NoNode => GuardedFailure::Done(lock_lost(fence)),
                    e => GuardedFailure::Done(self.map(e, Target::path(fence_path))),
                });
            }
            Err(zk::MultiWriteError::OperationFailed { source, .. }) => {
                return Err(match source {
                    zk::Error::NoNode if matches!(op, Op::Create { .. }) => {
                        GuardedFailure::NoParent
                    }
                    e => GuardedFailure::Done(self.map(e, op_target)),
                });
            }
            Err(zk::MultiWriteError::RequestFailed { source }) if is_connection_error(&source) => {
                return Err(GuardedFailure::Lost(source));
            }
            Err(zk::MultiWriteError::RequestFailed { source }) => {
                return Err(GuardedFailure::Done(self.map(source, op_target)));
            }
        };
        let unexpected = |what: &str| {
            GuardedFailure::Done(Error::backend(
                BACKEND,
                zk::Error::UnexpectedError(format!("multi answered {what}")),
            ))
        };
        if results.len() != 2 {
            return Err(unexpected("with the wrong number of results"));
        }
        match (results.pop(), op, target) {
            (Some(zk::MultiWriteResult::Create { path, stat }), Op::Create { .. }, Some(t)) => {
                let (path, sequence) = t.made(Some(&path), None);
                self.complete(path, sequence, stat)
                    .await
                    .map(OpResult::Created)
                    .map_err(GuardedFailure::Done)
            }
            (Some(zk::MultiWriteResult::SetData { stat }), Op::Set { .. }, _) => {
                Ok(OpResult::Set(stat_of(&stat)))
            }
            (Some(zk::MultiWriteResult::Delete), Op::Delete { .. }, _) => Ok(OpResult::Deleted),
            _ => Err(unexpected("a result of another kind")),
        }
    }
}

/// Why one attempt at a guarded write did not finish.
enum GuardedFailure {
    /// The answer: return it.
    Done(Error),
    /// The fence node's data version moved between the read and the multi.
    FenceMoved,
    /// A create's parent is missing.
    NoParent,
    /// The connection dropped: the multi may or may not have happened (or
    /// the fence read got no answer, and no multi was sent).
    Lost(zk::Error),
}

fn lock_lost(fence: &Fence) -> Error {
    Error::LockLost {
        path: fence.path.clone(),
    }
}

fn op_target(op: &Op) -> Target<'_> {
    match op {
        Op::Create { path, .. } => Target::path(path),
        Op::Set { path, version, .. } | Op::Delete { path, version } => {
            Target::versioned(path, *version)
        }
        // Refused by `guarded` before any I/O; named by no path.
        _ => Target::path(""),
    }
}

#[async_trait]
impl PrimitiveSession for ZkSession {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    fn id(&self) -> SessionId {
        ZkSession::id(self)
    }

    fn state(&self) -> watch::Receiver<SessionState> {
        self.shared.subscribe()
    }

    /// Missing parents are made as CONTAINER nodes. A sequential create
    /// whose name starts `_c_<uuid>-` is, after a lost answer, found again
    /// by that prefix before any retry. The request is sent when the future
    /// is first polled.
    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<Created> {
        let target = CreateTarget::new(path, mode);
        let options = zk_options(mode, self.acls());
        let mut retry = self.retry_clock();
        let mut lost = false;
        let mut parent_rounds = 0;
        loop {
            if lost {
                if let Some(prefix) = &target.findable {
                    if let Some(found) = self.find_created(target.dir(), prefix).await? {
                        return Ok(found);
                    }
                    if target.persistent {
                        // Never made, or made and already taken: making it
                        // again could make it twice.
                        return Err(Error::lost_sequential_create(path));
                    }
                }
            }
            let client = if lost || parent_rounds > 0 {
                self.client().map_err(|e| self.map(e, Target::path(path)))?
            } else {
                self.writer(Target::path(path))?
            };
            let result = client.create(&target.path, data, &options).await;
            match result {
                Ok((stat, sequence)) => {
                    let (made, sequence) = target.made(None, Some(sequence));
                    return self.complete(made, sequence, stat).await;
                }
                Err(zk::Error::NoNode) if parent_rounds < MAX_PARENT_ROUNDS => {
                    parent_rounds += 1;
                    self.make_parents(target.dir()).await?;
                }
                Err(zk::Error::NodeExists) if lost && !target.sequential => {
                    return self.claim_existing(&target.path, mode).await;
                }
                Err(e)
                    if is_connection_error(&e)
                        && target.sequential
                        && target.findable.is_none() =>
                {
                    return Err(unfindable(path, &e));
                }
                Err(e) if is_connection_error(&e) && self.pause(&mut retry).await => {
                    tracing::debug!(%path, error = %e, "zk create's answer lost; looking for it");
                    lost = true;
                }
                Err(zk::Error::Unimplemented) if mode.ttl().is_some() => {
                    tracing::debug!(%path, "zk server refused a TTL node: TTL nodes disabled");
                    return Err(Error::NotSupported {
                        operation: "TTL nodes (the ZooKeeper server needs \
                                    -Dzookeeper.extendedTypesEnabled=true)",
                        backend: BACKEND,
                    });
                }
                Err(e) => return Err(self.map(e, Target::path(path))),
            }
        }
    }

    async fn get(&self, path: &str) -> Result<Option<Node>> {
        match self.read(|c| async move { c.get_data(path).await }).await {
            Ok((data, stat)) => Ok(Some(Node::new(data, stat_of(&stat)))),
            Err(zk::Error::NoNode) => Ok(None),
            Err(e) => Err(self.map(e, Target::path(path))),
        }
    }

    async fn set(&self, path: &str, data: &[u8], version: Option<u64>) -> Result<Stat> {
        let expected = zk_version(path, version)?;
        let target = Target::versioned(path, version);
        let client = self.writer(target)?;
        match client.set_data(path, data, expected).await {
            Ok(stat) => Ok(stat_of(&stat)),
            Err(e) => Err(self.map(e, target)),
        }
    }

    async fn delete(&self, path: &str, version: Option<u64>) -> Result<()> {
        let expected = zk_version(path, version)?;
        let target = Target::versioned(path, version);
        let client = self.writer(target)?;
        client
            .delete(path, expected)
            .await
            .map_err(|e| self.map(e, target))
    }

    /// One getChildren. Sent when first polled: polled right after a
    /// `create` (before awaiting it), it sees that create.
    async fn children(&self, dir: &str) -> Result<Vec<Child>> {
        self.read(|c| async move { c.list_children(dir).await })
            .await
            .map(names::into_children)
            .map_err(|e| self.map(e, Target::path(dir)))
    }

    /// getChildren with a watch: the server sets the watch with the read, so
    /// no change between them is missed.
    async fn children_watch(&self, dir: &str) -> Result<(Vec<Child>, Watch)> {
        let (names, watcher) = self
            .read(|c| async move {
                let (names, watcher) = c.list_and_watch_children(dir).await?;
                Ok((names, watcher))
            })
            .await
            .map_err(|e| self.map(e, Target::path(dir)))?;
        Ok((
            names::into_children(names),
            watch_of(self.shared.clone(), watcher, None),
        ))
    }

    /// getData with a watch, as Curator does: on a missing node getData
    /// fails with NoNode and leaves no watch (exists would leave one). The
    /// watch re-arms itself on a data change; a node found with another
    /// czxid means ours was deleted.
    async fn watch_gone(&self, path: &str) -> Result<Option<Watch>> {
        let armed = match self.shared.paths.data_watch(path) {
            DataWatch::FromTree(signal) => {
                // Subscribed first: a delete after this read is signalled.
                let found = self.read(|c| async move { c.get_data(path).await }).await;
                match found {
                    Ok((_, stat)) => Some((stat.czxid, Armed::Tree(signal))),
                    Err(zk::Error::NoNode) => None,
                    Err(e) => return Err(self.map(e, Target::path(path))),
                }
            }
            DataWatch::OnServer(guard) => self
                .get_and_watch(path)
                .await?
                .map(|(_, stat, w)| (stat.czxid, Armed::Server(w, guard))),
        };
        let Some((stamp, armed)) = armed else {
            return Ok(None);
        };
        let (shared, slot) = (self.shared.clone(), self.client_slot());
        Ok(Some(Watch::new(until_gone(
            shared,
            slot,
            path.to_owned(),
            stamp,
            armed,
        ))))
    }

    /// getData with a watch: the server sets the watch with the read, so
    /// no change after the read is missed. A data watch fires at the node's
    /// next set (`NodeDataChanged`, whatever the data) or its deletion
    /// (`NodeDeleted`, also at its session's end); a change to a child or
    /// a sibling does not reach it.
    ///
    /// Where this session's tree watch covers exactly `path`, no watch is
    /// set on the server: the tree watch's signal fires it (see
    /// `paths.rs`).
    async fn get_watch(&self, path: &str) -> Result<Option<(Node, Watch)>> {
        match self.shared.paths.data_watch(path) {
            DataWatch::FromTree(signal) => {
                // Subscribed first: a change after this read is signalled.
                let found = self.read(|c| async move { c.get_data(path).await }).await;
                match found {
                    Ok((data, stat)) => Ok(Some((
                        Node::new(data, stat_of(&stat)),
                        tree_signal_watch(self.shared.clone(), signal),
                    ))),
                    Err(zk::Error::NoNode) => Ok(None),
                    Err(e) => Err(self.map(e, Target::path(path))),
                }
            }
            DataWatch::OnServer(guard) => {
                let Some((data, stat, watcher)) = self.get_and_watch(path).await? else {
                    return Ok(None);
                };
                let node = Node::new(data, stat_of(&stat));
                Ok(Some((
                    node,
                    watch_of(self.shared.clone(), watcher, Some(guard)),
                )))
            }
        }
    }

    /// ZooKeeper 3.6's persistent recursive watch (`addWatch`), which
    /// fires for every create, set and delete at or under `path`. While the
    /// connection is down the server keeps nothing for it (ZOOKEEPER-4698:
    /// events of that time are never sent), and zookeeper-client 0.11 does
    /// not set persistent watches again on the new connection (its
    /// SetWatches request leaves them out). So after every reconnection the
    /// watch is added again, then [`TreeChange::Resync`] is sent. A server
    /// before 3.6 answers `Unimplemented`: `NotSupported`.
    async fn watch_tree(&self, path: &str) -> Result<TreeWatch> {
        // Registered before the request, so a data watch on the path set
        // meanwhile listens to this one instead of the server.
        let Some(registration) = self.shared.paths.tree_watch(path) else {
            return Err(Error::NotSupported {
                operation: "a tree watch on a path this session has a data watch on \
                            (ZooKeeper before 3.9 keeps one watch per path: ZOOKEEPER-4466)",
                backend: BACKEND,
            });
        };
        let watched = self
            .read(|c| async move { c.watch(path, zk::AddWatchMode::PersistentRecursive).await })
            .await;
        let watcher = match watched {
            Ok(w) => w,
            Err(zk::Error::Unimplemented) => {
                return Err(Error::NotSupported {
                    operation: "tree watches (ZooKeeper before 3.6)",
                    backend: BACKEND,
                })
            }
            Err(e) => return Err(self.map(e, Target::path(path))),
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let feed = tokio::spawn(feed_tree(
            self.shared.clone(),
            self.client_slot(),
            path.to_owned(),
            (watcher, registration),
            tx,
        ));
        Ok(TreeWatch::new(rx, feed))
    }

    /// ZooKeeper's multi can check a node's data version, not its czxid. So
    /// the fence is read first (`exists`): missing, or a czxid other than
    /// the fence's stamp, is `LockLost`. Then `multi(check(fence, version
    /// read), op)`: the check fails if the fence node was deleted or its
    /// data changed meanwhile (a changed version is read again).
    ///
    /// The one gap: a fence node deleted and re-made at the same path with
    /// the same data version between the read and the multi passes the
    /// check. Lock nodes are sequential, their paths never repeat, so a lock
    /// holder's fence has no such gap.
    async fn guarded(&self, fence: &Fence, op: Op) -> Result<OpResult> {
        let target = match &op {
            Op::Create { path, mode, .. } => Some(CreateTarget::new(path, *mode)),
            Op::Set { .. } | Op::Delete { .. } => None,
            // An op added to coord-core after this backend: refused
            // before any I/O.
            _ => {
                return Err(Error::NotSupported {
                    operation: "this guarded write",
                    backend: BACKEND,
                })
            }
        };
        let mut retry = self.retry_clock();
        let mut fence_rounds = 0;
        let mut parent_rounds = 0;
        let mut lost = false;
        loop {
            if lost {
                // Only a sequential create gets here: find what it made.
                if let Some(t) = &target {
                    if let Some(prefix) = &t.findable {
                        if let Some(found) = self.find_created(t.dir(), prefix).await? {
                            return Ok(OpResult::Created(found));
                        }
                    }
                }
            }
            match self.guarded_once(fence, &op, target.as_ref()).await {
                Ok(result) => return Ok(result),
                Err(GuardedFailure::Done(e)) => return Err(e),
                Err(GuardedFailure::FenceMoved) if fence_rounds < MAX_FENCE_ROUNDS => {
                    fence_rounds += 1;
                }
                Err(GuardedFailure::FenceMoved) => {
                    return Err(Error::ConnectionLost(format!(
                        "the fence {} kept changing under a guarded write",
                        fence.path
                    )))
                }
                Err(GuardedFailure::NoParent) if parent_rounds < MAX_PARENT_ROUNDS => {
                    parent_rounds += 1;
                    if let Some(t) = &target {
                        self.make_parents(t.dir()).await?;
                    }
                }
                Err(GuardedFailure::NoParent) => {
                    return Err(Error::NotFound {
                        path: target
                            .map(|t| parent(&t.path).to_owned())
                            .unwrap_or_default(),
                    })
                }
                Err(GuardedFailure::Lost(e)) => {
                    let findable = target.as_ref().is_some_and(|t| t.findable.is_some());
                    if !findable || !self.pause(&mut retry).await {
                        return Err(self.map(e, op_target(&op)));
                    }
                    lost = true;
                }
            }
        }
    }

    async fn close(&self) -> Result<()> {
        self.close_session().await
    }

    /// Renewed by the session's lease pings (an `exists` on its root every
    /// third of the session timeout), with their send times.
    fn requests_sent(&self) -> Option<u64> {
        Some(ZkSession::requests_sent(self))
    }

    fn lease(&self) -> &LeaseClock {
        self.lease_clock()
    }

    /// The state becomes `Expired` (and stays so); once the client is
    /// connected again the session is closed, so the server deletes its
    /// ephemerals at once. Waits at most about the session timeout: by then
    /// the server has ended the session by itself.
    async fn abandon(&self) {
        self.abandon_session().await;
    }
}

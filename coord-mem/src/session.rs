//! [`MemSession`]: one session's handle on a [`crate::MemStore`], the
//! primitive contract done under the store's lock.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use coord_core::backend::{lease::LeaseClock, PrimitiveSession};
use coord_core::{
    path, Blockers, Child, CreateMode, Created, Error, Fence, Node, Op, OpResult, Place, Result,
    SessionId, SessionState, Stat, Transaction, TreeChange, TreeWatch, TxnOp, TxnResult, Watch,
};
use tokio::sync::{mpsc, oneshot, watch};

use crate::shared::{Shared, State};
use crate::tree::{SessionKey, BACKEND};

/// The backend side of a [`coord_core::Session`] opened by
/// [`crate::MemStore::open`]. Every operation takes the store's lock once,
/// checks the session, does its work and lets go: nothing awaits while
/// holding it, so every operation is atomic and never blocks for long.
pub(crate) struct MemSession {
    shared: Arc<Shared>,
    key: SessionKey,
    id: SessionId,
    state: Arc<watch::Sender<SessionState>>,
    pub(crate) lease: LeaseClock,
    /// Operations asked of the store (see [`PrimitiveSession::requests_sent`]).
    requests: AtomicU64,
}

impl MemSession {
    pub(crate) fn new(
        shared: Arc<Shared>,
        key: SessionKey,
        state: Arc<watch::Sender<SessionState>>,
        ttl: std::time::Duration,
    ) -> Self {
        MemSession {
            shared,
            key,
            id: crate::tree::session_id(key),
            state,
            lease: LeaseClock::new(ttl, tokio::time::Instant::now()),
            requests: AtomicU64::new(0),
        }
    }

    /// The store's lock, once this session is found usable, for one
    /// operation (counted as one request). The store answered: that renews
    /// the lease (the store's deadline moved too).
    fn live(&self) -> Result<MutexGuard<'_, State>> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.reachable()
    }

    /// [`MemSession::live`] without counting a request: the session's own
    /// checks whether the store answers again.
    fn reachable(&self) -> Result<MutexGuard<'_, State>> {
        let now = tokio::time::Instant::now();
        let mut state = self.shared.lock();
        state.touch(self.key, &self.state, now)?;
        self.lease.renewed(now);
        Ok(state)
    }

    /// Resolve once the session is answered again (no longer cut off by a
    /// test's partition), or with its end.
    async fn answered_again(&self) -> Result<()> {
        loop {
            match self.reachable().map(drop) {
                Err(Error::ConnectionLost(_)) => {}
                done => return done,
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The future of a watch set under the lock: `Ok` when `fired` fires,
    /// the session's end otherwise.
    fn watch(
        &self,
        fired: oneshot::Receiver<()>,
    ) -> impl Future<Output = Result<()>> + Send + 'static {
        let mut state = self.state.subscribe();
        async move {
            tokio::select! {
                biased;
                // A sender dropped unfired (the store is going away) counts
                // as a change: the caller reads again and learns the truth.
                _ = fired => Ok(()),
                end = state.wait_for(|s| s.is_terminal()) => {
                    // A dropped sender counts as closed.
                    let end = end.map_or(SessionState::Closed, |s| *s);
                    Err(end.end_error().unwrap_or(Error::SessionClosed))
                }
            }
        }
    }
}

#[async_trait]
impl PrimitiveSession for MemSession {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    fn id(&self) -> SessionId {
        self.id.clone()
    }

    fn state(&self) -> watch::Receiver<SessionState> {
        self.state.subscribe()
    }

    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<Created> {
        let (created, lost) = {
            let mut state = self.live()?;
            let created = state.tree.create(path, data, mode, self.key)?;
            (created, state.take_lost_create_answer(self.key))
        };
        if mode.ttl().is_some() {
            tokio::spawn(reap_ttl(
                Arc::downgrade(&self.shared),
                created.path.clone(),
                created.stamp,
            ));
        }
        if !lost {
            return Ok(created);
        }
        // The answer was lost (test hook): find the node again, as every
        // backend must. A protected sequential name (`_c_<uuid>-…`) is
        // unique to this create; any other name is the path itself. The
        // client learns of the loss when its connection drops (the fault
        // proxy closes it `LOST_ANSWER_NOTICED` after the lost answer) and
        // looks once it is answered again: other sessions have that long
        // to change the node meanwhile, as on a server.
        tracing::debug!(%path, "mem create answer lost; looking for the node");
        tokio::time::sleep(LOST_ANSWER_NOTICED).await;
        self.answered_again().await?;
        let state = self.live()?;
        if !mode.is_sequential() {
            return match state.tree.get(path) {
                Some(node) if node.stat.stamp == created.stamp => Ok(created),
                _ => Err(Error::ConnectionLost(format!(
                    "the answer to creating {path} was lost"
                ))),
            };
        }
        let dir = path::parent(path);
        let prefix = path::name(path);
        let found = state
            .tree
            .children(dir)?
            .into_iter()
            .find(|c| prefix.starts_with("_c_") && c.name.starts_with(prefix));
        match found {
            Some(c) => {
                let full = path::join(dir, &c.name);
                let node = state.tree.get(&full);
                Ok(Created::new(
                    full,
                    c.sequence,
                    node.as_ref().map_or(created.stamp, |n| n.stat.stamp),
                    node.as_ref().map_or(created.version, |n| n.stat.version),
                ))
            }
            // A persistent node may have been made and taken since (a
            // queue item): making it again could make it twice.
            None if !mode.is_ephemeral() => Err(Error::lost_sequential_create(path)),
            None => Err(Error::ConnectionLost(format!(
                "the answer to creating {path} was lost"
            ))),
        }
    }

    async fn get(&self, path: &str) -> Result<Option<Node>> {
        path::validate(path)?;
        Ok(self.live()?.tree.get(path))
    }

    /// Under one hold of the tree's lock: one snapshot, in fact.
    async fn get_many(&self, paths: &[String]) -> Result<Vec<Option<Node>>> {
        for p in paths {
            path::validate(p)?;
        }
        let live = self.live()?;
        Ok(paths.iter().map(|p| live.tree.get(p)).collect())
    }

    fn reads_many_at_once(&self) -> bool {
        true
    }

    async fn set(&self, path: &str, data: &[u8], version: Option<u64>) -> Result<Stat> {
        self.live()?.tree.set(path, data, version)
    }

    async fn delete(&self, path: &str, version: Option<u64>) -> Result<()> {
        self.live()?.tree.delete(path, version)
    }

    async fn children(&self, dir: &str) -> Result<Vec<Child>> {
        path::validate(dir)?;
        self.live()?.tree.children(dir)
    }

    async fn children_prefixed(&self, dir: &str, prefix: &str) -> Result<Vec<Child>> {
        path::validate_name_prefix(dir, prefix)?;
        self.live()?.tree.children_prefixed(dir, prefix)
    }

    fn lists_by_prefix(&self) -> bool {
        true
    }

    /// From the directory's sequence index: O(log N) under the store's
    /// lock, one request.
    async fn place(&self, dir: &str, me: &Child, blockers: Blockers<'_>) -> Result<Place> {
        path::validate(dir)?;
        Ok(self.live()?.tree.place(dir, me, blockers))
    }

    /// From the directory's sequence index: only the first `n` are
    /// visited; one request.
    async fn first_children(&self, dir: &str, n: usize) -> Result<Vec<Child>> {
        path::validate(dir)?;
        self.live()?.tree.first_children(dir, n)
    }

    fn orders_at_server(&self) -> bool {
        true
    }

    /// The create and the place in one step under the store's lock; a
    /// create whose answer the test hook loses only creates (as
    /// [`MemSession::create`]), and its place is asked for.
    async fn create_contender(
        &self,
        path: &str,
        data: &[u8],
        blockers: Blockers<'_>,
    ) -> Result<(Created, Option<Place>)> {
        let mode = CreateMode::EphemeralSequential;
        {
            let mut state = self.reachable()?;
            if !state.loses_next_create_answer(self.key) {
                self.requests.fetch_add(1, Ordering::Relaxed);
                let created = state.tree.create(path, data, mode, self.key)?;
                let me = Child::new(path::name(&created.path).to_owned(), created.sequence);
                let place = state.tree.place(path::parent(path), &me, blockers);
                return Ok((created, Some(place)));
            }
        }
        Ok((self.create(path, data, mode).await?, None))
    }

    fn places_at_create(&self) -> bool {
        true
    }

    async fn children_watch(&self, dir: &str) -> Result<(Vec<Child>, Watch)> {
        path::validate(dir)?;
        let fired = {
            let mut state = self.live()?;
            let children = state.tree.children(dir)?;
            (children, state.tree.watch_children(dir))
        };
        let (children, fired) = fired;
        Ok((children, Watch::new(self.watch(fired))))
    }

    async fn watch_gone(&self, path: &str) -> Result<Option<Watch>> {
        path::validate_non_root(path)?;
        let fired = {
            let mut state = self.live()?;
            if !state.tree.exists(path) {
                return Ok(None);
            }
            state.tree.watch_gone(path)
        };
        Ok(Some(Watch::new(self.watch(fired))))
    }

    /// The read and the registration happen under one hold of the store's
    /// lock, so no set or delete can come between them.
    async fn get_watch(&self, path: &str) -> Result<Option<(Node, Watch)>> {
        path::validate_non_root(path)?;
        let (node, fired) = {
            let mut state = self.live()?;
            let Some(node) = state.tree.get(path) else {
                return Ok(None);
            };
            (node, state.tree.watch_change(path))
        };
        Ok(Some((node, Watch::new(self.watch(fired)))))
    }

    /// Registered under the store's lock, so every change after the call
    /// is reported, in the order the store applied them; the store keeps
    /// no history, so nothing is ever missed and `Resync` is never sent.
    async fn watch_tree(&self, root: &str) -> Result<TreeWatch> {
        path::validate(root)?;
        let mut changes = self.live()?.tree.watch_tree(root);
        let (tx, rx) = mpsc::unbounded_channel();
        let mut state = self.state.subscribe();
        let feed = tokio::spawn(async move {
            loop {
                tokio::select! {
                    biased;
                    changed = changes.recv() => match changed {
                        Some(p) => {
                            if tx.send(Ok(TreeChange::Changed(p))).is_err() {
                                return;
                            }
                        }
                        // The store went away: as a closed session.
                        None => {
                            let _ = tx.send(Err(Error::SessionClosed));
                            return;
                        }
                    },
                    end = state.wait_for(|s| s.is_terminal()) => {
                        let end = end.map_or(SessionState::Closed, |s| *s);
                        let _ = tx.send(Err(end.end_error().unwrap_or(Error::SessionClosed)));
                        return;
                    }
                }
            }
        });
        Ok(TreeWatch::new(rx, feed))
    }

    async fn guarded(&self, fence: &Fence, op: Op) -> Result<OpResult> {
        path::validate_non_root(&fence.path)?;
        let mut state = self.live()?;
        if state.tree.stamp(&fence.path) != Some(fence.stamp) {
            return Err(Error::LockLost {
                path: fence.path.clone(),
            });
        }
        match op {
            Op::Create { path, data, mode } => state
                .tree
                .create(&path, &data, mode, self.key)
                .map(OpResult::Created),
            Op::Set {
                path,
                data,
                version,
            } => state.tree.set(&path, &data, version).map(OpResult::Set),
            Op::Delete { path, version } => state
                .tree
                .delete(&path, version)
                .map(|()| OpResult::Deleted),
            // Under the store's lock with the fence check: nothing can
            // make or delete the node between the look and the write.
            Op::Put { path, data } if state.tree.exists(&path) => {
                state.tree.set(&path, &data, None).map(OpResult::Set)
            }
            Op::Put { path, data } => state
                .tree
                .create(&path, &data, CreateMode::Persistent, self.key)
                .map(OpResult::Created),
            // An op added to coord-core after this backend: refused.
            _ => Err(Error::NotSupported {
                operation: "this guarded write",
                backend: crate::tree::BACKEND,
            }),
        }
    }

    async fn transaction(&self, txn: &Transaction) -> Result<Vec<TxnResult>> {
        let results = self.live()?.tree.commit(txn, self.key)?;
        // TTL nodes are reaped as `create`'s are.
        for (op, result) in txn.ops().iter().zip(&results) {
            if let (TxnOp::Create { mode, .. }, TxnResult::Created(created)) = (op, result) {
                if mode.ttl().is_some() {
                    tokio::spawn(reap_ttl(
                        Arc::downgrade(&self.shared),
                        created.path.clone(),
                        created.stamp,
                    ));
                }
            }
        }
        Ok(results)
    }

    async fn close(&self) -> Result<()> {
        self.shared.lock().close(self.key, &self.state)
    }

    fn requests_sent(&self) -> Option<u64> {
        Some(self.requests.load(Ordering::Relaxed))
    }

    fn lease(&self) -> &LeaseClock {
        &self.lease
    }

    async fn abandon(&self) {
        self.shared.lock().abandon(self.key);
    }

    /// A session whose every handle is dropped unclosed is a crashed
    /// process here: it expires after its TTL (see [`crate::MemStore`]).
    fn closes_on_drop(&self) -> bool {
        false
    }
}

/// How often a TTL node kept past its TTL by children is looked at again.
const TTL_RECHECK: Duration = Duration::from_millis(100);

/// How long after a lost answer the client learns of it: the fault proxy
/// (`coord_conformance::FaultProxy`) closes such a connection 300 ms after
/// the request, and the mem backend models the same window.
const LOST_ANSWER_NOTICED: Duration = Duration::from_millis(300);

/// A TTL node's reaper: sleeps until the node's TTL runs out (a `set`
/// meanwhile moves that), then deletes it if it has no children. Ends once
/// the node is gone or the store is dropped.
async fn reap_ttl(shared: std::sync::Weak<Shared>, path: String, stamp: u64) {
    loop {
        let next = {
            let Some(shared) = shared.upgrade() else {
                return;
            };
            let mut state = shared.lock();
            state.tree.reap_ttl(&path, stamp, TTL_RECHECK)
        };
        match next {
            Some(at) => tokio::time::sleep_until(at).await,
            None => return,
        }
    }
}

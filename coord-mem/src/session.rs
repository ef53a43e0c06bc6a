//! [`MemSession`]: one session's handle on a [`crate::MemStore`], the
//! primitive contract done under the store's lock.

use std::future::Future;
use std::sync::{Arc, MutexGuard};

use async_trait::async_trait;
use coord_core::{
    path, Child, CreateMode, Created, Error, Fence, Node, Op, OpResult, PrimitiveSession, Result,
    SessionId, SessionState, Stat, Watch,
};
use tokio::sync::{oneshot, watch};

use crate::store::{Shared, State};
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
}

impl MemSession {
    pub(crate) fn new(
        shared: Arc<Shared>,
        key: SessionKey,
        state: Arc<watch::Sender<SessionState>>,
    ) -> Self {
        MemSession {
            shared,
            key,
            id: SessionId(format!("mem-{key}")),
            state,
        }
    }

    /// The store's lock, once this session is found usable.
    fn live(&self) -> Result<MutexGuard<'_, State>> {
        let mut state = self.shared.lock();
        state.touch(self.key, &self.state)?;
        Ok(state)
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
                end = state.wait_for(|s| s.is_terminal()) => Err(match end.as_deref() {
                    Ok(SessionState::Expired) => Error::SessionExpired,
                    _ => Error::SessionClosed,
                }),
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
        self.live()?.tree.create(path, data, mode, self.key)
    }

    async fn get(&self, path: &str) -> Result<Option<Node>> {
        path::validate(path)?;
        Ok(self.live()?.tree.get(path))
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
        }
    }

    async fn close(&self) -> Result<()> {
        self.shared.lock().close(self.key, &self.state)
    }
}

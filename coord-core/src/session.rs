//! [`Session`]: the handle users and recipes hold. It checks every argument
//! before any I/O, identically for every backend, then asks the backend.

use std::sync::Arc;

use tokio::sync::watch;

use crate::error::{Error, Result};
use crate::path;
use crate::primitive::{
    Child, CreateMode, Created, Fence, Node, Op, OpResult, PrimitiveSession, SessionId,
    SessionState, Stat, Watch,
};

/// A session on some backend: cheap to clone (an `Arc`), shared by every
/// recipe that uses it. Its ephemeral nodes live as long as it does.
///
/// Every method checks its arguments first (see [`crate::path`]): an invalid
/// path or oversized data is an [`Error::InvalidPath`] or
/// [`Error::InvalidArgument`], the same on every backend, with no I/O. Each
/// method's other errors are listed on [`PrimitiveSession`].
///
/// # Cancel safety
/// Every async method may be dropped. Reads are then simply not done; a
/// write may or may not have been applied.
#[derive(Clone)]
pub struct Session {
    inner: Arc<dyn PrimitiveSession>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("backend", &self.inner.backend())
            .field("id", &self.inner.id())
            .finish()
    }
}

impl Session {
    /// Wrap a backend's session.
    pub fn new(inner: Arc<dyn PrimitiveSession>) -> Self {
        Session { inner }
    }

    /// The backend behind this session.
    pub fn primitive(&self) -> &Arc<dyn PrimitiveSession> {
        &self.inner
    }

    /// The backend's short name.
    pub fn backend(&self) -> &'static str {
        self.inner.backend()
    }

    /// This session's id.
    pub fn id(&self) -> SessionId {
        self.inner.id()
    }

    /// The current state.
    pub fn state(&self) -> SessionState {
        *self.inner.state().borrow()
    }

    /// A watch over the state that sees every change.
    pub fn state_watch(&self) -> watch::Receiver<SessionState> {
        self.inner.state()
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
        let mut rx = self.inner.state();
        let state = match rx.wait_for(|s| s.is_terminal()).await {
            Ok(s) => *s,
            // The backend dropped its sender: nothing will ever change again.
            Err(_) => SessionState::Closed,
        };
        match state {
            SessionState::Expired => Error::SessionExpired,
            _ => Error::SessionClosed,
        }
    }

    /// Create a node; see [`PrimitiveSession::create`].
    ///
    /// # Errors
    /// `InvalidPath` (also for `/`), `InvalidArgument` for oversized data,
    /// then the backend's.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped after the request left, the node may exist.
    /// Recipes that must not leave one behind run the create in a task
    /// (see `recipes::pending`).
    pub async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<Created> {
        path::validate_non_root(path)?;
        path::validate_data(data)?;
        self.inner.create(path, data, mode).await
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
        self.inner.get(path).await
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
        self.inner.set(path, data, version).await
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
        self.inner.delete(path, version).await
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
        self.inner.children(dir).await
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
        self.inner.children_watch(dir).await
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
        self.inner.watch_gone(path).await
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

    /// Do `op` only while `fence` holds, atomically.
    ///
    /// # Errors
    /// `InvalidPath`, `InvalidArgument` for the fence or the op; `LockLost`
    /// when the fence does not hold; then the op's own.
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may land after the drop.
    pub async fn guarded(&self, fence: &Fence, op: Op) -> Result<OpResult> {
        path::validate_non_root(&fence.path)?;
        match &op {
            Op::Create { path, data, .. } | Op::Set { path, data, .. } => {
                path::validate_non_root(path)?;
                path::validate_data(data)?;
            }
            Op::Delete { path, .. } => path::validate_non_root(path)?,
        }
        self.inner.guarded(fence, op).await
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
        match self.inner.create(path, &[], CreateMode::Persistent).await {
            Ok(_) | Err(Error::AlreadyExists { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// End the session; its ephemeral nodes are deleted.
    ///
    /// # Errors
    /// The backend's, if it could not tell the server (the server then ends
    /// the session when its timeout runs out).
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the session may or may not be closed.
    pub async fn close(&self) -> Result<()> {
        self.inner.close().await
    }
}

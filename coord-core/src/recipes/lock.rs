//! The exclusive lock without herd effect (the ZooKeeper recipes'
//! `WriteLock`, Curator's `InterProcessMutex`, the ZooKeeper paper §2.4).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::backend::node::{Child, Fence, Op, OpResult};
use crate::error::{Error, Result};
use crate::hold::contend::Request;
use crate::hold::contenders::{self, Contender};
use crate::hold::held::HeldNode;
use crate::hold::revocation;
use crate::layout;
use crate::machinery::stats::Stats;
use crate::machinery::wait::Wait;
use crate::path;
use crate::session::Session;
use crate::telemetry::{self, Recipe};
use crate::traits::Lockable;

/// A distributed exclusive lock at a directory path.
///
/// Contenders queue as ephemeral-sequential children of the directory,
/// named `_c_<uuid>-lock-<seq>` as Curator's `InterProcessMutex` names them;
/// every child with a sequence is a contender, so Curator and kazoo
/// (`extra_lock_patterns=("-lock-",)`) processes share the lock on
/// ZooKeeper, and `etcdctl lock` processes on etcd. Grants are FIFO by
/// sequence; a waiter watches only its immediate predecessor, so one release
/// wakes one waiter. Not reentrant: a second acquire through the same
/// session waits like any other contender (wrap it in a
/// [`ReentrantLock`](crate::recipes::ReentrantLock) to re-enter). A
/// [`Lockable`]: code taking `&dyn Lockable` takes it.
///
/// ```
/// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
/// use coord_core::recipes::Lock;
/// let lock = Lock::new(&session, "/locks/report")?;
/// let guard = lock.acquire().await?;
/// println!("holding with fencing token {}", guard.fencing_token());
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Lock {
    session: Session,
    dir: String,
    data: Vec<u8>,
    stats: Stats,
    /// Protection ids of deleted nodes, to name the next ones with
    /// ([`layout::Ids`]; shared by clones).
    ids: layout::Ids,
}

fn any_contender(_: &Child) -> bool {
    true
}

impl Lock {
    /// A lock at `path` (a directory; it is made on first use).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or `/`.
    pub fn new(session: &Session, path: &str) -> Result<Self> {
        path::validate_non_root(path)?;
        Ok(Lock {
            session: session.clone(),
            dir: path.to_owned(),
            data: Vec::new(),
            stats: Stats::new(),
            ids: layout::Ids::default(),
        })
    }

    /// Data stored in each contender node (Curator stores the host address).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when larger than [`path::MAX_DATA_LEN`].
    pub fn with_data(mut self, data: impl Into<Vec<u8>>) -> Result<Self> {
        let data = data.into();
        path::validate_data(&data)?;
        self.data = data;
        Ok(self)
    }

    /// Count into `stats` (shared with other handles) instead of this
    /// handle's own counters.
    #[doc(hidden)]
    pub fn with_stats(mut self, stats: Stats) -> Self {
        self.stats = stats;
        self
    }

    /// This handle's wake-up counters.
    #[doc(hidden)]
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The lock's directory.
    pub fn path(&self) -> &str {
        &self.dir
    }

    /// Everyone holding or queued for the lock, in queue order (see
    /// [`Lockable::participants`]).
    ///
    /// # Errors
    /// The session's errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn participants(&self) -> Result<Vec<Contender>> {
        contenders::list(&self.session, &self.dir, &contenders::exclusive).await
    }

    fn contender(&self) -> Request<'_> {
        Request {
            session: &self.session,
            dir: &self.dir,
            marker: layout::LOCK,
            data: &self.data,
            stats: &self.stats,
            blocked_by: &any_contender,
            ids: Some(&self.ids),
        }
    }

    /// Wait until the lock is held.
    ///
    /// # Errors
    /// The session's end ([`Error::SessionExpired`], [`Error::SessionClosed`]);
    /// [`Error::LockLost`] if our queued node was deleted by someone else;
    /// [`Error::ConnectionLost`] and backend errors.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped at any point, the attempt's node is deleted (in
    /// the background), so no waiter is left queued and nothing is held.
    pub async fn acquire(&self) -> Result<LockGuard> {
        self.acquire_traced(Wait::Forever)
            .await?
            .ok_or_else(|| Error::backend(self.session.backend(), "wait ended without a hold"))
    }

    /// Acquire per `wait`, without telemetry: for recipes built on this
    /// lock that report their own acquire (a semaphore's internal lock).
    pub(crate) async fn acquire_quietly(&self, wait: Wait) -> Result<Option<LockGuard>> {
        Ok(self
            .contender()
            .acquire(wait)
            .await?
            .map(LockGuard::from_held))
    }

    /// Acquire per `wait`, in the acquire's span (see [`crate::telemetry`]).
    async fn acquire_traced(&self, wait: Wait) -> Result<Option<LockGuard>> {
        telemetry::operation(
            Recipe::Lock,
            &self.session,
            &self.dir,
            self.acquire_quietly(wait),
        )
        .await
    }

    /// Take the lock only if that needs no waiting; `None` when it is held
    /// or queued for by someone earlier (our attempt is withdrawn).
    ///
    /// # Errors
    /// As [`Lock::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe, as [`Lock::acquire`].
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        self.acquire_traced(Wait::No).await
    }

    /// Wait at most `timeout` for the lock.
    ///
    /// # Errors
    /// [`Error::Timeout`] when it runs out (our node is deleted first, as
    /// Curator does); otherwise as [`Lock::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe, as [`Lock::acquire`].
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        self.acquire_traced(Wait::timeout(timeout)?)
            .await?
            .ok_or(Error::Timeout(timeout))
    }
}

/// Proof that a lock is held: what every [`Lockable`] returns. Release it
/// with [`LockGuard::release`]; dropping it releases in the background, best
/// effort.
#[must_use = "dropping the guard releases the lock"]
#[derive(Debug)]
pub struct LockGuard(Inner);

#[derive(Debug)]
enum Inner {
    /// The guard's own node.
    Node(HeldNode),
    /// One of the holds of a [`ReentrantLock`](crate::recipes::ReentrantLock)
    /// owner, sharing its guard; the last one out releases it.
    Shared(Arc<LockGuard>),
}

impl LockGuard {
    pub(crate) fn from_held(held: HeldNode) -> Self {
        LockGuard(Inner::Node(held))
    }

    pub(crate) fn shared(guard: Arc<LockGuard>) -> Self {
        LockGuard(Inner::Shared(guard))
    }

    fn held(&self) -> &HeldNode {
        match &self.0 {
            Inner::Node(h) => h,
            Inner::Shared(g) => g.held(),
        }
    }

    /// The fencing token: strictly larger for every later holder of this
    /// lock. Hand it to the resource you protect, and have it refuse
    /// tokens smaller than the largest it has seen.
    pub fn fencing_token(&self) -> u64 {
        self.held().fencing_token()
    }

    /// The fence for guarded writes ([`Session::guarded`]).
    pub fn fence(&self) -> Fence {
        self.held().fence()
    }

    /// The holder's node.
    pub fn node_path(&self) -> &str {
        self.held().path()
    }

    /// The session the lock is held through.
    pub fn session(&self) -> &Session {
        self.held().session()
    }

    /// Write `op` only while the lock is still held, atomically.
    ///
    /// # Errors
    /// [`Error::LockLost`] when it is not; otherwise the op's own.
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may land after the drop.
    pub async fn write(&self, op: Op) -> Result<OpResult> {
        self.held().write(op).await
    }

    /// Resolve when the lock is lost: the session ended, or the node was
    /// deleted under us. Returns why.
    ///
    /// # Errors
    /// None: it resolves *to* the reason the hold was lost.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn lost(&self) -> Error {
        self.held().lost().await
    }

    /// Resolve when a contender asks this holder to release (through
    /// [`Lockable::request_release`]
    /// or Curator's `Revoker.attemptRevoke`, which write `__REVOKE__` into
    /// the holder's node; Curator's `Revocable`). Nothing happens by
    /// itself: the holder decides whether, and when, to release.
    ///
    /// # Errors
    /// The reason the hold was lost, if it is lost first
    /// ([`Error::LockLost`], the session's end). Connection losses are
    /// waited through.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn revocation_requested(&self) -> Result<()> {
        let held = self.held();
        revocation::requested_at(held.session(), held.path()).await
    }

    /// Release the lock (for a [`ReentrantLock`](crate::recipes::ReentrantLock)
    /// hold: give up this hold; the lock is released when its owner's last
    /// hold goes).
    ///
    /// # Errors
    /// [`Error::LockLost`] when it had already been lost; the session's
    /// errors otherwise.
    ///
    /// # Cancel safety
    /// Cancel safe in effect: dropped, the release finishes in the background.
    pub async fn release(self) -> Result<()> {
        match self.0 {
            Inner::Node(h) => h.release().await,
            Inner::Shared(g) => match Arc::try_unwrap(g) {
                // The owner's last hold: release the lock itself.
                Ok(last) => Box::pin(last.release()).await,
                Err(_others) => Ok(()),
            },
        }
    }
}

crate::hold::impl_hold!(LockGuard, |g| g.held(), release);

impl telemetry::Outcome for LockGuard {
    fn holds(&mut self, f: &mut dyn FnMut(&mut dyn telemetry::Follow)) {
        // A shared (re-entered) hold is followed through its owner's.
        if let Inner::Node(h) = &mut self.0 {
            f(h);
        }
    }
}

#[async_trait]
impl Lockable for Lock {
    fn path(&self) -> &str {
        &self.dir
    }
    fn session(&self) -> &Session {
        &self.session
    }
    async fn acquire(&self) -> Result<LockGuard> {
        Lock::acquire(self).await
    }
    async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        Lock::try_acquire(self).await
    }
    async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        Lock::acquire_timeout(self, timeout).await
    }
    async fn participants(&self) -> Result<Vec<Contender>> {
        Lock::participants(self).await
    }
}

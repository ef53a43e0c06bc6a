//! The exclusive lock without herd effect (the ZooKeeper recipes'
//! `WriteLock`, Curator's `InterProcessMutex`, the ZooKeeper paper §2.4).

use std::time::Duration;

use crate::error::{Error, Result};
use crate::path;
use crate::primitive::{Child, Fence, Op, OpResult};
use crate::recipes::machinery::contend::Contender;
use crate::recipes::machinery::held::HeldNode;
use crate::recipes::machinery::names;
use crate::recipes::machinery::stats::Stats;
use crate::recipes::machinery::wait::Wait;
use crate::session::Session;

/// A distributed exclusive lock at a directory path.
///
/// Contenders queue as ephemeral-sequential children of the directory,
/// named `_c_<uuid>-lock-<seq>` as Curator's `InterProcessMutex` names them;
/// every child with a sequence is a contender, so Curator and kazoo
/// (`extra_lock_patterns=("-lock-",)`) processes share the lock on
/// ZooKeeper, and `etcdctl lock` processes on etcd. Grants are FIFO by
/// sequence; a waiter watches only its immediate predecessor, so one release
/// wakes one waiter. Not reentrant: a second acquire through the same
/// session waits like any other contender.
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
    pub fn with_stats(mut self, stats: Stats) -> Self {
        self.stats = stats;
        self
    }

    /// This handle's wake-up counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The lock's directory.
    pub fn path(&self) -> &str {
        &self.dir
    }

    fn contender(&self) -> Contender<'_> {
        Contender {
            session: &self.session,
            dir: &self.dir,
            marker: names::LOCK,
            data: &self.data,
            stats: &self.stats,
            blocked_by: &any_contender,
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
        let held = self.contender().acquire(Wait::Forever).await?;
        held.map(LockGuard)
            .ok_or_else(|| Error::backend(self.session.backend(), "wait ended without a hold"))
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
        Ok(self.contender().acquire(Wait::No).await?.map(LockGuard))
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
        let held = self.contender().acquire(Wait::timeout(timeout)?).await?;
        held.map(LockGuard).ok_or(Error::Timeout(timeout))
    }
}

/// Proof that a [`Lock`] is held. Release it with [`LockGuard::release`];
/// dropping it releases in the background, best effort.
#[must_use = "dropping the guard releases the lock"]
#[derive(Debug)]
pub struct LockGuard(HeldNode);

impl LockGuard {
    pub(crate) fn from_held(held: HeldNode) -> Self {
        LockGuard(held)
    }

    /// The fencing token: strictly larger for every later holder of this
    /// lock. Hand it to the resource you protect, and have it refuse
    /// tokens smaller than the largest it has seen.
    pub fn fencing_token(&self) -> u64 {
        self.0.fencing_token()
    }

    /// The fence for guarded writes ([`Session::guarded`]).
    pub fn fence(&self) -> Fence {
        self.0.fence()
    }

    /// The holder's node.
    pub fn node_path(&self) -> &str {
        self.0.path()
    }

    /// Write `op` only while the lock is still held, atomically.
    ///
    /// # Errors
    /// [`Error::LockLost`] when it is not; otherwise the op's own.
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may land after the drop.
    pub async fn write(&self, op: Op) -> Result<OpResult> {
        self.0.write(op).await
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
        self.0.lost().await
    }

    /// Release the lock.
    ///
    /// # Errors
    /// [`Error::LockLost`] when it had already been lost; the session's
    /// errors otherwise.
    ///
    /// # Cancel safety
    /// Cancel safe in effect: dropped, the release finishes in the background.
    pub async fn release(self) -> Result<()> {
        self.0.release().await
    }
}

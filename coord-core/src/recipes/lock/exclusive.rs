//! [`Lock`], the exclusive lock without herd effect (the ZooKeeper paper
//! §2.4).

use std::time::Duration;

use async_trait::async_trait;

use crate::backend::order::Blockers;
use crate::error::{Error, Result};
use crate::hold::contend::Request;
use crate::hold::contenders::{self, Contender};
use crate::recipes::lock::guard::LockGuard;

use crate::layout;
use crate::machinery::stats::Stats;
use crate::machinery::wait::Wait;
use crate::path;
use crate::recipes::lock::lockable::Lockable;
use crate::session::Session;
use crate::telemetry::{self, Recipe};

/// A distributed exclusive lock at a directory path (the ZooKeeper
/// recipes' `WriteLock`, Curator's `InterProcessMutex`), made by
/// [`Lock::new`]`(session, path)` ([`Lock::with_data`] to store, say, the
/// host in each contender's node). Take it with [`Lock::acquire`],
/// [`Lock::try_acquire`] or [`Lock::acquire_timeout`], or scoped with `run`
/// ([`LockableExt::run`](crate::prelude::LockableExt::run), with
/// `use coord_core::prelude::*`); each hold is a [`LockGuard`], released by
/// [`LockGuard::release`] or, in the background, on drop.
///
/// The other locks, each with one constructor: [`RwLock`](crate::recipes::RwLock)
/// (readers share), [`Semaphore`](crate::recipes::Semaphore) (N leases) and
/// [`SemaphoreMutex`](crate::recipes::SemaphoreMutex),
/// [`ReentrantLock`](crate::recipes::ReentrantLock) (wraps any lock),
/// [`MultiLock`](crate::recipes::MultiLock) (several, all or nothing), and
/// [`SimpleLock`](crate::recipes::SimpleLock) (the herd-effect baseline);
/// code that takes any lock takes a `&dyn` [`Lockable`].
///
/// Contenders queue as ephemeral-sequential children of the directory,
/// named `_c_<uuid>-lock-<seq>` as Curator's `InterProcessMutex` names them;
/// every child with a sequence is a contender, so Curator and kazoo
/// (`extra_lock_patterns=("-lock-",)`) processes share the lock on
/// ZooKeeper, and `etcdctl lock` processes on etcd. Grants are FIFO by
/// sequence; a waiter watches only its immediate predecessor, so one release
/// wakes one waiter. Not reentrant: a second acquire through the same
/// session waits like any other contender (wrap it in a
/// [`ReentrantLock`](crate::recipes::ReentrantLock) to re-enter).
///
/// Each holder's fencing token (its node's stamp) is strictly larger than
/// every earlier holder's, and the hold lasts while its node does: the
/// session's end (or someone deleting the node) loses it, which the guard's
/// `lost()` reports. Pass the token to what the holder writes, or write
/// through the guard's fence, so that a holder cut off from the server is
/// refused.
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

    /// Data stored in each contender node (Curator stores the host address):
    /// any bytes (`&str`, `String`, `&[u8]`, `Vec<u8>`, `b"…"`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when larger than [`path::MAX_DATA_LEN`].
    pub fn with_data(mut self, data: impl AsRef<[u8]>) -> Result<Self> {
        let data = data.as_ref();
        path::validate_data(data)?;
        self.data = data.to_vec();
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
            blockers: Blockers::All,
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

//! A reentrant wrapper over any lock (Curator's `InterProcessMutex` is
//! reentrant; coord's locks are not, unless wrapped).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::hold::contenders::Contender;
use crate::hold::held::lost_at;
use crate::recipes::lock::guard::LockGuard;
use crate::recipes::lock::lockable::Lockable;
use crate::session::Session;
use crate::telemetry::{self, Recipe};

/// Any [`Lockable`], made reentrant for one **owner** by
/// [`ReentrantLock::new`]`(lock)`: while the owner
/// holds the lock, its further acquires succeed at once and count; the
/// lock is released when the owner's last hold is released.
///
/// The owner is this value and its clones — an explicit handle, not the
/// current task or thread. Curator is reentrant per thread, but an async
/// task is no such unit: `join!` runs several futures in one task (a
/// per-task lock would let them all in at once), and work moves between
/// tasks freely. So: give each party that must exclude the others its own
/// `ReentrantLock` (each from [`ReentrantLock::new`]), and pass clones to
/// the code that may re-enter on the same party's behalf.
///
/// ```
/// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
/// use coord_core::prelude::*;
/// use coord_core::recipes::{Lock, ReentrantLock};
/// let lock = ReentrantLock::new(Lock::new(&session, "/locks/ledger")?);
/// let outer = lock.acquire().await?;
/// let inner = lock.acquire().await?; // same owner: at once
/// assert_eq!(lock.hold_count(), 2);
/// assert_eq!(inner.fencing_token(), outer.fencing_token());
/// inner.release().await?;
/// outer.release().await?; // the last hold: the lock is released
/// assert!(!lock.is_held());
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ReentrantLock<L> {
    owner: Arc<Owner<L>>,
}

impl<L> Clone for ReentrantLock<L> {
    fn clone(&self) -> Self {
        ReentrantLock {
            owner: self.owner.clone(),
        }
    }
}

#[derive(Debug)]
struct Owner<L> {
    lock: L,
    /// One acquire of the underlying lock at a time per owner: a second one
    /// waits for the first and then shares its hold.
    acquiring: tokio::sync::Mutex<()>,
    /// The owner's hold, while any of its guards lives.
    current: Mutex<Current>,
}

/// The owner's current hold and whether it is known to be lost.
#[derive(Debug, Default)]
struct Current {
    guard: Weak<LockGuard>,
    /// Set by a watcher task when the hold is lost (its node deleted, its
    /// session ended): a lost hold is not re-entered.
    lost: Arc<AtomicBool>,
}

impl<L: Lockable> ReentrantLock<L> {
    /// A new owner of `lock`, reentrant.
    pub fn new(lock: L) -> Self {
        ReentrantLock {
            owner: Arc::new(Owner {
                lock,
                acquiring: tokio::sync::Mutex::new(()),
                current: Mutex::new(Current::default()),
            }),
        }
    }

    /// The underlying lock.
    pub fn inner(&self) -> &L {
        &self.owner.lock
    }

    /// How many holds the owner has (0 when it does not hold the lock).
    pub fn hold_count(&self) -> usize {
        self.current()
            .map_or(0, |g| Arc::strong_count(&g).saturating_sub(1))
    }

    /// Whether the owner holds the lock (Curator's
    /// `isAcquiredInThisProcess`, per owner).
    pub fn is_held(&self) -> bool {
        self.hold_count() > 0
    }

    /// The owner's current hold, unless it is known to be lost.
    fn current(&self) -> Option<Arc<LockGuard>> {
        let c = self.owner.current.lock().ok()?;
        if c.lost.load(Ordering::Acquire) {
            return None;
        }
        c.guard.upgrade()
    }

    /// Another hold on the owner's current one, if it has one that is not
    /// lost: a hold whose node was deleted or whose session ended is not
    /// re-entered — a fresh acquire waits its turn (or reports the
    /// session's end). Loss is seen as the backend reports it (a watch);
    /// until then the lock would be re-entered, as any holder would go on
    /// believing it holds.
    fn reenter(&self) -> Option<LockGuard> {
        let g = self.current()?;
        if g.session().state().end_error().is_some() {
            return None;
        }
        Some(LockGuard::shared(g))
    }

    /// [`ReentrantLock::reenter`], confirmed on the server: the node is
    /// still there with its stamp (one read). The watcher's flag may lag
    /// a deletion another session has already seen; re-entering a lost
    /// hold would let two holders in.
    async fn live_hold(&self) -> Result<Option<LockGuard>> {
        let Some(g) = self.reenter() else {
            return Ok(None);
        };
        let fence = g.fence();
        match g.session().get(&fence.path).await? {
            Some(n) if n.stat.stamp == fence.stamp => Ok(Some(g)),
            _ => {
                if let Ok(c) = self.owner.current.lock() {
                    c.lost.store(true, Ordering::Release);
                }
                Ok(None)
            }
        }
    }

    fn install(&self, guard: LockGuard) -> LockGuard {
        let lost = Arc::new(AtomicBool::new(false));
        // Watch for the loss without keeping the hold alive: by session and
        // path only. The task ends when the node goes (a release too).
        let (session, node, flag) = (
            guard.session().clone(),
            guard.node_path().to_owned(),
            lost.clone(),
        );
        tokio::spawn(async move {
            lost_at(&session, &node).await;
            flag.store(true, Ordering::Release);
        });
        let shared = Arc::new(guard);
        if let Ok(mut c) = self.owner.current.lock() {
            *c = Current {
                guard: Arc::downgrade(&shared),
                lost,
            };
        }
        LockGuard::shared(shared)
    }

    /// Hold the lock: at once if the owner holds it (after one read that
    /// confirms the hold is still there), else by acquiring the underlying
    /// lock.
    ///
    /// # Errors
    /// The underlying lock's [`Lockable::acquire`] errors.
    ///
    /// # Cancel safety
    /// Cancel safe, as the underlying acquire.
    pub async fn acquire(&self) -> Result<LockGuard> {
        self.traced(self.acquire_untraced()).await
    }

    /// Run `op` in the span of this lock's acquire (see
    /// [`crate::telemetry`]); the underlying lock reports the rest.
    async fn traced<T>(&self, op: impl std::future::Future<Output = T>) -> T {
        let lock = &self.owner.lock;
        telemetry::in_span(Recipe::Reentrant, lock.session(), lock.path(), op).await
    }

    async fn acquire_untraced(&self) -> Result<LockGuard> {
        if let Some(g) = self.live_hold().await? {
            return Ok(g);
        }
        let _turn = self.owner.acquiring.lock().await;
        if let Some(g) = self.live_hold().await? {
            return Ok(g);
        }
        Ok(self.install(self.owner.lock.acquire().await?))
    }

    /// Hold the lock if the owner holds it or it is free now; `None` when
    /// that would need waiting (including for another acquire of the same
    /// owner still in progress).
    ///
    /// # Errors
    /// The underlying lock's errors.
    ///
    /// # Cancel safety
    /// Cancel safe, as the underlying acquire.
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        self.traced(self.try_acquire_untraced()).await
    }

    async fn try_acquire_untraced(&self) -> Result<Option<LockGuard>> {
        if let Some(g) = self.live_hold().await? {
            return Ok(Some(g));
        }
        let Ok(_turn) = self.owner.acquiring.try_lock() else {
            return Ok(None);
        };
        if let Some(g) = self.live_hold().await? {
            return Ok(Some(g));
        }
        Ok(self
            .owner
            .lock
            .try_acquire()
            .await?
            .map(|g| self.install(g)))
    }

    /// [`ReentrantLock::acquire`], waiting at most `timeout`.
    ///
    /// # Errors
    /// [`Error::Timeout`]; [`Error::InvalidArgument`] for a timeout over
    /// [`crate::limits::MAX_TIMEOUT`]; otherwise the underlying lock's.
    ///
    /// # Cancel safety
    /// Cancel safe, as the underlying acquire.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        crate::limits::check_timeout(timeout)?;
        self.traced(self.acquire_timeout_untraced(timeout)).await
    }

    async fn acquire_timeout_untraced(&self, timeout: Duration) -> Result<LockGuard> {
        if let Some(g) = self.live_hold().await? {
            return Ok(g);
        }
        let deadline = Instant::now() + timeout;
        let Ok(_turn) = tokio::time::timeout_at(deadline, self.owner.acquiring.lock()).await else {
            return Err(Error::Timeout(timeout));
        };
        if let Some(g) = self.live_hold().await? {
            return Ok(g);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match self.owner.lock.acquire_timeout(left).await {
            Ok(g) => Ok(self.install(g)),
            Err(Error::Timeout(_)) => Err(Error::Timeout(timeout)),
            Err(e) => Err(e),
        }
    }
}

#[async_trait]
impl<L: Lockable + 'static> Lockable for ReentrantLock<L> {
    fn path(&self) -> &str {
        self.owner.lock.path()
    }
    fn session(&self) -> &Session {
        self.owner.lock.session()
    }
    async fn acquire(&self) -> Result<LockGuard> {
        ReentrantLock::acquire(self).await
    }
    async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        ReentrantLock::try_acquire(self).await
    }
    async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        ReentrantLock::acquire_timeout(self, timeout).await
    }
    async fn participants(&self) -> Result<Vec<Contender>> {
        self.owner.lock.participants().await
    }
}

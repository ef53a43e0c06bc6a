//! All or nothing over several locks (Curator's `InterProcessMultiLock`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::recipes::lock::guard::LockGuard;
use crate::recipes::lock::lockable::Lockable;

/// Several locks taken as one: all of them, or none (Curator's
/// `InterProcessMultiLock`), made by [`MultiLock::new`] over any
/// [`Lockable`]s; [`MultiLock::acquire`] (`try_acquire`, `acquire_timeout`)
/// returns a [`MultiLockGuard`] holding one guard per lock.
///
/// The locks may be of any kind and on any paths (or sessions). They are
/// always taken in one global order — by path — whatever order they were
/// given in, so two multi-locks over overlapping sets wait for each other
/// instead of each holding what the other needs (Curator's multi-lock takes
/// them in the given order and can deadlock). A failed, timed-out or
/// cancelled acquire releases whatever it had taken.
///
/// A multi-lock is not itself a [`Lockable`]: its holds have a fencing
/// token each, not one ([`MultiLockGuard::guards`]).
///
/// ```
/// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
/// use coord_core::prelude::*;
/// use coord_core::recipes::{Lock, MultiLock, SemaphoreMutex};
/// let both = MultiLock::new(vec![
///     Box::new(Lock::new(&session, "/locks/account-1")?) as Box<dyn Lockable>,
///     Box::new(SemaphoreMutex::new(&session, "/locks/account-2")?),
/// ])?;
/// let held = both.acquire().await?;
/// for guard in held.guards() {
///     println!("{} with token {}", guard.node_path(), guard.fencing_token());
/// }
/// held.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct MultiLock {
    /// In acquisition order: sorted by path.
    locks: Arc<Vec<Box<dyn Lockable>>>,
}

impl MultiLock {
    /// A multi-lock over `locks`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for no locks, or two locks at the same
    /// path: the same lock twice (or both halves of one read/write lock)
    /// would wait for itself, and same-path locks on different servers
    /// have no order every process agrees on.
    pub fn new(locks: Vec<Box<dyn Lockable>>) -> Result<Self> {
        if locks.is_empty() {
            return Err(Error::InvalidArgument(
                "a multi-lock needs at least one lock".into(),
            ));
        }
        let mut locks = locks;
        locks.sort_by(|a, b| a.path().cmp(b.path()));
        if let Some(w) = locks.windows(2).find(|w| w[0].path() == w[1].path()) {
            return Err(Error::InvalidArgument(format!(
                "a multi-lock cannot take two locks at the same path {:?}",
                w[0].path()
            )));
        }
        Ok(MultiLock {
            locks: Arc::new(locks),
        })
    }

    /// The locks, in the order they are taken.
    pub fn locks(&self) -> impl Iterator<Item = &dyn Lockable> {
        self.locks.iter().map(|l| l.as_ref())
    }

    /// Wait until every lock is held.
    ///
    /// # Errors
    /// The first error of any lock's [`Lockable::acquire`]; whatever was
    /// taken is released first.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped at any point, the locks taken so far are
    /// released (in the background) and no attempt is left queued.
    pub async fn acquire(&self) -> Result<MultiLockGuard> {
        let mut taken = Vec::with_capacity(self.locks.len());
        for lock in self.locks.iter() {
            match lock.acquire().await {
                Ok(g) => taken.push(g),
                Err(e) => return Err(give_back(taken, e).await),
            }
        }
        Ok(MultiLockGuard { guards: taken })
    }

    /// Every lock only if none needs waiting; `None` otherwise (nothing is
    /// held then).
    ///
    /// # Errors
    /// As [`MultiLock::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe, as [`MultiLock::acquire`].
    pub async fn try_acquire(&self) -> Result<Option<MultiLockGuard>> {
        let mut taken = Vec::with_capacity(self.locks.len());
        for lock in self.locks.iter() {
            match lock.try_acquire().await {
                Ok(Some(g)) => taken.push(g),
                Ok(None) => {
                    release_all(taken).await;
                    return Ok(None);
                }
                Err(e) => return Err(give_back(taken, e).await),
            }
        }
        Ok(Some(MultiLockGuard { guards: taken }))
    }

    /// Wait at most `timeout` (in all) for every lock.
    ///
    /// # Errors
    /// [`Error::Timeout`] when it runs out, with nothing held;
    /// [`Error::InvalidArgument`] for a timeout over
    /// [`crate::limits::MAX_TIMEOUT`]; otherwise as [`MultiLock::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe, as [`MultiLock::acquire`].
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<MultiLockGuard> {
        crate::limits::check_timeout(timeout)?;
        let deadline = Instant::now() + timeout;
        let mut taken = Vec::with_capacity(self.locks.len());
        for lock in self.locks.iter() {
            let left = deadline.saturating_duration_since(Instant::now());
            match lock.acquire_timeout(left).await {
                Ok(g) => taken.push(g),
                Err(Error::Timeout(_)) => {
                    return Err(give_back(taken, Error::Timeout(timeout)).await)
                }
                Err(e) => return Err(give_back(taken, e).await),
            }
        }
        Ok(MultiLockGuard { guards: taken })
    }
}

/// Release what an acquire had taken before failing with `e`; `e`.
async fn give_back(taken: Vec<LockGuard>, e: Error) -> Error {
    release_all(taken).await;
    e
}

/// Release every guard; a failed release is finished in the background.
async fn release_all(taken: Vec<LockGuard>) {
    for g in taken.into_iter().rev() {
        if let Err(e) = g.release().await {
            tracing::debug!(target: crate::telemetry::TARGET, error = %e, "releasing part of an abandoned multi-lock");
        }
    }
}

/// Every lock of a [`MultiLock`], held. Release it with
/// [`MultiLockGuard::release`]; dropping it releases every lock in the
/// background.
#[must_use = "dropping the guard releases every lock"]
#[derive(Debug)]
pub struct MultiLockGuard {
    guards: Vec<LockGuard>,
}

impl MultiLockGuard {
    /// Each lock's guard, in the order taken (by path): its fencing token,
    /// fence and guarded writes.
    pub fn guards(&self) -> &[LockGuard] {
        &self.guards
    }

    /// Resolve when any of the locks is lost; returns why.
    ///
    /// # Errors
    /// None: it resolves *to* the reason a hold was lost.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn lost(&self) -> Error {
        type Lost<'a> = Pin<Box<dyn Future<Output = Error> + Send + 'a>>;
        let mut watches: Vec<Lost<'_>> = self
            .guards
            .iter()
            .map(|g| Box::pin(g.lost()) as _)
            .collect();
        std::future::poll_fn(|cx| {
            for w in watches.iter_mut() {
                if let Poll::Ready(e) = w.as_mut().poll(cx) {
                    return Poll::Ready(e);
                }
            }
            Poll::Pending
        })
        .await
    }

    /// Release every lock (in the reverse of the order taken).
    ///
    /// # Errors
    /// The first release error ([`Error::LockLost`] when a lock had already
    /// been lost); every lock is released regardless.
    ///
    /// # Cancel safety
    /// Cancel safe in effect: dropped, the rest are released in the
    /// background.
    pub async fn release(self) -> Result<()> {
        let mut first = None;
        for g in self.guards.into_iter().rev() {
            if let Err(e) = g.release().await {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

//! The lock trait every lock-like recipe implements.

use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;

use crate::error::Result;
use crate::hold::contenders::Contender;
use crate::hold::revocation;
use crate::hold::{while_held, HoldContext};
use crate::recipes::lock::guard::LockGuard;
use crate::session::Session;

/// A distributed lock, whatever the recipe behind it (Curator's
/// `InterProcessLock`): [`Lock`](crate::recipes::Lock),
/// [`SimpleLock`](crate::recipes::SimpleLock),
/// [`SemaphoreMutex`](crate::recipes::SemaphoreMutex), the
/// [`ReadLock`](crate::recipes::ReadLock) and
/// [`WriteLock`](crate::recipes::WriteLock) halves of a
/// [`RwLock`](crate::recipes::RwLock), and the
/// [`ReentrantLock`](crate::recipes::ReentrantLock) over any of them. Every
/// one returns a [`LockGuard`]; a [`MultiLock`](crate::recipes::MultiLock)
/// takes any set of them.
///
/// Named for what it is able to do, so that at a call site the trait
/// (`&dyn Lockable`) and the recipe (`Lock`) never need telling apart.
///
/// ```
/// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
/// use coord_core::prelude::*;
/// use coord_core::recipes::{Lock, RwLock, SemaphoreMutex};
///
/// async fn nightly_report(lock: &dyn Lockable) -> coord_core::Result<u64> {
///     let guard = lock.acquire().await?;
///     let token = guard.fencing_token();
///     guard.release().await?;
///     Ok(token)
/// }
/// nightly_report(&Lock::new(&session, "/locks/report")?).await?;
/// nightly_report(&SemaphoreMutex::new(&session, "/mutexes/report")?).await?;
/// nightly_report(&RwLock::new(&session, "/rw/report")?.write_lock()).await?;
/// # Ok(()) }
/// ```
#[async_trait]
pub trait Lockable: Send + Sync + std::fmt::Debug {
    /// The lock's path (its directory).
    fn path(&self) -> &str;

    /// The session the lock is taken through.
    fn session(&self) -> &Session;

    /// Wait until the lock is held.
    ///
    /// # Errors
    /// The session's end ([`Error::SessionExpired`](crate::Error::SessionExpired),
    /// [`Error::SessionClosed`](crate::Error::SessionClosed));
    /// [`Error::LockLost`](crate::Error::LockLost) if the queued attempt
    /// was deleted by someone else; backend errors.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped at any point, the attempt leaves no node and
    /// holds nothing.
    async fn acquire(&self) -> Result<LockGuard>;

    /// Take the lock only if that needs no waiting; `None` otherwise (the
    /// attempt is withdrawn).
    ///
    /// # Errors
    /// As [`Lockable::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe, as [`Lockable::acquire`].
    async fn try_acquire(&self) -> Result<Option<LockGuard>>;

    /// Wait at most `timeout` for the lock.
    ///
    /// # Errors
    /// [`Error::Timeout`](crate::Error::Timeout) when it runs out (nothing
    /// is left queued); [`Error::InvalidArgument`](crate::Error::InvalidArgument)
    /// for a timeout over [`crate::limits::MAX_TIMEOUT`]; otherwise as
    /// [`Lockable::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe, as [`Lockable::acquire`].
    async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard>;

    /// Everyone holding or queued for the lock, in queue order, as read
    /// from the server now (Curator's `getParticipantNodes`, kazoo's
    /// `contenders()`).
    ///
    /// # Errors
    /// The session's errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    async fn participants(&self) -> Result<Vec<Contender>>;

    /// Ask whoever holds the lock now to release it (Curator's
    /// `Revoker.attemptRevoke`, on every holder): each sees the request on
    /// its guard ([`LockGuard::revocation_requested`]) and decides. Returns
    /// the nodes asked.
    ///
    /// # Errors
    /// The session's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, some holders may have been asked.
    async fn request_release(&self) -> Result<Vec<String>> {
        let mut asked = Vec::new();
        for c in self.participants().await? {
            if c.is_holding() && revocation::request(self.session(), &c.node).await? {
                asked.push(c.node);
            }
        }
        Ok(asked)
    }
}

/// Scoped use of any [`Lockable`]: acquire, run, release. Implemented for
/// every lock, `dyn Lockable` included.
#[async_trait]
pub trait LockableExt: Lockable {
    /// Acquire the lock, run `body` while holding it, release it (kazoo's
    /// `with lock:`). If the lock is lost while `body` runs, `body` is
    /// dropped and the reason returned; see
    /// [`while_held`](crate::recipes::while_held).
    ///
    /// ```
    /// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
    /// use coord_core::prelude::*;
    /// let lock = coord_core::recipes::Lock::new(&session, "/locks/report")?;
    /// let rows = lock.run(|held| async move {
    ///     println!("writing the report with token {}", held.fencing_token());
    ///     42
    /// }).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Lockable::acquire`]'s; the reason the lock was lost while `body`
    /// ran or before the release.
    ///
    /// # Cancel safety
    /// Cancel safe in effect: dropped, `body` is dropped and the lock is
    /// released in the background.
    async fn run<F, Fut, T>(&self, body: F) -> Result<T>
    where
        F: FnOnce(HoldContext) -> Fut + Send,
        Fut: Future<Output = T> + Send,
        T: Send,
    {
        while_held(self.acquire().await?, body).await
    }

    /// [`LockableExt::run`], waiting at most `timeout` for the lock.
    ///
    /// # Errors
    /// [`Error::Timeout`](crate::Error::Timeout) when the lock was not had
    /// in time (`body` did not run); otherwise as [`LockableExt::run`].
    ///
    /// # Cancel safety
    /// As [`LockableExt::run`].
    async fn run_timeout<F, Fut, T>(&self, timeout: Duration, body: F) -> Result<T>
    where
        F: FnOnce(HoldContext) -> Fut + Send,
        Fut: Future<Output = T> + Send,
        T: Send,
    {
        while_held(self.acquire_timeout(timeout).await?, body).await
    }
}

impl<L: Lockable + ?Sized> LockableExt for L {}

//! [`RwLock`], the read/write lock of the ZooKeeper paper, and its two
//! halves.

use std::time::Duration;

use async_trait::async_trait;

use crate::backend::node::Child;
use crate::backend::order::Blockers;
use crate::error::{Error, Result};
use crate::hold::contend::Request;
use crate::hold::contenders::{self, Contender};
use crate::layout;
use crate::machinery::stats::Stats;
use crate::machinery::wait::Wait;
use crate::path;
use crate::recipes::lock::guard::LockGuard;
use crate::recipes::lock::lockable::Lockable;
use crate::session::Session;
use crate::telemetry::{self, Recipe};

/// A distributed read/write lock at a directory path (the ZooKeeper
/// paper's; Curator's `InterProcessReadWriteLock`), made by
/// [`RwLock::new`]`(session, path)`. Take a read hold with
/// [`RwLock::read`] (`try_read`, `read_timeout`) and a write hold with
/// [`RwLock::write`] (`try_write`, `write_timeout`); or take each half as a
/// lock of its own, a [`Lockable`] for code that takes any lock:
/// [`RwLock::read_lock`], [`RwLock::write_lock`].
///
/// Readers share it; a writer holds it alone. Both queue as
/// ephemeral-sequential children (`_c_<uuid>-__READ__<seq>` and
/// `_c_<uuid>-__WRIT__<seq>`, Curator's names). A reader waits only for the
/// last writer queued before it; a writer waits for its immediate
/// predecessor. Grants follow the queue, so a writer is never starved by
/// readers that came after it. kazoo's `ReadLock` nodes (`__rlock__`) are
/// readers too; any other contender (a plain lock node, kazoo's `WriteLock`
/// `__lock__`, say) counts as a writer.
#[derive(Debug, Clone)]
pub struct RwLock {
    session: Session,
    dir: String,
    stats: Stats,
    /// Protection ids of deleted nodes, to name the next ones with
    /// ([`layout::Ids`]; shared by clones and both halves).
    ids: layout::Ids,
}

/// The markers of readers' nodes: a reader waits behind the earlier
/// children without one (writers).
const READERS: &[&str] = &[layout::READ, layout::KAZOO_READ];

fn is_reader(c: &Child) -> bool {
    !Blockers::Unmarked(READERS).blocks(&c.name)
}

fn blocks_reader(c: &Child) -> bool {
    !is_reader(c)
}

fn blocks_writer(_: &Child) -> bool {
    true
}

/// The queue rule of both halves, for listing participants.
fn blocked(me: &Child, earlier: &Child) -> bool {
    if is_reader(me) {
        blocks_reader(earlier)
    } else {
        blocks_writer(earlier)
    }
}

impl RwLock {
    /// A read/write lock at `path` (a directory, made on first use).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or `/`.
    pub fn new(session: &Session, path: &str) -> Result<Self> {
        path::validate_non_root(path)?;
        Ok(RwLock {
            session: session.clone(),
            dir: path.to_owned(),
            stats: Stats::new(),
            ids: layout::Ids::default(),
        })
    }

    /// Count into shared `stats`.
    #[doc(hidden)]
    pub fn with_stats(mut self, stats: Stats) -> Self {
        self.stats = stats;
        self
    }

    /// This handle's counters.
    #[doc(hidden)]
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The lock's directory.
    pub fn path(&self) -> &str {
        &self.dir
    }

    /// The read half as a lock of its own (Curator's `readLock()`): a
    /// [`Lockable`] whose acquire is [`RwLock::read`].
    pub fn read_lock(&self) -> ReadLock {
        ReadLock(self.clone())
    }

    /// The write half as a lock of its own (Curator's `writeLock()`): a
    /// [`Lockable`] whose acquire is [`RwLock::write`].
    pub fn write_lock(&self) -> WriteLock {
        WriteLock(self.clone())
    }

    /// Every reader and writer holding or queued, in queue order (several
    /// readers may hold at once).
    ///
    /// # Errors
    /// The session's errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn participants(&self) -> Result<Vec<Contender>> {
        contenders::list(&self.session, &self.dir, &blocked).await
    }

    async fn acquire(&self, write: bool, wait: Wait) -> Result<Option<LockGuard>> {
        let c = Request {
            session: &self.session,
            dir: &self.dir,
            marker: if write { layout::WRITE } else { layout::READ },
            data: &[],
            stats: &self.stats,
            blockers: if write {
                Blockers::All
            } else {
                Blockers::Unmarked(READERS)
            },
            ids: Some(&self.ids),
        };
        let recipe = if write {
            Recipe::WriteLock
        } else {
            Recipe::ReadLock
        };
        let acquire = async { Ok(c.acquire(wait).await?.map(LockGuard::from_held)) };
        telemetry::operation(recipe, &self.session, &self.dir, acquire).await
    }

    fn must(&self, g: Option<LockGuard>) -> Result<LockGuard> {
        g.ok_or_else(|| Error::backend(self.session.backend(), "wait ended without a hold"))
    }

    /// Wait for a shared (read) hold.
    ///
    /// # Errors
    /// The session's end; [`Error::LockLost`] if our queued node was
    /// deleted; connection and backend errors.
    ///
    /// # Cancel safety
    /// Cancel safe: a dropped attempt's node is deleted.
    pub async fn read(&self) -> Result<LockGuard> {
        let g = self.acquire(false, Wait::Forever).await?;
        self.must(g)
    }

    /// A read hold only if no earlier writer is queued.
    ///
    /// # Errors
    /// As [`RwLock::read`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn try_read(&self) -> Result<Option<LockGuard>> {
        self.acquire(false, Wait::No).await
    }

    /// Wait at most `timeout` for a read hold.
    ///
    /// # Errors
    /// [`Error::Timeout`]; otherwise as [`RwLock::read`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn read_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        self.acquire(false, Wait::timeout(timeout)?)
            .await?
            .ok_or(Error::Timeout(timeout))
    }

    /// Wait for the exclusive (write) hold.
    ///
    /// # Errors
    /// As [`RwLock::read`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn write(&self) -> Result<LockGuard> {
        let g = self.acquire(true, Wait::Forever).await?;
        self.must(g)
    }

    /// The write hold only if nobody is queued before us.
    ///
    /// # Errors
    /// As [`RwLock::read`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn try_write(&self) -> Result<Option<LockGuard>> {
        self.acquire(true, Wait::No).await
    }

    /// Wait at most `timeout` for the write hold.
    ///
    /// # Errors
    /// [`Error::Timeout`]; otherwise as [`RwLock::read`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn write_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        self.acquire(true, Wait::timeout(timeout)?)
            .await?
            .ok_or(Error::Timeout(timeout))
    }
}

/// The read half of a [`RwLock`] ([`RwLock::read_lock`]): shared with other
/// readers, excluded by writers.
#[derive(Debug, Clone)]
pub struct ReadLock(RwLock);

/// The write half of a [`RwLock`] ([`RwLock::write_lock`]): exclusive.
#[derive(Debug, Clone)]
pub struct WriteLock(RwLock);

#[async_trait]
impl Lockable for ReadLock {
    fn path(&self) -> &str {
        &self.0.dir
    }
    fn session(&self) -> &Session {
        &self.0.session
    }
    async fn acquire(&self) -> Result<LockGuard> {
        self.0.read().await
    }
    async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        self.0.try_read().await
    }
    async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        self.0.read_timeout(timeout).await
    }
    async fn participants(&self) -> Result<Vec<Contender>> {
        self.0.participants().await
    }
}

#[async_trait]
impl Lockable for WriteLock {
    fn path(&self) -> &str {
        &self.0.dir
    }
    fn session(&self) -> &Session {
        &self.0.session
    }
    async fn acquire(&self) -> Result<LockGuard> {
        self.0.write().await
    }
    async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        self.0.try_write().await
    }
    async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        self.0.write_timeout(timeout).await
    }
    async fn participants(&self) -> Result<Vec<Contender>> {
        self.0.participants().await
    }
}

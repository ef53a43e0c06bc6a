//! The simple "lock file" lock of the ZooKeeper paper, kept as the baseline
//! benchmarks compare the herd-free [`crate::recipes::Lock`] against.

use std::time::Duration;

use async_trait::async_trait;

use crate::backend::node::CreateMode;
use crate::error::{Error, Result};
use crate::hold::contend::wait_counted;
use crate::hold::contenders::{self, Contender, ContenderState};
use crate::hold::held::HeldNode;
use crate::layout;
use crate::machinery::pending::PendingNode;
use crate::machinery::stats::Stats;
use crate::machinery::wait::Wait;
use crate::path;
use crate::recipes::lock::guard::LockGuard;
use crate::recipes::lock::lockable::Lockable;
use crate::session::Session;
use crate::telemetry::{self, Recipe};

/// The ZooKeeper paper's simple lock, made by
/// [`SimpleLock::new`]`(session, path)`: whoever creates the ephemeral node
/// `<path>/lock` holds the lock; everyone else waits for that node to go
/// and then races to create it again.
///
/// Correct, but with the **herd effect**: every release wakes every waiter
/// (its [`Stats::wakeups`] grow by the number of waiters per release), and
/// grants are not FIFO. Use [`crate::recipes::Lock`]; this one exists to be
/// measured against.
#[derive(Debug, Clone)]
pub struct SimpleLock {
    session: Session,
    dir: String,
    node: String,
    stats: Stats,
}

impl SimpleLock {
    /// A simple lock whose node is `<path>/lock`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or `/`.
    pub fn new(session: &Session, path: &str) -> Result<Self> {
        path::validate_non_root(path)?;
        Ok(SimpleLock {
            session: session.clone(),
            dir: path.to_owned(),
            node: path::join(path, layout::SIMPLE_LOCK_NODE),
            stats: Stats::new(),
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

    /// The holder, if any (waiters make no node, so they are not listed).
    ///
    /// # Errors
    /// The session's errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn participants(&self) -> Result<Vec<Contender>> {
        Ok(
            contenders::one(&self.session, &self.node, ContenderState::Holding)
                .await?
                .into_iter()
                .collect(),
        )
    }

    async fn acquire_inner(&self, wait: Wait) -> Result<Option<LockGuard>> {
        let acquire = self.acquire_untraced(wait);
        telemetry::operation(Recipe::SimpleLock, &self.session, &self.dir, acquire).await
    }

    async fn acquire_untraced(&self, wait: Wait) -> Result<Option<LockGuard>> {
        loop {
            let mut pending = PendingNode::spawn(
                &self.session,
                self.node.clone(),
                Vec::new(),
                CreateMode::Ephemeral,
            );
            match pending.created().await {
                Ok(_) => {
                    let node = pending.take().ok_or_else(|| {
                        Error::backend(self.session.backend(), "lost track of our own node")
                    })?;
                    self.stats.acquired();
                    return Ok(Some(LockGuard::from_held(HeldNode::new(
                        self.session.clone(),
                        node,
                    ))));
                }
                Err(Error::AlreadyExists { .. }) => {}
                Err(e) => return Err(e),
            }
            match wait {
                Wait::No => return Ok(None),
                Wait::Forever => wait_counted(&self.session, &self.stats, &self.node, None).await?,
                Wait::Until(deadline, d) => tokio::time::timeout_at(
                    deadline,
                    wait_counted(&self.session, &self.stats, &self.node, None),
                )
                .await
                .map_err(|_| Error::Timeout(d))??,
            }
        }
    }

    /// Wait until the lock is held.
    ///
    /// # Errors
    /// The session's end; connection and backend errors.
    ///
    /// # Cancel safety
    /// Cancel safe: a node created for a dropped attempt is deleted.
    pub async fn acquire(&self) -> Result<LockGuard> {
        self.acquire_inner(Wait::Forever)
            .await?
            .ok_or_else(|| Error::backend(self.session.backend(), "wait ended without a hold"))
    }

    /// Take the lock only if it is free now.
    ///
    /// # Errors
    /// As [`SimpleLock::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        self.acquire_inner(Wait::No).await
    }

    /// Wait at most `timeout`.
    ///
    /// # Errors
    /// [`Error::Timeout`]; otherwise as [`SimpleLock::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        self.acquire_inner(Wait::timeout(timeout)?)
            .await?
            .ok_or(Error::Timeout(timeout))
    }
}

#[async_trait]
impl Lockable for SimpleLock {
    fn path(&self) -> &str {
        &self.dir
    }
    fn session(&self) -> &Session {
        &self.session
    }
    async fn acquire(&self) -> Result<LockGuard> {
        SimpleLock::acquire(self).await
    }
    async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        SimpleLock::try_acquire(self).await
    }
    async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        SimpleLock::acquire_timeout(self, timeout).await
    }
    async fn participants(&self) -> Result<Vec<Contender>> {
        SimpleLock::participants(self).await
    }
}

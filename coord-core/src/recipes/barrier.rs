//! Barriers (Curator `DistributedBarrier` and `DistributedDoubleBarrier`):
//! [`Barrier`] holds waiters back, [`DoubleBarrier`] lets N in and out together.

use std::time::Duration;

use tokio::time::Instant;

use crate::backend::node::CreateMode;
use crate::error::{Error, Result};
use crate::hold::held::HeldNode;
use crate::layout::{self, BARRIER_READY as READY};
use crate::machinery::pending::{delete_if_present, PendingNode};
use crate::machinery::retry::{backoff, list_watch_retrying};
use crate::path;
use crate::session::Session;

/// A barrier (the ZooKeeper paper's; Curator's `DistributedBarrier`), made
/// by [`Barrier::new`]`(session, path)`: while its node exists,
/// [`Barrier::wait`] blocks; [`Barrier::set`] raises it,
/// [`Barrier::remove`] lets every waiter through.
///
/// The node, at `path` itself, is persistent: it outlives the session that
/// set it, as in Curator, so remove it explicitly. Waiters watch the node,
/// no polling. For N participants that must start and finish together, see
/// [`DoubleBarrier`].
///
/// ```
/// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
/// use coord_core::recipes::Barrier;
/// let barrier = Barrier::new(&session, "/barriers/deploy")?;
/// barrier.set().await?;
/// // ... elsewhere, `barrier.wait().await?` blocks until:
/// barrier.remove().await?;
/// barrier.wait().await?; // not raised: at once
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Barrier {
    session: Session,
    node: String,
}

async fn until<T>(
    deadline: Option<(Instant, Duration)>,
    fut: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    match deadline {
        Some((at, d)) => match tokio::time::timeout_at(at, fut).await {
            Ok(r) => r,
            Err(_) => Err(Error::Timeout(d)),
        },
        None => fut.await,
    }
}

impl Barrier {
    /// A barrier at `path` (the node itself).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or `/`.
    pub fn new(session: &Session, path: &str) -> Result<Self> {
        path::validate_non_root(path)?;
        Ok(Barrier {
            session: session.clone(),
            node: path.to_owned(),
        })
    }

    /// Raise the barrier (create its node); raising a raised barrier is Ok.
    ///
    /// # Errors
    /// Session errors.
    ///
    /// # Cancel safety
    /// Cancel safe: raising twice is harmless, so a dropped call can be
    /// repeated (it may or may not have raised it).
    pub async fn set(&self) -> Result<()> {
        self.session.ensure_dir(&self.node).await
    }

    /// Remove the barrier: every waiter proceeds. Removing a removed
    /// barrier is Ok.
    ///
    /// # Errors
    /// Session errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, it may or may not have been removed.
    pub async fn remove(&self) -> Result<()> {
        match self.session.delete(&self.node, None).await {
            Ok(()) | Err(Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Wait until the barrier is not raised (at once if it is not now).
    ///
    /// # Errors
    /// The session's end; backend errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn wait(&self) -> Result<()> {
        let mut attempt = 0;
        loop {
            match self.session.wait_gone(&self.node).await {
                Ok(()) => return Ok(()),
                Err(e) if e.is_retryable() => backoff(&mut attempt).await,
                Err(e) => return Err(e),
            }
        }
    }

    /// [`Barrier::wait`], giving up after `timeout`.
    ///
    /// # Errors
    /// [`Error::Timeout`]; otherwise as [`Barrier::wait`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait_timeout(&self, timeout: Duration) -> Result<()> {
        until(Some(crate::limits::deadline(timeout)?), self.wait()).await
    }
}

/// A double barrier for `n` participants at a directory path (the
/// ZooKeeper recipes'; Curator's `DistributedDoubleBarrier`), made by
/// [`DoubleBarrier::new`]`(session, path, n)`: [`DoubleBarrier::enter`]
/// waits until `n` participants are in, then [`Inside::leave`] until all
/// are out.
///
/// On the server each participant is an ephemeral-sequential node
/// `_c_<uuid>-member-<seq>` under the directory, and the first to see `n`
/// in creates the persistent node `ready`, which opens the barrier for
/// everyone (late arrivals enter at once). A participant whose session dies
/// counts as gone:
/// - before `n` are in, it no longer counts toward `n`: the others keep
///   waiting for another participant (until their timeout);
/// - after the barrier opened, it counts as having left: the others'
///   `leave` is not held up by it.
///
/// A double barrier's directory serves one round: use a fresh path (say,
/// with the round number) for the next.
///
/// ```
/// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
/// use coord_core::recipes::DoubleBarrier;
/// let barrier = DoubleBarrier::new(&session, "/barriers/round-1", 3)?;
/// let inside = barrier.enter().await?; // all 3 are in
/// // ... compute ...
/// inside.leave().await?; // all 3 are out
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct DoubleBarrier {
    session: Session,
    dir: String,
    n: usize,
}

impl DoubleBarrier {
    /// A double barrier for `n` participants at `path` (a directory).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or `/`;
    /// [`Error::InvalidArgument`] for `n == 0`.
    pub fn new(session: &Session, path: &str, n: usize) -> Result<Self> {
        path::validate_non_root(path)?;
        if n == 0 {
            return Err(Error::InvalidArgument(
                "a double barrier needs at least one participant".into(),
            ));
        }
        Ok(DoubleBarrier {
            session: session.clone(),
            dir: path.to_owned(),
            n,
        })
    }

    /// Enter, and wait until `n` participants have entered.
    ///
    /// # Errors
    /// The session's end; backend errors.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped while waiting, our participant node is deleted
    /// (in the background) and we do not count as entered.
    pub async fn enter(&self) -> Result<Inside> {
        self.enter_until(None).await
    }

    /// [`DoubleBarrier::enter`], giving up after `timeout`.
    ///
    /// # Errors
    /// [`Error::Timeout`] when fewer than `n` were in by then (our node is
    /// deleted first); otherwise as [`DoubleBarrier::enter`].
    ///
    /// # Cancel safety
    /// Cancel safe, as [`DoubleBarrier::enter`].
    pub async fn enter_timeout(&self, timeout: Duration) -> Result<Inside> {
        self.enter_until(Some(crate::limits::deadline(timeout)?))
            .await
    }

    async fn enter_until(&self, deadline: Option<(Instant, Duration)>) -> Result<Inside> {
        let prefix = path::join(&self.dir, &layout::protected(layout::BARRIER_MEMBER));
        let mut pending = PendingNode::spawn(
            &self.session,
            prefix,
            Vec::new(),
            CreateMode::EphemeralSequential,
        );
        let r = until(deadline, async {
            pending.created().await?;
            self.wait_children(|names| {
                names.iter().any(|n| n == READY) || participants(names) >= self.n
            })
            .await
        })
        .await;
        match r {
            Ok(names) => {
                if !names.iter().any(|n| n == READY) {
                    match self
                        .session
                        .create(&path::join(&self.dir, READY), &[], CreateMode::Persistent)
                        .await
                    {
                        Ok(_) | Err(Error::AlreadyExists { .. }) => {}
                        Err(e) => {
                            pending.remove().await;
                            return Err(e);
                        }
                    }
                }
                let node = pending.take().ok_or_else(|| {
                    Error::backend(self.session.backend(), "lost track of our barrier node")
                })?;
                Ok(Inside {
                    barrier: self.clone(),
                    held: HeldNode::new(self.session.clone(), node),
                })
            }
            Err(e) => {
                pending.remove().await;
                Err(e)
            }
        }
    }

    /// List the directory until `done(names)` holds; return those names.
    async fn wait_children(&self, done: impl Fn(&[String]) -> bool) -> Result<Vec<String>> {
        let mut attempt = 0;
        loop {
            let (children, changed) = list_watch_retrying(&self.session, &self.dir).await?;
            let names: Vec<String> = children.into_iter().map(|c| c.name).collect();
            if done(&names) {
                return Ok(names);
            }
            match changed.await {
                Ok(()) => {}
                Err(e) if e.is_retryable() => backoff(&mut attempt).await,
                Err(e) => return Err(e),
            }
        }
    }
}

fn participants(names: &[String]) -> usize {
    names.iter().filter(|n| n.as_str() != READY).count()
}

/// Inside a [`DoubleBarrier`]: call [`Inside::leave`] when done. Dropping
/// it leaves without waiting for the others.
#[must_use = "dropping it leaves the barrier without waiting for the others"]
#[derive(Debug)]
pub struct Inside {
    barrier: DoubleBarrier,
    held: HeldNode,
}

impl Inside {
    /// Our participant node.
    pub fn node_path(&self) -> &str {
        self.held.path()
    }

    /// Leave, and wait until every participant has left (or died).
    ///
    /// # Errors
    /// The session's end; backend errors.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped, we have left (or leave in the background); we
    /// just stop waiting for the others.
    pub async fn leave(self) -> Result<()> {
        self.leave_until(None).await
    }

    /// [`Inside::leave`], waiting at most `timeout` for the others.
    ///
    /// # Errors
    /// [`Error::Timeout`] when some are still in (we have left anyway);
    /// otherwise as [`Inside::leave`].
    ///
    /// # Cancel safety
    /// As [`Inside::leave`].
    pub async fn leave_timeout(self, timeout: Duration) -> Result<()> {
        self.leave_until(Some(crate::limits::deadline(timeout)?))
            .await
    }

    async fn leave_until(self, deadline: Option<(Instant, Duration)>) -> Result<()> {
        let barrier = self.barrier.clone();
        let node = self.held.path().to_owned();
        let mut res = self.held.discard().await;
        let mut attempt = 0;
        while matches!(&res, Err(e) if e.is_retryable()) {
            backoff(&mut attempt).await;
            res = delete_if_present(&barrier.session, &node).await;
        }
        res?;
        until(deadline, async {
            barrier
                .wait_children(|names| participants(names) == 0)
                .await?;
            Ok(())
        })
        .await
    }
}

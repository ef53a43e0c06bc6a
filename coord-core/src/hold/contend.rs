//! The queue of contenders behind every lock-like recipe (the ZooKeeper
//! recipes' `WriteLock`, Curator's `InterProcessMutex`, the ZooKeeper
//! paper's lock without herd effect):
//!
//! 1. create an ephemeral-sequential node `_c_<uuid>-<marker>` in the
//!    directory, and list the directory right behind it (pipelined);
//! 2. among the children with a sequence, find the nearest earlier one that
//!    blocks us; none: we hold it;
//! 3. otherwise wait until *that one node* is gone — never the directory,
//!    so a release wakes exactly the waiter behind it — then list again.
//!
//! The node is created by a [`PendingNode`] (its create finishes even if the
//! caller's future is dropped) and deleted if the caller gives up (timeout,
//! `try`, dropped future, error), so no attempt leaves a node.

use tokio::time::Instant;

use crate::backend::node::{Child, CreateMode};
use crate::error::{Error, Result};
use crate::hold::held::HeldNode;
use crate::layout;
use crate::machinery::pending::PendingNode;
use crate::machinery::retry::pause;
use crate::machinery::stats::Stats;
use crate::machinery::wait::Wait;
use crate::path;
use crate::session::Session;

/// The parts of one contender's request.
pub(crate) struct Request<'a> {
    pub session: &'a Session,
    pub dir: &'a str,
    pub marker: &'a str,
    pub data: &'a [u8],
    pub stats: &'a Stats,
    /// Whether an earlier child blocks this contender.
    pub blocked_by: &'a (dyn Fn(&Child) -> bool + Send + Sync),
    /// The handle's protection ids to lend again ([`layout::Ids`]); `None`:
    /// a fresh id every time.
    pub ids: Option<&'a layout::Ids>,
}

/// The nearest earlier child that blocks `me`, or `None` when `me` holds.
/// `Err` when `me` is not among the children (our node was deleted).
fn predecessor<'c>(
    children: &'c [Child],
    me_name: &str,
    me_seq: u64,
    blocked_by: &dyn Fn(&Child) -> bool,
) -> Option<Option<&'c Child>> {
    if !children.iter().any(|c| c.name == me_name) {
        return None;
    }
    Some(
        children
            .iter()
            .filter(|c| matches!(c.sequence, Some(s) if s < me_seq))
            .filter(|c| blocked_by(c))
            .max_by_key(|c| c.sequence),
    )
}

/// Wait until the node at `path` is gone, counted in `stats`: as waiting
/// once the watch is armed (so a test that sees N waiting knows a release
/// reaches all N), and as a wake-up when it fires. A node already gone
/// counts as neither. With `sequence` (from the listing that showed the
/// node), another node made at that name since counts as gone.
pub(crate) async fn wait_counted(
    session: &Session,
    stats: &Stats,
    path: &str,
    sequence: Option<u64>,
) -> Result<()> {
    let Some(gone) = session.watch_gone_listed(path, sequence).await? else {
        return Ok(());
    };
    let blocked = stats.blocked();
    gone.await?;
    drop(blocked);
    stats.woke();
    Ok(())
}

impl Request<'_> {
    /// Join the queue and wait per `wait`. `Ok(None)` only for `Wait::No`
    /// when blocked; `Err(Timeout)` when a deadline passes.
    pub(crate) async fn acquire(&self, wait: Wait) -> Result<Option<HeldNode>> {
        let id = self.ids.map_or_else(layout::fresh_id, layout::Ids::take);
        let prefix = path::join(self.dir, &layout::protected_with(id, self.marker));
        let mut pending = PendingNode::spawn(
            self.session,
            prefix,
            self.data.to_vec(),
            CreateMode::EphemeralSequential,
        );
        // List right behind the create: on a FIFO connection the listing
        // sees our node, saving a round trip; elsewhere we list again.
        // Bounded by the wait's deadline like every later step: a create
        // whose answer is held up (a partition) must not hold the caller
        // past its timeout. Given up, the pending node deletes itself once
        // the create resolves.
        // The create's request is issued already (PendingNode::spawn
        // polls it once): the listing follows it.
        let first_step = async { tokio::join!(pending.created(), self.session.children(self.dir)) };
        let Some((created, first)) = wait.within(first_step).await else {
            return Err(Error::Timeout(wait.length()));
        };
        let created = created?;
        let me_name = path::name(&created.path).to_owned();
        let me_path = created.path.clone();
        let me_seq = created.sequence.ok_or_else(|| {
            Error::backend(
                self.session.backend(),
                "a sequential create returned no sequence",
            )
        })?;
        let mut listing = first.ok();
        let mut attempt = 0;
        loop {
            let children = match listing.take() {
                Some(c) if c.iter().any(|c| c.name == me_name) => c,
                _ => match wait.within(self.session.children(self.dir)).await {
                    None => {
                        pending.remove().await;
                        return Err(Error::Timeout(wait.length()));
                    }
                    Some(Ok(c)) => c,
                    // A connection loss while queued: keep our place and
                    // wait for the connection (or our deadline, or the
                    // session's end, which the next read reports).
                    Some(Err(e)) if e.is_retryable() && !matches!(wait, Wait::No) => {
                        if !self.pause_within(wait, &mut attempt).await {
                            pending.remove().await;
                            return Err(Error::Timeout(wait.length()));
                        }
                        continue;
                    }
                    Some(Err(e)) => return Err(e),
                },
            };
            let Some(pred) = predecessor(&children, &me_name, me_seq, self.blocked_by) else {
                // Our node is gone: the session ended, or someone deleted it.
                if let Some(state_err) = self.session.state().end_error() {
                    return Err(state_err);
                }
                return Err(Error::LockLost { path: me_path });
            };
            let Some(pred) = pred else {
                let node = pending.take().ok_or_else(|| {
                    Error::backend(self.session.backend(), "lost track of our own node")
                })?;
                self.stats.acquired();
                let held = HeldNode::new(self.session.clone(), node);
                return Ok(Some(match self.ids {
                    Some(ids) => held.lending(ids, id),
                    None => held,
                }));
            };
            let pred_path = path::join(self.dir, &pred.name);
            let pred_seq = pred.sequence;
            match wait {
                Wait::No => {
                    pending.remove().await;
                    return Ok(None);
                }
                Wait::Forever => {
                    match wait_counted(self.session, self.stats, &pred_path, pred_seq).await {
                        Err(e) if e.is_retryable() => {
                            self.pause_within(wait, &mut attempt).await;
                        }
                        r => r?,
                    }
                }
                Wait::Until(deadline, d) => {
                    let waited = wait_counted(self.session, self.stats, &pred_path, pred_seq);
                    let in_time = match tokio::time::timeout_at(deadline, waited).await {
                        Ok(Err(e)) if e.is_retryable() => {
                            self.pause_within(wait, &mut attempt).await
                        }
                        Ok(r) => {
                            r?;
                            true
                        }
                        Err(_) => false,
                    };
                    if !in_time {
                        pending.remove().await;
                        return Err(Error::Timeout(d));
                    }
                }
            }
        }
    }

    /// After a connection loss: wait for the connection (or the next
    /// backoff step), but not past the wait's deadline. `false` when the
    /// deadline passed.
    async fn pause_within(&self, wait: Wait, attempt: &mut u32) -> bool {
        match wait {
            Wait::Until(deadline, _) => {
                tokio::time::timeout_at(deadline, pause(self.session, attempt))
                    .await
                    .is_ok()
                    && Instant::now() < deadline
            }
            _ => {
                pause(self.session, attempt).await;
                true
            }
        }
    }
}

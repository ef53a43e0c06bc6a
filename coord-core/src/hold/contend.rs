//! The queue of contenders behind every lock-like recipe (the ZooKeeper
//! recipes' `WriteLock`, Curator's `InterProcessMutex`, the ZooKeeper
//! paper's lock without herd effect):
//!
//! 1. create an ephemeral-sequential node `_c_<uuid>-<marker>` in the
//!    directory and learn where it stands: read by the create's own request
//!    where the backend can ([`Session::create_contender`]: etcd's Txn,
//!    PostgreSQL's function call, mem), else asked right behind the
//!    create (pipelined: the directory's first child, or without an
//!    ordered index its listing). When we are first,
//!    we hold it — the uncontended path, one round trip on a FIFO
//!    connection; when the create read our place, a contended arrival goes
//!    straight to step 3;
//! 2. otherwise ask where we stand ([`Session::place`]): gone (our session
//!    ended, or someone deleted our node), first (we hold it), or behind the
//!    nearest earlier child that blocks us — answered from the server's
//!    ordered index where it has one, so it costs O(log N), not a listing;
//! 3. wait until *that one node* is gone — never the directory, so a
//!    release wakes exactly the waiter behind it — then ask again (2).
//!
//! The node is created by a [`PendingNode`] (its create finishes even if the
//! caller's future is dropped) and deleted if the caller gives up (timeout,
//! `try`, dropped future, error), so no attempt leaves a node.

use tokio::time::Instant;

use crate::backend::node::Child;
use crate::backend::order::{self, Blockers, Place};
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
    /// Which earlier children this contender waits behind (`'static`: the
    /// create that reads its place may outlive the request, see
    /// [`PendingNode`]).
    pub blockers: Blockers<'static>,
    /// The handle's protection ids to lend again ([`layout::Ids`]); `None`:
    /// a fresh id every time.
    pub ids: Option<&'a layout::Ids>,
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
        let mut pending =
            PendingNode::spawn_contender(self.session, prefix, self.data.to_vec(), self.blockers);
        // A create that reads our place asks for nothing more. Otherwise
        // ask right behind the create: on a FIFO connection the answer sees
        // our node, so an uncontended acquire is one round trip; elsewhere
        // (or behind others) we ask where we stand. A backend with an
        // ordered index names the head; one without lists the directory
        // (what its `first_children` would do anyway), which answers where
        // we stand as well.
        // Bounded by the wait's deadline like every later step: a create
        // whose answer is held up (a partition) must not hold the caller
        // past its timeout. Given up, the pending node deletes itself once
        // the create resolves.
        // The create's request is issued already (PendingNode::spawn
        // polls it once): the question follows it.
        let placed = self.session.places_at_create();
        let ordered = self.session.orders_at_server();
        let look = async {
            if placed {
                Ok(Vec::new())
            } else if ordered {
                self.session.first_children(self.dir, 1).await
            } else {
                self.session.children(self.dir).await
            }
        };
        let Some((created, look)) = wait
            .within(async { tokio::join!(pending.created(), look) })
            .await
        else {
            return Err(Error::Timeout(wait.length()));
        };
        let created = created?;
        let me = Child::new(path::name(&created.path).to_owned(), created.sequence);
        let me_path = created.path.clone();
        if me.sequence.is_none() {
            return Err(Error::backend(
                self.session.backend(),
                "a sequential create returned no sequence",
            ));
        }
        let mut place = match look {
            _ if placed => pending.take_place(),
            Ok(head) if ordered => (head.first() == Some(&me)).then_some(Place::First),
            Ok(all) if all.contains(&me) => Some(order::place_in(&all, &me, self.blockers)),
            _ => None,
        };
        let mut attempt = 0;
        loop {
            let here = match place.take() {
                Some(p) => p,
                None => match wait
                    .within(self.session.place(self.dir, &me, self.blockers))
                    .await
                {
                    None => {
                        pending.remove().await;
                        return Err(Error::Timeout(wait.length()));
                    }
                    Some(Ok(p)) => p,
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
            let pred = match here {
                // Our node is gone: the session ended, or someone deleted it.
                Place::Gone => {
                    if let Some(state_err) = self.session.state().end_error() {
                        return Err(state_err);
                    }
                    return Err(Error::LockLost { path: me_path });
                }
                Place::First => {
                    let node = pending.take().ok_or_else(|| {
                        Error::backend(self.session.backend(), "lost track of our own node")
                    })?;
                    self.stats.acquired();
                    let held = HeldNode::new(self.session.clone(), node);
                    return Ok(Some(match self.ids {
                        Some(ids) => held.lending(ids, id),
                        None => held,
                    }));
                }
                Place::Behind(pred) => pred,
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

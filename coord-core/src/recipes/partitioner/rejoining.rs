//! [`RejoiningPartitioner`]: a set partition member on a [`Client`] that
//! joins again, and so re-splits, on each new session; made by
//! [`SetPartitioner::on_client`]`(..)?.join()`.

use std::collections::BTreeMap;

use tokio::sync::{mpsc, oneshot, watch};

use super::handle::{refuse_until_closed, Command, Handle};
use super::set::{Partitioner, SetPartitioner};
use super::state::{PartitionState, PartitionWatcher, Status};
use crate::backend::backoff::Backoff;
use crate::client::{Client, Generation};
use crate::error::{Error, Result};
use crate::telemetry::TARGET;

impl SetPartitioner<Client> {
    /// Member `member_id` of the partitioner at `path`, splitting `items`,
    /// on every session of `client` in turn: its
    /// [`join`](SetPartitioner::<Client>::join) makes a
    /// [`RejoiningPartitioner`]. The same checks and
    /// [`settle`](SetPartitioner::settle) as [`SetPartitioner::new`].
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path, or a member id or an item
    /// that is not one path segment (empty, with a `/`, …).
    pub fn on_client<I, S>(client: &Client, path: &str, member_id: &str, items: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::check(client.clone(), path, member_id, items)
    }

    /// Join the party on the client's live session and start splitting in
    /// a task of its own, which joins again on each next session; returns
    /// once the member has joined. Needs a tokio runtime.
    ///
    /// A member id already in the party is waited out, retried with
    /// backoff: after a partition, it is this member's own node from the
    /// session the server has not ended yet.
    ///
    /// # Errors
    /// [`Error::SessionClosed`] if the client is closed first; an error
    /// that retrying cannot help ([`Error::PermissionDenied`], …).
    ///
    /// # Cancel safety
    /// Cancel safe: dropped before it returns, the task stops and leaves
    /// no member node behind.
    pub async fn join(&self) -> Result<RejoiningPartitioner> {
        let (status_tx, status_rx) = watch::channel(Status::default());
        let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
        let (joined_tx, joined_rx) = oneshot::channel();
        let rejoiner = Rejoiner {
            settings: self.clone(),
            status: status_tx,
            losses: 0,
        };
        let task = tokio::spawn(rejoiner.run(cmd_rx, joined_tx));
        // Dropped from here on, the handle closes the task.
        let handle = RejoiningPartitioner {
            handle: Handle::new(status_rx, cmd_tx, task, &self.member),
        };
        match joined_rx.await {
            Ok(Ok(())) => Ok(handle),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Error::SessionClosed),
        }
    }
}

/// A member of a set partition that comes back: a [`Partitioner`] on the
/// live session of a [`Client`], made again on each next session; made by
/// [`SetPartitioner::on_client`]`(client, path, member_id, items)?.`[`join`](SetPartitioner::<Client>::join)`()`.
///
/// Everything [`Partitioner`] says holds within each session: the split,
/// a lock per item, `Release` acknowledged with
/// [`release`](RejoiningPartitioner::release) before a re-split. What a
/// session's end changes:
///
/// * **Re-established**: the membership, under the same member id, and
///   so the split: on the client's next session the member joins the
///   party again, splits the set with the members then present and takes
///   its share's locks afresh.
/// * **Never kept**: the items. An item is owned only while its lock is
///   held, and the lock went with the session: another member may own it
///   meanwhile. So the loss is reported, as [`PartitionState::Lost`]
///   (owning nothing), *before* the member joins on the next session, and
///   an item owned again comes with a new, larger
///   [`fencing_token`](RejoiningPartitioner::fencing_token). A
///   [`PartitionWatcher`] never skips a `Lost`, so a consumer always
///   learns to stop working on the old items before it is told of the new
///   ones.
///
/// States: `Allocating` → `Acquired(items)` → (`Release` →
/// [`release`](RejoiningPartitioner::release) → `Allocating` → …), and on
/// a loss `Lost` → `Allocating` → `Acquired(items)` on the next session.
/// A member whose node or lock was deleted under it while its session
/// lives is `Lost` too, and joins again on the same session after a
/// backoff. `Closed` (closed or dropped) and `Failed` (the client was
/// closed, or an error retrying cannot help) are final.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> coord_core::Result<()> {
/// use std::time::Duration;
/// use coord_core::recipes::{PartitionState, SetPartitioner};
/// use coord_core::ClientOptions;
///
/// let store = coord_mem::MemStore::new();
/// let client = store.client(Duration::from_secs(10), ClientOptions::default());
/// let worker = SetPartitioner::on_client(&client, "/partitions/queues", "worker-1", ["q1", "q2"])?
///     .join()
///     .await?;
/// assert_eq!(worker.wait_acquired().await?, ["q1", "q2"]);
/// let token = worker.fencing_token("q1").unwrap_or_default();
/// let mut states = worker.watch();
/// assert!(matches!(states.next().await, Some(PartitionState::Acquired(_))));
///
/// store.expire(&client.session().await?.id()); // the server ends the session
/// assert_eq!(states.next().await, Some(PartitionState::Lost)); // stop working on q1, q2
/// assert_eq!(worker.wait_acquired().await?, ["q1", "q2"]); // on the next session
/// assert!(worker.fencing_token("q1").unwrap_or_default() > token);
/// worker.close().await?;
/// client.close().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping a partitioner releases its items and leaves the party"]
#[derive(Debug)]
pub struct RejoiningPartitioner {
    handle: Handle,
}

impl RejoiningPartitioner {
    /// This member's id.
    pub fn member_id(&self) -> &str {
        self.handle.member_id()
    }

    /// The state now.
    pub fn state(&self) -> PartitionState {
        self.handle.state()
    }

    /// The items this member owns now, on the live session (see
    /// [`Partitioner::owned`]); none after a loss until it acquires again.
    pub fn owned(&self) -> Vec<String> {
        self.handle.owned()
    }

    /// The fencing token of an owned item: strictly larger for every later
    /// owner of the item, this member on a later session included.
    pub fn fencing_token(&self, item: &str) -> Option<u64> {
        self.handle.fencing_token(item)
    }

    /// How many times this member lost what it held ([`PartitionState::Lost`]).
    pub fn losses(&self) -> u64 {
        self.handle.losses()
    }

    /// Follow the state; see [`PartitionWatcher`].
    pub fn watch(&self) -> PartitionWatcher {
        self.handle.watch()
    }

    /// Wait until the state is [`PartitionState::Acquired`] and return the
    /// items owned; a loss meanwhile is waited through (the member joins
    /// again).
    ///
    /// # Errors
    /// [`Error::LockLost`] if the partitioner failed or was closed first.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn wait_acquired(&self) -> Result<Vec<String>> {
        self.handle.wait_acquired().await
    }

    /// Acknowledge [`PartitionState::Release`], as
    /// [`Partitioner::release`]: release every item owned, then split
    /// again. In another state it gives up what is owned, if anything.
    ///
    /// # Errors
    /// [`Error::LockLost`] if the partitioner has failed or is closed, or
    /// lost its session meanwhile; the error of releasing a lock.
    ///
    /// # Cancel safety
    /// Cancel safe in effect: once called, the release goes on in the
    /// partitioner's task even if this future is dropped.
    pub async fn release(&self) -> Result<()> {
        self.handle.release().await
    }

    /// Release every item and leave the party; no more rejoining. Dropping
    /// the partitioner does the same in the background.
    ///
    /// # Errors
    /// The error that made it fail ([`Error::SessionClosed`] once the
    /// client is closed), if it did; the error of releasing or leaving
    /// otherwise.
    ///
    /// # Cancel safety
    /// Cancel safe in effect: once called, the close goes on in the task.
    pub async fn close(self) -> Result<()> {
        self.handle.close().await
    }
}

/// How the task's rounds ended.
enum Ended {
    /// Closed by the owner, with the result of closing the member.
    Closed(Result<()>),
    /// Failed for good.
    Failed(Error),
}

/// How one step of a round ended.
enum Step<T> {
    Done(T),
    /// The session ended: go on with the client's next one.
    SessionEnded,
    Closed,
}

/// How following a session's member ended.
enum Forwarded {
    Lost,
    Closed,
}

/// The task's side.
struct Rejoiner {
    settings: SetPartitioner<Client>,
    status: watch::Sender<Status>,
    losses: u64,
}

impl Rejoiner {
    fn publish(&self, state: PartitionState, tokens: BTreeMap<String, u64>) {
        self.status.send_replace(Status {
            state,
            tokens,
            losses: self.losses,
        });
    }

    async fn run(
        mut self,
        mut cmds: mpsc::UnboundedReceiver<Command>,
        joined: oneshot::Sender<Result<()>>,
    ) -> Result<()> {
        let mut joined = Some(joined);
        match self.rounds(&mut cmds, &mut joined).await {
            Ended::Closed(r) => {
                self.publish(PartitionState::Closed, BTreeMap::new());
                r
            }
            Ended::Failed(e) => {
                let member = self.settings.member.clone();
                tracing::warn!(target: TARGET, member = member.as_str(), error = %e, "rejoining set partitioner failed");
                self.publish(PartitionState::Failed, BTreeMap::new());
                let e = match joined.take() {
                    // `join` is still waiting: it returns the error.
                    Some(j) => {
                        let _ = j.send(Err(e));
                        Error::LockLost {
                            path: member.clone(),
                        }
                    }
                    None => e,
                };
                // Answer release() with the failure until closed.
                refuse_until_closed(&mut cmds, &member).await;
                Err(e)
            }
        }
    }

    /// Join on each session in turn and follow the member there, until
    /// closed or failed.
    async fn rounds(
        &mut self,
        cmds: &mut mpsc::UnboundedReceiver<Command>,
        joined: &mut Option<oneshot::Sender<Result<()>>>,
    ) -> Ended {
        let client = self.settings.on.clone();
        let mut after = 0;
        loop {
            let g = tokio::select! {
                biased;
                c = cmds.recv() => match c {
                    Some(Command::Release(tx)) => {
                        let _ = tx.send(Ok(()));
                        continue;
                    }
                    None | Some(Command::Close) => return Ended::Closed(Ok(())),
                },
                g = client.next_session(after) => match g {
                    Ok(g) => g,
                    Err(e) => return Ended::Failed(e),
                },
            };
            let member = match self.join_on(&g, cmds).await {
                Ok(Step::Done(p)) => p,
                Ok(Step::SessionEnded) => {
                    after = g.number;
                    continue;
                }
                Ok(Step::Closed) => return Ended::Closed(Ok(())),
                Err(e) => return Ended::Failed(e),
            };
            if let Some(j) = joined.take() {
                let _ = j.send(Ok(()));
            }
            match self.forward(&member, cmds).await {
                Forwarded::Closed => return Ended::Closed(member.close().await),
                Forwarded::Lost => {
                    // Its task is over (Failed): this returns why.
                    let why = member.close().await.err();
                    if client.is_closed() {
                        return Ended::Failed(Error::SessionClosed);
                    }
                    // Reported before anything is taken again.
                    self.losses += 1;
                    self.publish(PartitionState::Lost, BTreeMap::new());
                    tracing::info!(
                        target: TARGET,
                        member = self.settings.member.as_str(),
                        generation = g.number,
                        error = ?why,
                        "rejoining set partitioner lost its membership; joining again"
                    );
                    if g.session.state().is_terminal() {
                        after = g.number;
                    } else {
                        // The session lives (a node was deleted under the
                        // member): join again on it, after a pause.
                        after = g.number - 1;
                        let mut attempt = 0;
                        if self.pause(cmds, &mut attempt).await {
                            return Ended::Closed(Ok(()));
                        }
                    }
                }
            }
        }
    }

    /// Join the party on `g`'s session, retrying what may pass: a lost
    /// connection, or the member id still taken (by this member's node of
    /// a session the server has not ended yet).
    async fn join_on(
        &self,
        g: &Generation,
        cmds: &mut mpsc::UnboundedReceiver<Command>,
    ) -> Result<Step<Partitioner>> {
        let settings = SetPartitioner {
            on: g.session.clone(),
            dir: self.settings.dir.clone(),
            member: self.settings.member.clone(),
            items: self.settings.items.clone(),
            settle: self.settings.settle,
        };
        let mut attempt = 0;
        loop {
            let r = tokio::select! {
                biased;
                c = cmds.recv() => match c {
                    // Nothing owned to give back.
                    Some(Command::Release(tx)) => {
                        let _ = tx.send(Ok(()));
                        continue;
                    }
                    None | Some(Command::Close) => return Ok(Step::Closed),
                },
                r = settings.join() => r,
            };
            match r {
                Ok(p) => return Ok(Step::Done(p)),
                Err(e) if e.is_session_end() || g.session.state().is_terminal() => {
                    return Ok(Step::SessionEnded)
                }
                Err(e) if e.is_retryable() || matches!(e, Error::AlreadyExists { .. }) => {
                    tracing::debug!(target: TARGET, member = self.settings.member.as_str(), error = %e, "joining the partition again, retrying");
                    if self.pause(cmds, &mut attempt).await {
                        return Ok(Step::Closed);
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Publish `member`'s states as this partitioner's, and pass on
    /// releases, until it is over or this one is closed.
    async fn forward(
        &self,
        member: &Partitioner,
        cmds: &mut mpsc::UnboundedReceiver<Command>,
    ) -> Forwarded {
        let mut rx = member.status();
        loop {
            let now = rx.borrow_and_update().clone();
            match now.state {
                PartitionState::Failed | PartitionState::Closed => return Forwarded::Lost,
                state => self.publish(state, now.tokens),
            }
            tokio::select! {
                changed = rx.changed() => {
                    if changed.is_err() {
                        return Forwarded::Lost;
                    }
                }
                c = cmds.recv() => match c {
                    Some(Command::Release(tx)) => {
                        let _ = tx.send(member.release().await);
                    }
                    None | Some(Command::Close) => return Forwarded::Closed,
                },
            }
        }
    }

    /// The backoff's next pause; `true` if closed meanwhile (a release
    /// asked meanwhile is answered: nothing is owned).
    async fn pause(&self, cmds: &mut mpsc::UnboundedReceiver<Command>, attempt: &mut u32) -> bool {
        let sleep = Backoff::RECIPES.sleep(attempt);
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                () = &mut sleep => return false,
                c = cmds.recv() => match c {
                    Some(Command::Release(tx)) => {
                        let _ = tx.send(Ok(()));
                    }
                    None | Some(Command::Close) => return true,
                },
            }
        }
    }
}

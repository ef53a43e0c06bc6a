//! A set partitioner on one session (`SetPartitioner`, `Partitioner`):
//! group members split a set of work items, one owner each.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use super::handle::{refuse_until_closed, Command, Handle};
use super::state::{PartitionState, PartitionWatcher, Status};
use crate::error::{Error, Result};
use crate::layout;
use crate::path;
use crate::recipes::group::{Group, GroupWatcher, Membership};
use crate::recipes::lock::exclusive::Lock;
use crate::recipes::lock::guard::LockGuard;
use crate::session::Session;

/// The members' split of the items: kazoo's default. `items` and `members`
/// need not be sorted; returns `member`'s share, sorted, or nothing if it
/// is not among `members`.
pub(crate) fn split(items: &[String], members: &[String], member: &str) -> Vec<String> {
    let items: BTreeSet<&String> = items.iter().collect();
    let members: BTreeSet<&str> = members.iter().map(String::as_str).collect();
    let Some(i) = members.iter().position(|m| *m == member) else {
        return Vec::new();
    };
    let n = members.len();
    items.into_iter().skip(i).step_by(n).cloned().collect()
}

/// The way into a set partition: a member's settings, checked before any
/// I/O ([`SetPartitioner::new`], then [`SetPartitioner::settle`] if
/// wanted); [`SetPartitioner::join`] starts the member, a [`Partitioner`].
/// On a [`Client`](crate::Client) instead of a session,
/// [`SetPartitioner::on_client`], whose `join` starts a
/// [`RejoiningPartitioner`](crate::recipes::RejoiningPartitioner): the same
/// member, made again on each new session.
#[derive(Debug, Clone)]
pub struct SetPartitioner<On = Session> {
    /// What it runs on: a [`Session`], or a
    /// [`Client`](crate::Client) ([`SetPartitioner::on_client`]).
    pub(crate) on: On,
    pub(crate) dir: String,
    pub(crate) member: String,
    pub(crate) items: Vec<String>,
    pub(crate) settle: Duration,
}

impl<On> SetPartitioner<On> {
    /// The settings, checked before any I/O, of member `member_id` at
    /// `path` splitting `items`, to run on `on`.
    pub(crate) fn check<I, S>(on: On, path: &str, member_id: &str, items: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        path::validate_non_root(path)?;
        path::join_segment(&path::join(path, layout::PARTITIONER_PARTY), member_id)?;
        let locks = path::join(path, layout::PARTITIONER_LOCKS);
        let items: BTreeSet<String> = items.into_iter().map(Into::into).collect();
        for item in &items {
            path::join_segment(&locks, item)?;
        }
        Ok(SetPartitioner {
            on,
            dir: path.to_owned(),
            member: member_id.to_owned(),
            items: items.into_iter().collect(),
            settle: Duration::ZERO,
        })
    }

    /// Wait until the membership has not changed for `settle` before each
    /// split (kazoo's `time_boundary`, default zero here): fewer re-splits
    /// when members arrive one after another.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a duration over
    /// [`crate::limits::MAX_TIMEOUT`].
    pub fn settle(mut self, settle: Duration) -> Result<Self> {
        crate::limits::check_timeout(settle)?;
        self.settle = settle;
        Ok(self)
    }
}

impl SetPartitioner {
    /// Member `member_id` of the partitioner at `path`, splitting `items`
    /// (duplicates count once), on `session`. Every member must be given
    /// the same items. [`SetPartitioner::on_client`] makes one that joins
    /// again on each new session of a client.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path, or a member id or an item
    /// that is not one path segment (empty, with a `/`, …).
    pub fn new<I, S>(session: &Session, path: &str, member_id: &str, items: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::check(session.clone(), path, member_id, items)
    }

    /// Join the party and start splitting in a task of its own. Needs a
    /// tokio runtime.
    ///
    /// # Errors
    /// [`Error::AlreadyExists`] when a live member has this id; session
    /// errors. Errors met later end the partitioner with
    /// [`PartitionState::Failed`].
    ///
    /// # Cancel safety
    /// Cancel safe: dropped before it returns, no member node is left
    /// behind and no task runs.
    pub async fn join(&self) -> Result<Partitioner> {
        let party = Group::new(&self.on, &path::join(&self.dir, layout::PARTITIONER_PARTY))?;
        let membership = party.join_as(&self.member, b"").await?;
        let (state_tx, state_rx) = watch::channel(Status::default());
        let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
        let member = Member {
            session: self.on.clone(),
            locks: path::join(&self.dir, layout::PARTITIONER_LOCKS),
            id: self.member.clone(),
            items: self.items.clone(),
            settle: self.settle,
            watcher: party.watch(),
            membership,
            held: BTreeMap::new(),
            status: state_tx,
        };
        let task = tokio::spawn(member.run(cmd_rx));
        Ok(Partitioner {
            handle: Handle::new(state_rx, cmd_tx, task, &self.member),
        })
    }
}

/// One member of a set partition, running kazoo's `SetPartitioner` state
/// machine in a task; made by [`SetPartitioner::new`]`(session, path,
/// member_id, items)?.`[`join`](SetPartitioner::join)`()`.
///
/// A set partitioner (kazoo's `SetPartitioner`, tooz's partitioner): the
/// members of a group split a set of work items so that each item has one
/// owner, and re-split it when members come and go.
///
/// Layout under the partitioner's directory `<path>`:
/// - `<path>/party/<member id>`: each member's ephemeral node (a
///   [`Group`] joined by name), so a member whose session ends leaves;
/// - `<path>/locks/<item>`: one exclusive [`Lock`] per item (kazoo's
///   layout too, though kazoo's party nodes are named differently, so the
///   two do not share a partition).
///
/// # The guarantee: no item has two owners at once
///
/// A member *owns* an item only while it holds that item's lock: it takes
/// every lock of its share before it reports [`PartitionState::Acquired`],
/// and gives them up only after the user has acknowledged
/// [`PartitionState::Release`] with [`Partitioner::release`] (or closed
/// it). The lock is exclusive, so two members of live sessions never hold
/// one item's lock at once, whatever their views of the membership; views
/// that disagree (one member has seen a join, another not yet) only make a
/// member wait for a lock, never share one. While it takes its locks, a
/// member watches the membership: a change makes it drop what it took and
/// split again, so members with crossed views cannot deadlock.
///
/// A member whose session ends loses its locks with it; it reports
/// [`PartitionState::Failed`] once its client learns of it, no later than
/// the session's lease deadline, which is before the server can end the
/// session in the normal course. An operator (or a test) that ends a session
/// on the server directly skips that margin: fence your writes with the
/// item's token ([`Partitioner::fencing_token`]) when that matters.
///
/// # The split
///
/// kazoo's default: items sorted, members sorted by id, member `i` of `n`
/// takes items `i, i + n, i + 2n, …`. Every member computes it from the same
/// sorted lists, so once the membership is stable all agree.
///
/// # States (kazoo's `PartitionState`)
///
/// `Allocating` → `Acquired(items)` → (membership changes) `Release` → the
/// user calls [`Partitioner::release`] → `Allocating` → …; `Failed` is
/// final (the session ended, or a lock was deleted under the member):
/// start a new partitioner on a new session — or make the member with
/// [`SetPartitioner::on_client`], a
/// [`RejoiningPartitioner`](crate::recipes::RejoiningPartitioner) that does
/// so by itself; so is `Closed`.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> coord_core::Result<()> {
/// # let store = coord_mem::MemStore::new();
/// # let session = store.open();
/// use coord_core::recipes::SetPartitioner;
///
/// let items = ["q1", "q2", "q3"];
/// let worker = SetPartitioner::new(&session, "/partitions/queues", "worker-1", items)?
///     .join()
///     .await?;
/// let mine = worker.wait_acquired().await?; // alone: all three
/// assert_eq!(mine, ["q1", "q2", "q3"]);
/// assert_eq!(worker.owned(), mine);
/// // On `PartitionState::Release`, stop working on them and call
/// // `worker.release().await?`; it then splits again.
/// worker.close().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping a partitioner releases its items and leaves the party"]
#[derive(Debug)]
pub struct Partitioner {
    handle: Handle,
}

impl Partitioner {
    /// This member's id.
    pub fn member_id(&self) -> &str {
        self.handle.member_id()
    }

    /// The state now.
    pub fn state(&self) -> PartitionState {
        self.handle.state()
    }

    /// The items this member owns now: its share while
    /// [`PartitionState::Acquired`] and, until [`Partitioner::release`] is
    /// called, while [`PartitionState::Release`]; none otherwise.
    pub fn owned(&self) -> Vec<String> {
        self.handle.owned()
    }

    /// The fencing token of an owned item (its lock's token): strictly
    /// larger for every later owner of the item.
    pub fn fencing_token(&self, item: &str) -> Option<u64> {
        self.handle.fencing_token(item)
    }

    /// The channel of its status, for a partitioner that follows this one.
    pub(crate) fn status(&self) -> watch::Receiver<Status> {
        self.handle.status()
    }

    /// Follow the state; see [`PartitionWatcher`].
    pub fn watch(&self) -> PartitionWatcher {
        self.handle.watch()
    }

    /// Wait until the state is [`PartitionState::Acquired`] and return the
    /// items owned (kazoo's `wait_for_acquire`).
    ///
    /// # Errors
    /// [`Error::LockLost`] if the partitioner failed or was closed first.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn wait_acquired(&self) -> Result<Vec<String>> {
        self.handle.wait_acquired().await
    }

    /// Acknowledge [`PartitionState::Release`] (kazoo's `release_set`):
    /// release every item owned, then split again (`Allocating`). Called
    /// in another state, it gives up the items owned (if any) and splits
    /// again all the same. Stop working on the items before calling it.
    ///
    /// # Errors
    /// [`Error::LockLost`] if the partitioner has failed or is closed; the
    /// error of releasing a lock (the partitioner then fails).
    ///
    /// # Cancel safety
    /// Cancel safe in effect: once called, the release goes on in the
    /// partitioner's task even if this future is dropped.
    pub async fn release(&self) -> Result<()> {
        self.handle.release().await
    }

    /// Release every item and leave the party (kazoo's `finish`). Dropping
    /// the partitioner does the same in the background.
    ///
    /// # Errors
    /// The error that made the partitioner fail, if it did; the error of
    /// releasing or leaving otherwise.
    ///
    /// # Cancel safety
    /// Cancel safe in effect: once called, the close goes on in the task.
    pub async fn close(self) -> Result<()> {
        self.handle.close().await
    }
}

/// Why a wait of the task ended.
enum Wake {
    Members(Result<Vec<String>>),
    Command(Option<Command>),
    Lost(Error),
    Locked(Result<(String, LockGuard)>),
}

/// The task's side: the member, its locks, and what it publishes.
struct Member {
    session: Session,
    locks: String,
    id: String,
    items: Vec<String>,
    settle: Duration,
    watcher: GroupWatcher,
    membership: Membership,
    held: BTreeMap<String, LockGuard>,
    status: watch::Sender<Status>,
}

/// Resolve with the first of `held`'s locks to be lost; never if none.
async fn first_lost(held: &BTreeMap<String, LockGuard>) -> Error {
    let mut waits: Vec<Pin<Box<dyn Future<Output = Error> + Send + '_>>> =
        held.values().map(|g| Box::pin(g.lost()) as _).collect();
    if waits.is_empty() {
        return std::future::pending().await;
    }
    std::future::poll_fn(|cx| {
        for w in waits.iter_mut() {
            if let Poll::Ready(e) = w.as_mut().poll(cx) {
                return Poll::Ready(e);
            }
        }
        Poll::Pending
    })
    .await
}

/// The members after the next change; the watcher's error ends the task,
/// so it is never read past its end (`None`, reported as the session's).
async fn next_members(watcher: &mut GroupWatcher) -> Result<Vec<String>> {
    let change = watcher.next().await.unwrap_or(Err(Error::SessionClosed))?;
    Ok(change.members.into_iter().map(|m| m.name).collect())
}

impl Member {
    fn publish(&self, state: PartitionState) {
        let tokens = self
            .held
            .iter()
            .map(|(k, g)| (k.clone(), g.fencing_token()))
            .collect();
        self.status.send_replace(Status {
            state,
            tokens,
            losses: 0,
        });
    }

    /// Release every held lock; the first error, after trying them all.
    async fn release_all(&mut self) -> Result<()> {
        let mut first = Ok(());
        for (_, guard) in std::mem::take(&mut self.held) {
            if let Err(e) = guard.release().await {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }

    async fn run(mut self, mut cmds: mpsc::UnboundedReceiver<Command>) -> Result<()> {
        let r = self.cycle(&mut cmds).await;
        match r {
            // Closed: let go of everything, then leave.
            Ok(()) => {
                let released = self.release_all().await;
                self.publish(PartitionState::Closed);
                let left = self.membership.leave().await;
                released.and(left)
            }
            Err(e) => {
                tracing::warn!(target: crate::telemetry::TARGET, member = self.id.as_str(), error = %e, "set partitioner failed");
                // Dropped guards release in the background (the session's
                // end is the backstop); we own nothing from here on.
                self.held.clear();
                self.publish(PartitionState::Failed);
                // Answer release() with the failure until closed.
                refuse_until_closed(&mut cmds, &self.id).await;
                Err(e)
            }
        }
    }

    /// Allocate, hold, release, again, until closed (`Ok`) or failed.
    async fn cycle(&mut self, cmds: &mut mpsc::UnboundedReceiver<Command>) -> Result<()> {
        let mut members = next_members(&mut self.watcher).await?;
        loop {
            // ALLOCATING: settle, then take the locks of our share.
            self.publish(PartitionState::Allocating);
            if !self.settle.is_zero() {
                while let Ok(m) =
                    tokio::time::timeout(self.settle, next_members(&mut self.watcher)).await
                {
                    members = m?;
                }
            }
            if !members.contains(&self.id) {
                // Our node is gone (or not listed yet): wait for a change.
                match self.wait(cmds, None).await? {
                    Wake::Members(m) => members = m?,
                    Wake::Command(None | Some(Command::Close)) => return Ok(()),
                    Wake::Command(Some(Command::Release(tx))) => {
                        let _ = tx.send(Ok(()));
                    }
                    Wake::Lost(e) => return Err(e),
                    Wake::Locked(_) => {}
                }
                continue;
            }
            let share = split(&self.items, &members, &self.id);
            let mut taking = JoinSet::new();
            for item in &share {
                let lock = Lock::new(&self.session, &path::join(&self.locks, item))?;
                let item = item.clone();
                taking.spawn(async move { lock.acquire().await.map(|g| (item, g)) });
            }
            let mut changed = false;
            while !taking.is_empty() {
                match self.wait(cmds, Some(&mut taking)).await? {
                    Wake::Locked(Ok((item, guard))) => {
                        self.held.insert(item, guard);
                    }
                    Wake::Locked(Err(e)) => return Err(e),
                    Wake::Members(m) => {
                        members = m?;
                        changed = true;
                        break;
                    }
                    Wake::Command(None | Some(Command::Close)) => return Ok(()),
                    Wake::Command(Some(Command::Release(tx))) => {
                        // Nothing acquired yet to hand back: split again.
                        changed = true;
                        let _ = tx.send(Ok(()));
                        break;
                    }
                    Wake::Lost(e) => return Err(e),
                }
            }
            if changed {
                // Abort: the pending acquires are dropped (cancel safe, no
                // node left), the locks taken are released.
                drop(taking);
                self.release_all().await?;
                continue;
            }
            // ACQUIRED until the membership changes.
            self.publish(PartitionState::Acquired(share));
            let ack = loop {
                match self.wait(cmds, None).await? {
                    Wake::Members(m) => {
                        members = m?;
                        break None;
                    }
                    Wake::Command(None | Some(Command::Close)) => return Ok(()),
                    Wake::Command(Some(Command::Release(tx))) => break Some(tx),
                    Wake::Lost(e) => return Err(e),
                    Wake::Locked(_) => {}
                }
            };
            let ack = match ack {
                Some(tx) => tx,
                None => {
                    // RELEASE: the items stay ours until the user says so.
                    self.publish(PartitionState::Release);
                    loop {
                        match self.wait(cmds, None).await? {
                            Wake::Members(m) => members = m?,
                            Wake::Command(None | Some(Command::Close)) => return Ok(()),
                            Wake::Command(Some(Command::Release(tx))) => break tx,
                            Wake::Lost(e) => return Err(e),
                            Wake::Locked(_) => {}
                        }
                    }
                }
            };
            if let Err(e) = self.release_all().await {
                // Typically the session ended under us: the caller of
                // `release` learns why, the partitioner fails.
                let _ = ack.send(Err(e));
                return Err(Error::LockLost {
                    path: self.id.clone(),
                });
            }
            let _ = ack.send(Ok(()));
        }
    }

    /// Wait for the next thing that matters: a membership change, a
    /// command, a hold lost (membership or a lock), or, when `taking`, the
    /// next lock taken.
    async fn wait(
        &mut self,
        cmds: &mut mpsc::UnboundedReceiver<Command>,
        taking: Option<&mut JoinSet<Result<(String, LockGuard)>>>,
    ) -> Result<Wake> {
        let backend = self.session.backend();
        let locked = async {
            match taking {
                Some(t) => match t.join_next().await {
                    Some(r) => r.map_err(|e| Error::backend(backend, e))?,
                    None => std::future::pending().await,
                },
                None => std::future::pending().await,
            }
        };
        let wake = tokio::select! {
            m = next_members(&mut self.watcher) => Wake::Members(m),
            c = cmds.recv() => Wake::Command(c),
            e = self.membership.lost() => Wake::Lost(e),
            e = first_lost(&self.held) => Wake::Lost(e),
            r = locked => Wake::Locked(r),
        };
        Ok(wake)
    }
}

//! [`Election`]: campaigning, reading the leader, and following it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::backend::watch::Watch;
use crate::error::{Error, Result};
use crate::hold::contenders::{self, Contender};
use crate::machinery::retry::{first_retrying, list_watch_retrying, settle_watch};
use crate::machinery::stats::Stats;
use crate::machinery::stream::{resumable_stream, Advance, Resumable};
use crate::path;
use crate::recipes::election::campaign::{Candidate, ElectionLayout};
use crate::recipes::election::leadership::Leadership;
use crate::recipes::election::participant::Participant;
use crate::session::Session;

/// A leader election at a directory path (etcd's `Election`, the ZooKeeper
/// recipes' `LeaderElectionSupport`, Curator's `LeaderLatch`).
///
/// One way in, [`Election::new`]`(session, path)`, then one of four ways to
/// take part, each offering a value (a host name, say) that anyone can read
/// back as the leader's:
/// - [`campaign`](Election::campaign) waits until elected and returns a
///   [`Leadership`] guard (fencing token, guarded writes, `lost()`,
///   `resign()`), as etcd's `Campaign`: for code that leads for a while,
///   then resigns;
/// - `lead` ([`LeaderElectionExt::lead`](crate::prelude::LeaderElectionExt::lead),
///   with `use coord_core::prelude::*`) campaigns, runs a body as leader and
///   resigns, dropping the body if leadership is lost: for leader work that
///   is one async block;
/// - [`participate`](Election::participate) starts a [`Participant`], a task
///   running `LeaderElectionSupport`'s state machine that stays in the
///   election and delivers its events (`START`, `OFFER_*`, `DETERMINE_*`,
///   `READY_*`, `ELECTED_*`, `FAILED`, `STOP_*`) in order: to react to each
///   step without blocking on the election;
/// - [`latch`](Election::latch) starts a [`LeaderLatch`](crate::recipes::LeaderLatch), Curator's latch
///   over a participant (`has_leadership`, `await_leadership`, `IsLeader` /
///   `NotLeader`): to ask "do I lead now?" from anywhere.
///
/// Anyone, taking part or not, reads the leader ([`Election::leader`]),
/// lists the candidates ([`Election::participants`]) and follows leader
/// changes ([`Election::observe`]).
///
/// # On the server
/// Each offer is an ephemeral-sequential node `_c_<uuid>-latch-<seq>` under
/// the election's directory, the offered value as its data. The live offer
/// with the lowest sequence leads; every other waits on its immediate
/// predecessor only, so a leader's departure wakes one participant. An offer
/// dies with its session, so a leader whose process dies is replaced.
///
/// # Guarantees
/// Every leader's fencing token (its offer's stamp) is strictly larger than
/// every earlier leader's of the election: pass it to the resources the
/// leader writes, or write through its fence, so a stale leader (one cut
/// off from the server that has not yet learned its session ended) is
/// refused. A campaign dropped before it wins withdraws its offer; a
/// dropped guard, participant or latch withdraws it in the background (the
/// session's end is the backstop).
///
/// # Sharing the election
/// Any child with a sequence counts as an offer, whatever its name. The
/// default names are Curator `LeaderLatch`'s, so Curator latches and kazoo's
/// `Election` (with `extra_lock_patterns=("-latch-",)`) share the election
/// on ZooKeeper; [`Election::with_layout`] takes `LeaderSelector`'s names
/// instead ([`ElectionLayout`]). On etcd every key under the directory is
/// ordered by create revision, its value the proposal, so `etcdctl elect`
/// processes take part too.
///
/// ```
/// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
/// use coord_core::recipes::Election;
/// let election = Election::new(&session, "/elections/scheduler")?;
/// let leadership = election.campaign(b"host-a").await?;
/// println!("leading with fencing token {}", leadership.fencing_token());
/// leadership.resign().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Election {
    session: Session,
    dir: String,
    stats: Stats,
    layout: ElectionLayout,
}

/// The current leader as read from the server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Leader {
    /// The leader's offer node (full path).
    pub node: String,
    /// The value the leader offered with (the node's data).
    pub value: Vec<u8>,
    /// The leader's fencing token (its node's stamp).
    pub token: u64,
}

impl Election {
    /// An election at `path` (a directory; it is made on first use).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or `/`.
    pub fn new(session: &Session, path: &str) -> Result<Self> {
        path::validate_non_root(path)?;
        Ok(Election {
            session: session.clone(),
            dir: path.to_owned(),
            stats: Stats::new(),
            layout: ElectionLayout::default(),
        })
    }

    /// Name this handle's offers as `layout` says (default
    /// [`ElectionLayout::LeaderLatch`]): choose the peer that shares the
    /// election on ZooKeeper. Offers of either layout order correctly among
    /// coord participants.
    pub fn with_layout(mut self, layout: ElectionLayout) -> Self {
        self.layout = layout;
        self
    }

    /// The layout this handle's offers take.
    pub fn layout(&self) -> ElectionLayout {
        self.layout
    }

    /// Count into `stats` (shared with other handles).
    #[doc(hidden)]
    pub fn with_stats(mut self, stats: Stats) -> Self {
        self.stats = stats;
        self
    }

    /// This handle's counters: `wakeups` counts a waiting participant's
    /// wake-ups, `acquisitions` its elections.
    #[doc(hidden)]
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The election's directory.
    pub fn path(&self) -> &str {
        &self.dir
    }

    /// The session this election runs in.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Offer `value` and wait until this offer leads. `value` is any bytes
    /// (`&str`, `String`, `&[u8]`, `Vec<u8>`, `b"…"`), as every recipe's
    /// data argument; the [`LeaderElection`](crate::prelude::LeaderElection)
    /// trait's `campaign` takes `&[u8]` so that it stays usable as
    /// `dyn LeaderElection`, and this method forwards to the same code.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a value over the data limit; the
    /// session's end; [`Error::LockLost`] if our offer was deleted by
    /// someone else while waiting; backend errors. Connection drops while
    /// waiting are retried.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped at any point, the offer is withdrawn (deleted
    /// in the background) and nothing is held.
    pub async fn campaign(&self, value: impl AsRef<[u8]>) -> Result<Leadership> {
        self.campaign_bytes(value.as_ref()).await
    }

    /// [`Election::campaign`] on the bytes themselves: one copy of the code
    /// whatever the argument's type.
    async fn campaign_bytes(&self, value: &[u8]) -> Result<Leadership> {
        path::validate_data(value)?;
        let slot = Arc::new(Mutex::new(None));
        let held = self.candidate().campaign(value, &mut |_| {}, &slot).await?;
        self.stats.acquired();
        Ok(Leadership::from_held(held, value.to_vec()))
    }

    /// [`Election::campaign`], giving up after `timeout`.
    ///
    /// # Errors
    /// [`Error::Timeout`] when it runs out (the offer is withdrawn);
    /// [`Error::InvalidArgument`] for a timeout over
    /// [`crate::limits::MAX_TIMEOUT`]; otherwise as [`Election::campaign`].
    ///
    /// # Cancel safety
    /// Cancel safe, as [`Election::campaign`].
    pub async fn campaign_timeout(
        &self,
        value: impl AsRef<[u8]>,
        timeout: Duration,
    ) -> Result<Leadership> {
        crate::limits::check_timeout(timeout)?;
        match tokio::time::timeout(timeout, self.campaign_bytes(value.as_ref())).await {
            Ok(r) => r,
            Err(_) => Err(Error::Timeout(timeout)),
        }
    }

    /// Start a participant that runs the ZooKeeper recipes'
    /// `LeaderElectionSupport` state machine in a task of its own, offering
    /// `value` (any bytes, as [`Election::campaign`]'s); see [`Participant`]
    /// for its events. Needs a tokio runtime.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a value over the data limit. Errors
    /// met later end the participant with [`ElectionEvent::Failed`](crate::recipes::ElectionEvent::Failed).
    ///
    /// # Panics
    /// Outside a tokio runtime (the participant is a task).
    pub fn participate(&self, value: impl AsRef<[u8]>) -> Result<Participant> {
        let value = value.as_ref();
        path::validate_data(value)?;
        Ok(Participant::start(
            self.session.clone(),
            self.dir.clone(),
            self.stats.clone(),
            self.layout,
            value.to_vec(),
        ))
    }

    /// The current leader: the live offer with the lowest sequence, or
    /// `None` when there is no offer.
    ///
    /// # Errors
    /// The session's errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn leader(&self) -> Result<Option<Leader>> {
        loop {
            // Children with a sequence are listed first: the head is the
            // leader's offer, if any (read from the server's ordered index
            // where it has one, not a listing).
            let head = first_retrying(&self.session, &self.dir, 1).await?;
            let Some(first) = head.iter().find(|c| c.sequence.is_some()) else {
                return Ok(None);
            };
            let node = path::join(&self.dir, &first.name);
            if let Some(n) = self.session.get(&node).await? {
                return Ok(Some(Leader {
                    node,
                    value: n.data,
                    token: n.stat.stamp,
                }));
            }
            // It left between the listing and the read: look again.
        }
    }

    /// Every candidate in order: the leader first (holding), then the
    /// waiting ones, each with the value it offered.
    ///
    /// # Errors
    /// The session's errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn participants(&self) -> Result<Vec<Contender>> {
        contenders::list(&self.session, &self.dir, &contenders::exclusive).await
    }

    /// Follow leader changes, participant or not; see [`LeaderObserver`].
    pub fn observe(&self) -> LeaderObserver {
        LeaderObserver(Resumable::new(Follow {
            election: self.clone(),
            last: None,
            watch: None,
        }))
    }

    /// This election's side of the offer-and-wait loop.
    fn candidate(&self) -> Candidate<'_> {
        Candidate {
            session: &self.session,
            dir: &self.dir,
            stats: &self.stats,
            layout: self.layout,
        }
    }
}

/// Follows an election's leader: each [`LeaderObserver::next`] returns the
/// next leader seen, in the order leaders took office. Made by
/// [`Election::observe`].
///
/// It watches the election directory (the observers, not the participants,
/// pay for that). Like etcd's `Observe`, it reports only leaders, not the
/// moments with no offer at all, and a leader that comes and goes between
/// two reads of the directory may be missed; every leader that stays until
/// the observer has looked is seen, and none is reported twice in a row.
///
/// An [event stream](crate#event-streams) of `Result<Leader>`: an error
/// other than a lost connection is its last item.
#[derive(Debug)]
pub struct LeaderObserver(Resumable<Follow>);

/// What a [`LeaderObserver`] carries from one leader to the next.
#[derive(Debug)]
struct Follow {
    election: Election,
    last: Option<String>,
    watch: Option<Watch>,
}

resumable_stream!(
    LeaderObserver,
    Leader,
    /// Wait for the next leader other than the last one returned (the
    /// first call returns the current leader, once there is one); `None`
    /// after an error other than `ConnectionLost`. The same as
    /// [`StreamExt::next`](https://docs.rs/futures/latest/futures/stream/trait.StreamExt.html#method.next).
    ///
    /// # Errors
    /// `Some(Err)`: the session's end and backend errors; connection drops
    /// are retried while listing, and a `ConnectionLost` from reading the
    /// leader's node leaves the observer usable.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped, nothing is consumed; the next call goes on
    /// from where this one was.
);

impl Advance for Follow {
    type Item = Leader;

    async fn advance(&mut self) -> Result<Leader> {
        let session = self.election.session.clone();
        let dir = self.election.dir.clone();
        let mut attempt = 0;
        loop {
            settle_watch(&mut self.watch, &mut attempt).await?;
            let (children, w) = list_watch_retrying(&session, &dir).await?;
            let Some(first) = children.iter().find(|c| c.sequence.is_some()) else {
                self.watch = Some(w);
                continue;
            };
            if self.last.as_deref() == Some(first.name.as_str()) {
                self.watch = Some(w);
                continue;
            }
            // The watch is kept only once the leader is reported: were
            // this step dropped during the read below, the next one would
            // list again at once instead of waiting for a change and
            // missing this leader.
            let node = path::join(&dir, &first.name);
            if let Some(n) = session.get(&node).await? {
                self.last = Some(first.name.clone());
                self.watch = Some(w);
                return Ok(Leader {
                    node,
                    value: n.data,
                    token: n.stat.stamp,
                });
            }
            // Gone already: read the directory again now.
        }
    }
}

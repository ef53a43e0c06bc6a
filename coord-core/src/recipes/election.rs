//! Leader election (seed 000 `LeaderElectionSupport`, etcd `Election`,
//! Curator `LeaderLatch`).
//!
//! Each participant offers by creating an ephemeral-sequential node
//! `_c_<uuid>-n_<seq>` under the election directory, with its value (a host
//! name, say) as the node's data. The live offer with the lowest sequence
//! leads; every other participant waits on its *immediate predecessor* only,
//! so a leader's departure wakes exactly one participant. Every child with a
//! sequence counts as an offer, so on etcd — where every key under the
//! directory is ordered by create revision and its value is the proposal —
//! `etcdctl elect` processes take part in the same election.
//!
//! Two ways in:
//! - [`Election::campaign`] waits until elected and returns a [`Leadership`]
//!   guard (fencing token, `lost()`, `resign()`), like etcd's `Campaign`;
//! - [`Election::participate`] runs the seed's state machine in a task and
//!   delivers its events (`START`, `OFFER_*`, `DETERMINE_*`, `ELECTED_*`,
//!   `READY_*`, `FAILED`, `STOP_*`) in order, see [`Participant`].
//!
//! Anyone, participant or not, can read the leader ([`Election::leader`]) and
//! follow leader changes ([`Election::observe`]).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::path;
use crate::primitive::{CreateMode, Fence, Op, OpResult, Watch};
use crate::recipes::contend::wait_counted;
use crate::recipes::held::HeldNode;
use crate::recipes::names;
use crate::recipes::pending::PendingNode;
use crate::recipes::retry::{
    backoff, list_retrying, list_watch_retrying, session_end, settle_watch,
};
use crate::recipes::stats::Stats;
use crate::session::Session;

pub use crate::recipes::election_participant::{
    ElectionEvent, ElectionState, Participant, ParticipantStatus,
};

/// The marker of an offer node, as the seed names them (`n_`), after the
/// protected prefix: `_c_<uuid>-n_<seq>`.
pub const OFFER_MARKER: &str = "n_";

/// A leader election at a directory path.
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
}

/// The current leader as read from the server.
#[derive(Debug, Clone, PartialEq, Eq)]
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
        })
    }

    /// Count into `stats` (shared with other handles).
    pub fn with_stats(mut self, stats: Stats) -> Self {
        self.stats = stats;
        self
    }

    /// This handle's counters: `wakeups` counts a waiting participant's
    /// wake-ups, `acquisitions` its elections.
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

    /// Offer `value` and wait until this offer leads.
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
    pub async fn campaign(&self, value: &[u8]) -> Result<Leadership> {
        path::validate_data(value)?;
        let slot = Arc::new(Mutex::new(None));
        let held = self.campaign_inner(value, &mut |_| {}, &slot).await?;
        self.stats.acquired();
        Ok(Leadership {
            held,
            value: value.to_vec(),
        })
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
    pub async fn campaign_timeout(&self, value: &[u8], timeout: Duration) -> Result<Leadership> {
        crate::limits::check_timeout(timeout)?;
        match tokio::time::timeout(timeout, self.campaign(value)).await {
            Ok(r) => r,
            Err(_) => Err(Error::Timeout(timeout)),
        }
    }

    /// Start a participant that runs the seed's `LeaderElectionSupport`
    /// state machine in a task of its own, offering `value`; see
    /// [`Participant`] for its events. Needs a tokio runtime.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a value over the data limit. Errors
    /// met later end the participant with [`ElectionEvent::Failed`].
    ///
    /// # Panics
    /// Outside a tokio runtime (the participant is a task).
    pub fn participate(&self, value: &[u8]) -> Result<Participant> {
        path::validate_data(value)?;
        Ok(Participant::start(self.clone(), value.to_vec()))
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
            let children = list_retrying(&self.session, &self.dir).await?;
            let Some(first) = children.iter().find(|c| c.sequence.is_some()) else {
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

    /// Follow leader changes, participant or not; see [`LeaderObserver`].
    pub fn observe(&self) -> LeaderObserver {
        LeaderObserver {
            election: self.clone(),
            last: None,
            watch: None,
        }
    }

    /// The offer-and-wait loop shared by [`Election::campaign`] and
    /// [`Participant`]: emits `OFFER_*`, `DETERMINE_*`, `READY_*` and
    /// `ELECTED_START` (the caller emits `ELECTED_COMPLETE`), and puts the
    /// offer's path in `slot` once it is known.
    pub(crate) async fn campaign_inner(
        &self,
        value: &[u8],
        emit: &mut (dyn FnMut(ElectionEvent) + Send),
        slot: &Arc<Mutex<Option<String>>>,
    ) -> Result<HeldNode> {
        emit(ElectionEvent::OfferStart);
        let prefix = path::join(&self.dir, &names::protected(OFFER_MARKER));
        let mut pending = PendingNode::spawn(
            &self.session,
            prefix,
            value.to_vec(),
            CreateMode::EphemeralSequential,
        );
        let created = pending.created().await?;
        let me_path = created.path.clone();
        let me_name = path::name(&me_path).to_owned();
        let me_seq = created.sequence.ok_or_else(|| {
            Error::backend(
                self.session.backend(),
                "a sequential create returned no sequence",
            )
        })?;
        if let Ok(mut s) = slot.lock() {
            *s = Some(me_path.clone());
        }
        emit(ElectionEvent::OfferComplete);
        loop {
            emit(ElectionEvent::DetermineStart);
            let children = list_retrying(&self.session, &self.dir).await?;
            if !children.iter().any(|c| c.name == me_name) {
                return Err(session_end(&self.session).unwrap_or(Error::LockLost { path: me_path }));
            }
            let pred = children
                .iter()
                .filter(|c| matches!(c.sequence, Some(s) if s < me_seq))
                .max_by_key(|c| c.sequence);
            emit(ElectionEvent::DetermineComplete);
            let Some(pred) = pred else {
                emit(ElectionEvent::ElectedStart);
                let node = pending.take().ok_or_else(|| {
                    Error::backend(self.session.backend(), "lost track of our own offer")
                })?;
                return Ok(HeldNode::new(self.session.clone(), node));
            };
            let pred_path = path::join(&self.dir, &pred.name);
            emit(ElectionEvent::ReadyStart);
            emit(ElectionEvent::ReadyComplete);
            let mut attempt = 0;
            loop {
                match wait_counted(&self.session, &self.stats, &pred_path).await {
                    Ok(()) => break,
                    Err(e) if e.is_retryable() => backoff(&mut attempt).await,
                    Err(e) => return Err(e),
                }
            }
        }
    }
}

/// Leadership won by [`Election::campaign`]. Give it up with
/// [`Leadership::resign`]; dropping it resigns in the background, best
/// effort (the session's end is the backstop).
#[must_use = "dropping the leadership resigns it"]
#[derive(Debug)]
pub struct Leadership {
    held: HeldNode,
    value: Vec<u8>,
}

impl Leadership {
    /// The fencing token: strictly larger for every later leader of this
    /// election.
    pub fn fencing_token(&self) -> u64 {
        self.held.fencing_token()
    }

    /// The fence for guarded writes made as leader.
    pub fn fence(&self) -> Fence {
        self.held.fence()
    }

    /// The leader's offer node.
    pub fn node_path(&self) -> &str {
        self.held.path()
    }

    /// The value offered (as last proclaimed by this handle).
    pub fn value(&self) -> &[u8] {
        &self.value
    }

    /// Write `op` only while still leader, atomically.
    ///
    /// # Errors
    /// [`Error::LockLost`] when leadership is gone; otherwise the op's own.
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may land after the drop.
    pub async fn write(&self, op: Op) -> Result<OpResult> {
        self.held.write(op).await
    }

    /// Change the leader's value without an election (etcd `Proclaim`):
    /// observers see the new value on their next read.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an oversized value; [`Error::LockLost`]
    /// when no longer leader; session errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may land after the drop.
    pub async fn proclaim(&mut self, value: &[u8]) -> Result<()> {
        path::validate_data(value)?;
        self.held
            .write(Op::Set {
                path: self.held.path().to_owned(),
                data: value.to_vec(),
                version: None,
            })
            .await?;
        self.value = value.to_vec();
        Ok(())
    }

    /// Resolve when leadership is lost: the session ended (expired or
    /// closed) or the offer node was deleted. Returns why.
    ///
    /// # Errors
    /// None: it resolves *to* the reason the hold was lost.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn lost(&self) -> Error {
        self.held.lost().await
    }

    /// Give up leadership: delete the offer, which wakes the next in line.
    ///
    /// # Errors
    /// [`Error::LockLost`] when leadership had already been lost; session
    /// errors otherwise.
    ///
    /// # Cancel safety
    /// Cancel safe in effect: dropped, the resignation finishes in the
    /// background.
    pub async fn resign(self) -> Result<()> {
        self.held.release().await
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
#[derive(Debug)]
pub struct LeaderObserver {
    election: Election,
    last: Option<String>,
    watch: Option<Watch>,
}

impl LeaderObserver {
    /// Wait for the next leader other than the last one returned (the
    /// first call returns the current leader, once there is one).
    ///
    /// # Errors
    /// The session's end and backend errors; connection drops are retried.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped, nothing is consumed; the next call looks again.
    pub async fn next(&mut self) -> Result<Leader> {
        let session = self.election.session.clone();
        let dir = self.election.dir.clone();
        let mut attempt = 0;
        loop {
            settle_watch(&mut self.watch, &mut attempt).await?;
            let (children, w) = list_watch_retrying(&session, &dir).await?;
            self.watch = Some(w);
            let Some(first) = children.iter().find(|c| c.sequence.is_some()) else {
                continue;
            };
            if self.last.as_deref() == Some(first.name.as_str()) {
                continue;
            }
            let node = path::join(&dir, &first.name);
            match session.get(&node).await? {
                Some(n) => {
                    self.last = Some(first.name.clone());
                    return Ok(Leader {
                        node,
                        value: n.data,
                        token: n.stat.stamp,
                    });
                }
                // Gone already: read the directory again now.
                None => self.watch = None,
            }
        }
    }
}

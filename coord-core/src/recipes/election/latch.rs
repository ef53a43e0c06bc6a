//! Curator's `LeaderLatch` over an election's participant:
//! [`LeaderLatch`], made by [`Election::latch`].

use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use tokio::sync::watch;

use crate::backend::node::Fence;
use crate::error::{Error, Result};
use crate::machinery::stream::ChangeWait;
use crate::recipes::election::events::ElectionState;
use crate::recipes::election::leader::Election;
use crate::recipes::election::participant::{Participant, ParticipantStatus};

/// What a [`LeaderLatch`] is now, as its [`LatchWatcher`] reports it
/// (Curator's `LeaderLatchListener.isLeader` / `notLeader`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LatchEvent {
    /// This latch leads; `token` is its fencing token (its offer's stamp),
    /// strictly larger than every earlier leader's of the election.
    IsLeader {
        /// The fencing token of this term.
        token: u64,
    },
    /// This latch does not lead (yet, or any more).
    NotLeader,
}

/// A leader latch (Curator's `LeaderLatch`), made by
/// [`Election::new`]`(session, path)?.`[`latch`](Election::latch)`(id)`
/// (the id is the offer's data, which [`Election::leader`] reads back;
/// Curator's latch id). It joins the election at once and stays in it
/// until closed; [`LeaderLatch::has_leadership`] says
/// whether it leads now, [`LeaderLatch::await_leadership`] waits until it
/// does, [`LeaderLatch::watch`] follows `IsLeader` / `NotLeader`.
///
/// It is a thin layer over [`Election::participate`]: the offer is an
/// ephemeral-sequential node `_c_<uuid>-latch-<seq>` (Curator
/// `LeaderLatch`'s names, by the election's default layout), the lowest
/// live offer leads and each other latch watches only its predecessor.
///
/// A latch stops leading before its offer is deleted ([`LeaderLatch::close`]),
/// so two latches of live sessions never both lead. A latch whose session
/// expires reports [`LatchEvent::NotLeader`] once its client learns of it
/// (no later than the session's lease deadline); it cannot rejoin, since
/// an expired session is final: start a new latch on a new session. Guard
/// the writes made as leader with [`LeaderLatch::fence`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> coord_core::Result<()> {
/// # let store = coord_mem::MemStore::new();
/// # let session = store.open();
/// use coord_core::recipes::{Election, LatchEvent};
///
/// let latch = Election::new(&session, "/latches/scheduler")?.latch(b"host-a")?;
/// let token = latch.await_leadership().await?;
/// assert!(latch.has_leadership());
/// assert_eq!(latch.watch().next().await, Some(LatchEvent::IsLeader { token }));
/// latch.close().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping a latch withdraws it from the election"]
#[derive(Debug)]
pub struct LeaderLatch {
    participant: Participant,
    status: watch::Receiver<ParticipantStatus>,
    id: Vec<u8>,
}

/// The [`LatchEvent`] a participant's status amounts to.
pub(crate) fn event_of(s: &ParticipantStatus) -> LatchEvent {
    match (s.state, s.leader_token) {
        (ElectionState::Elected, Some(token)) => LatchEvent::IsLeader { token },
        _ => LatchEvent::NotLeader,
    }
}

/// Whether the participant is over (failed or stopped): it will never lead.
pub(crate) fn is_over(s: &ParticipantStatus) -> bool {
    matches!(s.state, ElectionState::Failed | ElectionState::Stop)
}

impl LeaderLatch {
    /// A latch over `participant`, offering `id`.
    pub(crate) fn over(participant: Participant, id: Vec<u8>) -> Self {
        let status = participant.status_receiver();
        LeaderLatch {
            participant,
            status,
            id,
        }
    }

    /// A watch of the participant's status underneath.
    pub(crate) fn status_watch(&self) -> watch::Receiver<ParticipantStatus> {
        self.status.clone()
    }

    /// The id this latch offered.
    pub fn id(&self) -> &[u8] {
        &self.id
    }

    /// Whether this latch leads now (Curator's `hasLeadership`).
    pub fn has_leadership(&self) -> bool {
        matches!(event_of(&self.status.borrow()), LatchEvent::IsLeader { .. })
    }

    /// The fencing token while leading.
    pub fn fencing_token(&self) -> Option<u64> {
        match event_of(&self.status.borrow()) {
            LatchEvent::IsLeader { token } => Some(token),
            LatchEvent::NotLeader => None,
        }
    }

    /// The fence for guarded writes while leading.
    pub fn fence(&self) -> Option<Fence> {
        self.participant.fence()
    }

    /// The latch's offer node, once made.
    pub fn node_path(&self) -> Option<String> {
        self.status.borrow().node.clone()
    }

    /// Wait until this latch leads (Curator's `await()`), and return its
    /// fencing token. Returns at once if it leads already.
    ///
    /// # Errors
    /// [`Error::LockLost`] if the latch failed (its session ended, its offer
    /// was deleted) or was closed before leading.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches; the latch stays in the election.
    pub async fn await_leadership(&self) -> Result<u64> {
        let mut rx = self.status.clone();
        let lost = |s: &ParticipantStatus| Error::LockLost {
            path: s.node.clone().unwrap_or_default(),
        };
        let r = rx
            .wait_for(|s| matches!(event_of(s), LatchEvent::IsLeader { .. }) || is_over(s))
            .await;
        match r {
            Ok(s) => match event_of(&s) {
                LatchEvent::IsLeader { token } => Ok(token),
                LatchEvent::NotLeader => Err(lost(&s)),
            },
            Err(_) => Err(Error::LockLost {
                path: String::new(),
            }),
        }
    }

    /// [`LeaderLatch::await_leadership`], giving up after `timeout`
    /// (Curator's `await(timeout, unit)`, which returns `false` instead).
    ///
    /// # Errors
    /// [`Error::Timeout`] when it runs out (the latch stays in the election
    /// and may lead later); [`Error::InvalidArgument`] for a timeout over
    /// [`crate::limits::MAX_TIMEOUT`]; otherwise as
    /// [`LeaderLatch::await_leadership`].
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn await_leadership_timeout(&self, timeout: Duration) -> Result<u64> {
        crate::limits::check_timeout(timeout)?;
        match tokio::time::timeout(timeout, self.await_leadership()).await {
            Ok(r) => r,
            Err(_) => Err(Error::Timeout(timeout)),
        }
    }

    /// Follow this latch's `IsLeader` / `NotLeader` changes; see
    /// [`LatchWatcher`]. Any number of watchers may follow one latch.
    pub fn watch(&self) -> LatchWatcher {
        LatchWatcher {
            status: self.status.clone(),
            last: None,
            over: false,
            change: ChangeWait::default(),
        }
    }

    /// Leave the election (Curator's `close()`): stop leading (if it
    /// does) before the offer is deleted, which wakes the next latch.
    ///
    /// # Errors
    /// The error that ended the latch, if one did (say
    /// [`Error::SessionExpired`]); the error of deleting the offer
    /// otherwise.
    ///
    /// # Cancel safety
    /// Cancel safe in effect: once called, the close goes on in the
    /// latch's task even if this future is dropped.
    pub async fn close(mut self) -> Result<()> {
        self.participant.stop().await
    }
}

/// Follows a [`LeaderLatch`]: the first [`LatchWatcher::next`] returns the
/// latch's state now, each later one the next *change* (`IsLeader` to
/// `NotLeader` or back). It reads the latest state, so a watcher that looks
/// late sees where the latch is now, never a stale transition; a latch
/// leads at most once (an ended latch does not rejoin), so a watcher sees
/// every term of it, at worst after the fact as `IsLeader` then
/// `NotLeader` collapsed to the later.
///
/// An [event stream](crate#event-streams) of `LatchEvent`: a failure shows
/// as `NotLeader`, then the stream ends.
#[derive(Debug, Clone)]
pub struct LatchWatcher {
    status: watch::Receiver<ParticipantStatus>,
    last: Option<LatchEvent>,
    /// The latch's task is over: once its last word is returned, so is
    /// the stream.
    over: bool,
    change: ChangeWait,
}

impl LatchWatcher {
    /// The latch's state now on the first call, then the next change;
    /// `None` once the latch has ended (closed, dropped, or failed) and
    /// its last state has been returned. The same as
    /// [`StreamExt::next`](https://docs.rs/futures/latest/futures/stream/trait.StreamExt.html#method.next).
    ///
    /// # Errors
    /// None: a latch's failure shows as [`LatchEvent::NotLeader`], then
    /// `None`.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped, nothing is consumed.
    pub async fn next(&mut self) -> Option<LatchEvent> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }

    /// The latch's state now, without waiting.
    pub fn current(&self) -> LatchEvent {
        event_of(&self.status.borrow())
    }
}

impl Stream for LatchWatcher {
    type Item = LatchEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<LatchEvent>> {
        let this = self.get_mut();
        loop {
            let now = event_of(&this.status.borrow_and_update());
            if this.last != Some(now) {
                this.last = Some(now);
                return Poll::Ready(Some(now));
            }
            if this.over {
                return Poll::Ready(None);
            }
            if !ready!(this.change.poll_changed(&this.status, cx)) {
                // The latch's task is over: read its last word, then stop.
                this.over = true;
            }
        }
    }
}

impl Election {
    /// Start a [`LeaderLatch`] (Curator's `LeaderLatch`) offering `value`
    /// (its id, Curator's latch id; any bytes, as [`Election::campaign`]'s):
    /// a [`Participant`] seen as leading or not. Needs a tokio runtime.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a value over the data limit. Errors
    /// met later end the latch: it reports [`LatchEvent::NotLeader`] and
    /// [`LeaderLatch::close`] returns the error.
    ///
    /// # Panics
    /// Outside a tokio runtime (the latch's participant is a task).
    pub fn latch(&self, value: impl AsRef<[u8]>) -> Result<LeaderLatch> {
        let value = value.as_ref();
        let participant = self.participate(value)?;
        Ok(LeaderLatch::over(participant, value.to_vec()))
    }
}

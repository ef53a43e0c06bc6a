//! The ZooKeeper recipes' `LeaderElectionSupport` as a task with an event
//! stream: [`Participant`].

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures_core::Stream;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use crate::backend::node::Fence;
use crate::error::{Error, Result};
use crate::machinery::pending::delete_if_present;
use crate::machinery::retry::pause;
use crate::machinery::stats::Stats;
use crate::recipes::election::campaign::{Candidate, ElectionLayout};
use crate::recipes::election::events::{ElectionEvent, ElectionState};
use crate::session::Session;

/// A snapshot of a [`Participant`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParticipantStatus {
    /// The state.
    pub state: ElectionState,
    /// The offer node once made.
    pub node: Option<String>,
    /// The fencing token (the offer's stamp) while leader.
    pub leader_token: Option<u64>,
}

/// A participant in an [`Election`](super::Election), running
/// `LeaderElectionSupport`'s state machine in a task of its own; made by
/// [`Election::participate`](super::Election::participate).
///
/// Read its events in order with [`Participant::next`], or its
/// current status with [`Participant::status`]. Stop it with
/// [`Participant::stop`]; dropping it stops it in the background.
///
/// An [event stream](crate#event-streams) of `ElectionEvent`: a failure
/// shows as [`ElectionEvent::Failed`]; it ends when the task is over.
#[must_use = "dropping a participant withdraws it from the election"]
#[derive(Debug)]
pub struct Participant {
    events: mpsc::UnboundedReceiver<ElectionEvent>,
    status: watch::Receiver<ParticipantStatus>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<()>>>,
}

struct Emitter {
    events: mpsc::UnboundedSender<ElectionEvent>,
    status: watch::Sender<ParticipantStatus>,
}

impl Emitter {
    fn emit(&self, ev: ElectionEvent) {
        let state = match ev {
            ElectionEvent::Start => Some(ElectionState::Start),
            ElectionEvent::OfferStart => Some(ElectionState::Offer),
            ElectionEvent::DetermineStart => Some(ElectionState::Determine),
            ElectionEvent::ReadyStart => Some(ElectionState::Ready),
            ElectionEvent::ElectedComplete => Some(ElectionState::Elected),
            ElectionEvent::Failed => Some(ElectionState::Failed),
            ElectionEvent::StopStart => Some(ElectionState::Stop),
            _ => None,
        };
        if let Some(state) = state {
            self.status.send_modify(|s| {
                s.state = state;
                if state != ElectionState::Elected {
                    s.leader_token = None;
                }
            });
        }
        let _ = self.events.send(ev);
    }
}

impl Participant {
    /// Start offering `value` in the election at `dir`, counting into
    /// `stats`.
    pub(crate) fn start(
        session: Session,
        dir: String,
        stats: Stats,
        layout: ElectionLayout,
        value: Vec<u8>,
    ) -> Self {
        let (etx, erx) = mpsc::unbounded_channel();
        let (stx, srx) = watch::channel(ParticipantStatus {
            state: ElectionState::Start,
            node: None,
            leader_token: None,
        });
        let (stop_tx, stop_rx) = oneshot::channel();
        let emitter = Emitter {
            events: etx,
            status: stx,
        };
        let election = Seat {
            session,
            dir,
            stats,
            layout,
        };
        let task = tokio::spawn(run(election, value, emitter, stop_rx));
        Participant {
            events: erx,
            status: srx,
            stop: Some(stop_tx),
            task: Some(task),
        }
    }

    /// The next event, in order; `None` once the participant's task is over
    /// and every event has been read. The same as
    /// [`StreamExt::next`](https://docs.rs/futures/latest/futures/stream/trait.StreamExt.html#method.next).
    ///
    /// # Errors
    /// None: the participant's failures arrive as `ElectionEvent::Failed`;
    /// `None` means the participant has stopped and no event will follow.
    ///
    /// # Cancel safety
    /// Cancel safe: no event is lost if the future is dropped.
    pub async fn next(&mut self) -> Option<ElectionEvent> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }

    /// The next event if one is waiting, without waiting.
    pub fn try_next(&mut self) -> Option<ElectionEvent> {
        self.events.try_recv().ok()
    }

    /// The current status.
    pub fn status(&self) -> ParticipantStatus {
        self.status.borrow().clone()
    }

    /// A receiver of the status, for recipes built on a participant
    /// (the leader latch).
    pub(crate) fn status_receiver(&self) -> watch::Receiver<ParticipantStatus> {
        self.status.clone()
    }

    /// The current state.
    pub fn state(&self) -> ElectionState {
        self.status.borrow().state
    }

    /// Whether this participant is leader now. It stops being leader
    /// (`StopStart`) before its offer is deleted, so two participants of
    /// live sessions never both say `true`; a leader whose session expires
    /// says `true` until it learns of it (`Failed`): fence your writes.
    pub fn is_leader(&self) -> bool {
        self.status.borrow().state == ElectionState::Elected
    }

    /// The fencing token while leader.
    pub fn fencing_token(&self) -> Option<u64> {
        self.status.borrow().leader_token
    }

    /// The fence for guarded writes while leader.
    pub fn fence(&self) -> Option<Fence> {
        let s = self.status.borrow();
        match (&s.node, s.leader_token) {
            (Some(path), Some(stamp)) => Some(Fence {
                path: path.clone(),
                stamp,
            }),
            _ => None,
        }
    }

    /// Wait until this participant leads, and return its fencing token.
    ///
    /// # Errors
    /// [`Error::LockLost`] if it failed or was stopped before leading.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn wait_elected(&mut self) -> Result<u64> {
        let r = self
            .status
            .wait_for(|s| {
                matches!(
                    s.state,
                    ElectionState::Elected | ElectionState::Failed | ElectionState::Stop
                )
            })
            .await;
        match r {
            Ok(s) if s.state == ElectionState::Elected => s.leader_token.ok_or(Error::LockLost {
                path: s.node.clone().unwrap_or_default(),
            }),
            Ok(s) => Err(Error::LockLost {
                path: s.node.clone().unwrap_or_default(),
            }),
            Err(_) => Err(Error::LockLost {
                path: String::new(),
            }),
        }
    }

    /// Stop: leave leadership (if held), withdraw the offer, and wait for
    /// `StopComplete`. Events stay readable afterwards.
    ///
    /// # Errors
    /// The error that made the participant fail, if it did; the error of
    /// deleting the offer otherwise.
    ///
    /// # Cancel safety
    /// Cancel safe in effect: once called, the stop goes on in the task
    /// even if this future is dropped.
    pub async fn stop(&mut self) -> Result<()> {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        match self.task.take() {
            Some(task) => match task.await {
                Ok(r) => r,
                Err(e) => Err(Error::backend("coord", e)),
            },
            None => Ok(()),
        }
    }
}

impl Stream for Participant {
    type Item = ElectionEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ElectionEvent>> {
        self.get_mut().events.poll_recv(cx)
    }
}

impl Drop for Participant {
    fn drop(&mut self) {
        // The task sees the stop (or the closed channel) and withdraws.
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

/// The election a participant's task runs in.
struct Seat {
    session: Session,
    dir: String,
    stats: Stats,
    layout: ElectionLayout,
}

impl Seat {
    fn candidate(&self) -> Candidate<'_> {
        Candidate {
            session: &self.session,
            dir: &self.dir,
            stats: &self.stats,
            layout: self.layout,
        }
    }
}

async fn run(
    election: Seat,
    value: Vec<u8>,
    out: Emitter,
    mut stop: oneshot::Receiver<()>,
) -> Result<()> {
    out.emit(ElectionEvent::Start);
    let slot = Arc::new(Mutex::new(None::<String>));
    let result = {
        let out_ref = &out;
        let mut emit = |ev: ElectionEvent| {
            if ev == ElectionEvent::OfferComplete {
                if let Ok(s) = slot.lock() {
                    let node = s.clone();
                    out_ref.status.send_modify(|st| st.node = node);
                }
            }
            out_ref.emit(ev);
        };
        let candidate = election.candidate();
        // A campaign that a lost connection failed (its offer could not be
        // made: the backends' creates find a sent offer again themselves,
        // and give up only when the session is being lost) is tried again
        // while the session lives: a participant started while its
        // connection is down would otherwise give up for good.
        let campaign = async {
            let mut attempt = 0;
            loop {
                match candidate.campaign(&value, &mut emit, &slot).await {
                    Err(e) if e.is_retryable() && !election.session.state().is_terminal() => {
                        tracing::debug!(target: crate::telemetry::TARGET, election = election.dir.as_str(), error = %e, "campaign failed; trying again");
                        pause(&election.session, &mut attempt).await;
                    }
                    r => break r,
                }
            }
        };
        tokio::select! {
            r = campaign => Some(r),
            _ = &mut stop => None,
        }
    };
    let held = match result {
        None => {
            // Stopped before leading: the campaign's future is dropped (its
            // offer deleted in the background); delete it now if known.
            out.emit(ElectionEvent::StopStart);
            let node = slot.lock().ok().and_then(|s| s.clone());
            let r = match node {
                Some(p) => delete_if_present(&election.session, &p).await,
                None => Ok(()),
            };
            out.emit(ElectionEvent::StopComplete);
            return r;
        }
        Some(Err(e)) => {
            tracing::warn!(target: crate::telemetry::TARGET, election = election.dir.as_str(), error = %e, "election participant failed");
            out.emit(ElectionEvent::Failed);
            let _ = stop.await;
            out.emit(ElectionEvent::StopStart);
            out.emit(ElectionEvent::StopComplete);
            return Err(e);
        }
        Some(Ok(held)) => held,
    };
    election.stats.acquired();
    out.status.send_modify(|s| {
        s.node = Some(held.path().to_owned());
        s.leader_token = Some(held.fencing_token());
    });
    // `ElectedComplete` sets the state after the token is in place.
    out.emit(ElectionEvent::ElectedComplete);
    let lost = tokio::select! {
        e = held.lost() => Some(e),
        _ = &mut stop => None,
    };
    match lost {
        Some(e) => {
            tracing::warn!(target: crate::telemetry::TARGET, election = election.dir.as_str(), error = %e, "leadership lost");
            out.emit(ElectionEvent::Failed);
            drop(held);
            let _ = stop.await;
            out.emit(ElectionEvent::StopStart);
            out.emit(ElectionEvent::StopComplete);
            Err(e)
        }
        None => {
            // Not leader any more before the node goes: no overlap.
            out.emit(ElectionEvent::StopStart);
            let r = held.release().await;
            out.emit(ElectionEvent::StopComplete);
            r
        }
    }
}

//! The offer-and-wait loop behind both ways into an election,
//! [`Election::campaign`](super::Election::campaign) and
//! [`Participant`](super::Participant): make an ephemeral-sequential offer,
//! then wait on the immediate predecessor until ours is the first.

use std::sync::{Arc, Mutex};

use crate::backend::node::Child;
use crate::backend::order::{Blockers, Place};
use crate::error::{Error, Result};
use crate::hold::contend::wait_counted;
use crate::hold::held::HeldNode;
use crate::layout;
use crate::machinery::pending::PendingNode;
use crate::machinery::retry::{backoff, place_retrying};
use crate::machinery::stats::Stats;
use crate::path;
use crate::recipes::election::events::ElectionEvent;
use crate::session::Session;
use crate::telemetry::{self, Recipe};

/// Whose node names an election's offers take: the text between the
/// protected prefix `_c_<uuid>-` and the sequence.
///
/// coord orders offers by their sequence whatever they are called, so it
/// waits correctly behind any peer's offer. The name decides the other way
/// round: which peers sort *our* offers where they belong. Curator sorts an
/// election's children by the text after its own marker, and a child without
/// that marker sorts after every one that has it — a Curator participant
/// would lead while our earlier offer leads too.
///
/// On etcd and Redis the layout changes only the key's name: every key under
/// the election counts, in creation order (so `etcdctl elect` shares either
/// way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ElectionLayout {
    /// Curator's `LeaderLatch`: `_c_<uuid>-latch-<seq>`, the node's data
    /// the offered value (LeaderLatch's participant id). kazoo's `Election`
    /// counts these offers when its lock is made with
    /// `extra_lock_patterns=("-latch-",)`.
    #[default]
    LeaderLatch,
    /// Curator's `LeaderSelector`, an `InterProcessMutex` underneath:
    /// `_c_<uuid>-lock-<seq>`, the names coord's `Lock` uses too. kazoo's
    /// `Election` counts these with `extra_lock_patterns=("-lock-",)`.
    LeaderSelector,
}

impl ElectionLayout {
    /// The marker this layout puts before the sequence.
    pub fn marker(self) -> &'static str {
        match self {
            ElectionLayout::LeaderLatch => layout::LATCH,
            ElectionLayout::LeaderSelector => layout::LOCK,
        }
    }
}

/// One offer's way to leadership: the election it runs in.
pub(crate) struct Candidate<'a> {
    pub session: &'a Session,
    pub dir: &'a str,
    pub stats: &'a Stats,
    pub layout: ElectionLayout,
}

impl Candidate<'_> {
    /// Offer `value` and wait until the offer leads. Emits `OFFER_*`,
    /// `DETERMINE_*`, `READY_*` and `ELECTED_START` (the caller emits
    /// `ELECTED_COMPLETE`), and puts the offer's path in `slot` once it is
    /// known.
    pub(crate) async fn campaign(
        &self,
        value: &[u8],
        emit: &mut (dyn FnMut(ElectionEvent) + Send),
        slot: &Arc<Mutex<Option<String>>>,
    ) -> Result<HeldNode> {
        let run = self.campaign_untraced(value, emit, slot);
        telemetry::operation(Recipe::Election, self.session, self.dir, run).await
    }

    async fn campaign_untraced(
        &self,
        value: &[u8],
        emit: &mut (dyn FnMut(ElectionEvent) + Send),
        slot: &Arc<Mutex<Option<String>>>,
    ) -> Result<HeldNode> {
        emit(ElectionEvent::OfferStart);
        let prefix = path::join(self.dir, &layout::protected(self.layout.marker()));
        let mut pending =
            PendingNode::spawn_contender(self.session, prefix, value.to_vec(), Blockers::All);
        let created = pending.created().await?;
        let me_path = created.path.clone();
        let me = Child::new(path::name(&me_path).to_owned(), created.sequence);
        if me.sequence.is_none() {
            return Err(Error::backend(
                self.session.backend(),
                "a sequential create returned no sequence",
            ));
        }
        if let Ok(mut s) = slot.lock() {
            *s = Some(me_path.clone());
        }
        emit(ElectionEvent::OfferComplete);
        // Where the offer stood at its create, if the create read it.
        let mut placed = pending.take_place();
        loop {
            emit(ElectionEvent::DetermineStart);
            // Where the offer stands: from the server's ordered index where
            // it has one (O(log N)), else a listing.
            let here = match placed.take() {
                Some(p) => p,
                None => place_retrying(self.session, self.dir, &me, Blockers::All).await?,
            };
            let pred = match here {
                Place::Gone => {
                    return Err(self
                        .session
                        .state()
                        .end_error()
                        .unwrap_or(Error::LockLost { path: me_path }));
                }
                Place::First => {
                    emit(ElectionEvent::DetermineComplete);
                    emit(ElectionEvent::ElectedStart);
                    let node = pending.take().ok_or_else(|| {
                        Error::backend(self.session.backend(), "lost track of our own offer")
                    })?;
                    return Ok(HeldNode::new(self.session.clone(), node));
                }
                Place::Behind(pred) => pred,
            };
            emit(ElectionEvent::DetermineComplete);
            let pred_path = path::join(self.dir, &pred.name);
            let pred_seq = pred.sequence;
            emit(ElectionEvent::ReadyStart);
            emit(ElectionEvent::ReadyComplete);
            let mut attempt = 0;
            loop {
                match wait_counted(self.session, self.stats, &pred_path, pred_seq).await {
                    Ok(()) => break,
                    Err(e) if e.is_retryable() => backoff(&mut attempt).await,
                    Err(e) => return Err(e),
                }
            }
        }
    }
}

//! What every guard shares: a node this session holds something through.

use crate::backend::node::{Created, Fence, Op, OpResult};
use crate::error::{Error, Result};
use crate::hold::reason::why_gone;
use crate::layout::Ids;
use crate::machinery::pending::{delete_in_drop_then, delete_own, delete_until_gone};
use crate::machinery::retry;
use crate::session::Session;
use crate::telemetry::{self, Follow, Tracker};

/// A node held by a session: the thing behind every guard (a lock, a lease,
/// a leadership). Deleting it gives up the hold; losing it (the session
/// ends, or someone deletes it) loses the hold.
///
/// Dropping a `HeldNode` without [`HeldNode::release`] deletes its node in
/// the background, retrying through connection losses until it is gone or
/// the session is over; [`Session::close`] waits for that. On a
/// multi-thread runtime, while the session is connected, the drop itself
/// waits for the delete, at most 1 s (see [`Session`]'s "Dropping the last
/// handle").
#[must_use = "dropping a held node releases it"]
#[derive(Debug)]
pub struct HeldNode {
    session: Session,
    node: Created,
    released: bool,
    /// Says how the hold ended, when telemetry follows it.
    track: Option<Tracker>,
    /// The protection id the node's name carries, to give back to its
    /// handle once the node is deleted ([`Ids`]).
    lent: Option<(Ids, uuid::Uuid)>,
}

impl HeldNode {
    pub(crate) fn new(session: Session, node: Created) -> Self {
        HeldNode {
            session,
            node,
            released: false,
            track: None,
            lent: None,
        }
    }

    /// Give `id` back to `ids` once the node is deleted by
    /// [`HeldNode::release`].
    pub(crate) fn lending(mut self, ids: &Ids, id: uuid::Uuid) -> Self {
        self.lent = Some((ids.clone(), id));
        self
    }

    /// The node is deleted: its id may name the handle's next node.
    fn give_back(&mut self) {
        if let Some((ids, id)) = self.lent.take() {
            ids.give(id);
        }
    }

    fn ended_released(&self, in_background: bool) {
        if let Some(t) = &self.track {
            t.released(&self.session, in_background);
        }
    }

    fn ended_lost(&self, why: &Error) {
        if let Some(t) = &self.track {
            t.lost(&self.session, why);
        }
    }

    /// The held node's full path.
    pub fn path(&self) -> &str {
        &self.node.path
    }

    /// The fencing token: the node's stamp. It strictly increases across
    /// successive holders, so a resource that remembers the largest token
    /// it has seen can refuse a stale holder.
    pub fn fencing_token(&self) -> u64 {
        self.node.stamp
    }

    /// The fence for [`Session::guarded`] writes made under this hold.
    pub fn fence(&self) -> Fence {
        Fence {
            path: self.node.path.clone(),
            stamp: self.node.stamp,
        }
    }

    /// The session the hold lives in.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Write `op` only while this hold is still held, atomically.
    ///
    /// # Errors
    /// [`Error::LockLost`] when the hold is gone; otherwise the op's own
    /// errors (see [`Session::guarded`]).
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may land after the future is dropped.
    pub async fn write(&self, op: Op) -> Result<OpResult> {
        self.session.guarded(&self.fence(), op).await
    }

    /// Resolve when the hold is lost, with the reason the table on
    /// [`Hold::lost`](crate::hold::Hold::lost) gives for the way it ended,
    /// the same whether this was awaited before the loss or after. A
    /// suspended connection is not a loss: the session may come back.
    ///
    /// # Errors
    /// None: it resolves *to* the reason the hold was lost.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn lost(&self) -> Error {
        let why = lost_at(&self.session, &self.node.path).await;
        self.ended_lost(&why);
        why
    }

    /// Give up the hold: delete the node. Through a connection loss the
    /// delete is retried until it is done or the session is over (then the
    /// node went with it), so a release never leaves the node blocking
    /// others while the session lives on. That wait is bounded by the
    /// session's lease deadline.
    ///
    /// # Errors
    /// [`Error::LockLost`] when the node was already gone (the hold had been
    /// lost before this call: whatever it protected was not protected to
    /// the end); [`Error::SessionExpired`] / [`Error::SessionClosed`] when
    /// the session ended first (the node went with it); other backend
    /// errors (the delete is then retried in the background).
    ///
    /// # Cancel safety
    /// Cancel safe in effect: if dropped, the node is deleted in the
    /// background as on `Drop`.
    pub async fn release(mut self) -> Result<()> {
        // If this future is dropped during the delete, `released` is still
        // false and `Drop` deletes in the background.
        let mut attempt = 0;
        let mut tried = false;
        loop {
            match delete_own(&self.session, &self.node).await {
                Ok(()) => {
                    self.released = true;
                    self.ended_released(false);
                    self.give_back();
                    return Ok(());
                }
                // After a lost answer, "gone" may be our own delete landing.
                Err(Error::NotFound { .. }) if tried => {
                    self.released = true;
                    self.ended_released(false);
                    self.give_back();
                    return Ok(());
                }
                Err(Error::NotFound { .. }) => {
                    self.released = true;
                    let lost = Error::LockLost {
                        path: self.node.path.clone(),
                    };
                    self.ended_lost(&lost);
                    return Err(lost);
                }
                Err(e) if e.is_session_end() => {
                    self.released = true;
                    self.ended_lost(&e);
                    return Err(e);
                }
                Err(e) if e.is_retryable() => {
                    tried = true;
                    tracing::debug!(target: crate::telemetry::TARGET, path = %self.node.path, error = %e, "release failed; retrying once the connection is back");
                    retry::pause(&self.session, &mut attempt).await;
                }
                // Not known to be deleted: `Drop` tries again in the background.
                Err(e) => return Err(e),
            }
        }
    }

    /// Delete the node, treating "already gone" as done.
    pub(crate) async fn discard(mut self) -> Result<()> {
        self.released = true;
        self.ended_released(false);
        delete_until_gone(&self.session, &self.node).await
    }
}

/// Resolve when the hold through the node at `path` in `session` is lost;
/// see [`HeldNode::lost`] and the table on [`Hold::lost`](crate::hold::Hold::lost).
pub(crate) async fn lost_at(session: &Session, path: &str) -> Error {
    let gone = async {
        let mut attempt = 0;
        loop {
            match session.wait_gone(path).await {
                Ok(()) => return why_gone(session, path).await,
                Err(e) if e.is_retryable() => retry::backoff(&mut attempt).await,
                Err(e) => return e,
            }
        }
    };
    tokio::select! {
        e = session.ended() => e,
        e = gone => e,
    }
}

impl Follow for HeldNode {
    /// Have `tracker` follow this hold (see [`crate::telemetry`]).
    fn follow(&mut self, tracker: Tracker) {
        self.track = Some(tracker);
    }
}

impl telemetry::Outcome for HeldNode {
    fn holds(&mut self, f: &mut dyn FnMut(&mut dyn Follow)) {
        f(self);
    }
}

impl Drop for HeldNode {
    fn drop(&mut self) {
        // A no-op when the hold already ended (released or found lost).
        self.ended_released(true);
        if !self.released {
            let lent = self.lent.take();
            delete_in_drop_then(&self.session, self.node.clone(), move || {
                if let Some((ids, id)) = lent {
                    ids.give(id);
                }
            });
        }
    }
}
/// Implement [`Hold`](crate::hold::Hold) for a guard that reaches its [`HeldNode`] through
/// `$held` (an expression over `$s`, the guard) and gives it up with its
/// method `$release`.
///
macro_rules! impl_hold {
    ($ty:ty, |$s:ident| $held:expr, $release:ident) => {
        impl $ty {
            fn held_node(&self) -> &$crate::hold::HeldNode {
                let $s = self;
                $held
            }
        }

        #[async_trait::async_trait]
        impl $crate::hold::Hold for $ty {
            fn fencing_token(&self) -> u64 {
                Self::held_node(self).fencing_token()
            }
            fn fence(&self) -> $crate::backend::node::Fence {
                Self::held_node(self).fence()
            }
            fn node_path(&self) -> &str {
                Self::held_node(self).path()
            }
            fn session(&self) -> &$crate::Session {
                Self::held_node(self).session()
            }
            async fn write(
                &self,
                op: $crate::backend::node::Op,
            ) -> $crate::Result<$crate::backend::node::OpResult> {
                Self::held_node(self).write(op).await
            }
            async fn lost(&self) -> $crate::Error {
                Self::held_node(self).lost().await
            }
            async fn release(self: Box<Self>) -> $crate::Result<()> {
                (*self).$release().await
            }
        }
    };
}
pub(crate) use impl_hold;

impl_hold!(HeldNode, |h| h, release);

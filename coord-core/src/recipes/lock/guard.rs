//! [`LockGuard`]: the guard every lock returns.

use std::sync::Arc;

use crate::backend::node::{Fence, Op, OpResult};
use crate::error::{Error, Result};
use crate::hold::held::HeldNode;
use crate::hold::revocation;
use crate::session::Session;
use crate::telemetry;

/// Proof that a lock is held: what every [`Lockable`](crate::prelude::Lockable) returns. Release it
/// with [`LockGuard::release`]; dropping it releases in the background, best
/// effort.
#[must_use = "dropping the guard releases the lock"]
#[derive(Debug)]
pub struct LockGuard(Inner);

#[derive(Debug)]
enum Inner {
    /// The guard's own node.
    Node(HeldNode),
    /// One of the holds of a [`ReentrantLock`](crate::recipes::ReentrantLock)
    /// owner, sharing its guard; the last one out releases it.
    Shared(Arc<LockGuard>),
}

impl LockGuard {
    pub(crate) fn from_held(held: HeldNode) -> Self {
        LockGuard(Inner::Node(held))
    }

    pub(crate) fn shared(guard: Arc<LockGuard>) -> Self {
        LockGuard(Inner::Shared(guard))
    }

    fn held(&self) -> &HeldNode {
        match &self.0 {
            Inner::Node(h) => h,
            Inner::Shared(g) => g.held(),
        }
    }

    /// The fencing token: strictly larger for every later holder of this
    /// lock. Hand it to the resource you protect, and have it refuse
    /// tokens smaller than the largest it has seen.
    pub fn fencing_token(&self) -> u64 {
        self.held().fencing_token()
    }

    /// The fence for guarded writes ([`Session::guarded`]).
    pub fn fence(&self) -> Fence {
        self.held().fence()
    }

    /// The holder's node.
    pub fn node_path(&self) -> &str {
        self.held().path()
    }

    /// The session the lock is held through.
    pub fn session(&self) -> &Session {
        self.held().session()
    }

    /// Write `op` only while the lock is still held, atomically.
    ///
    /// # Errors
    /// [`Error::LockLost`] when it is not; otherwise the op's own.
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may land after the drop.
    pub async fn write(&self, op: Op) -> Result<OpResult> {
        self.held().write(op).await
    }

    /// Resolve when the lock is lost: the session ended, or the node was
    /// deleted under us. Returns why.
    ///
    /// # Errors
    /// None: it resolves *to* the reason the hold was lost.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn lost(&self) -> Error {
        self.held().lost().await
    }

    /// Resolve when a contender asks this holder to release (through
    /// [`Lockable::request_release`](crate::prelude::Lockable::request_release)
    /// or Curator's `Revoker.attemptRevoke`, which write `__REVOKE__` into
    /// the holder's node; Curator's `Revocable`). Nothing happens by
    /// itself: the holder decides whether, and when, to release.
    ///
    /// # Errors
    /// The reason the hold was lost, if it is lost first
    /// ([`Error::LockLost`], the session's end). Connection losses are
    /// waited through.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn revocation_requested(&self) -> Result<()> {
        let held = self.held();
        revocation::requested_at(held.session(), held.path()).await
    }

    /// Release the lock (for a [`ReentrantLock`](crate::recipes::ReentrantLock)
    /// hold: give up this hold; the lock is released when its owner's last
    /// hold goes).
    ///
    /// # Errors
    /// [`Error::LockLost`] when it had already been lost; the session's
    /// errors otherwise.
    ///
    /// # Cancel safety
    /// Cancel safe in effect: dropped, the release finishes in the background.
    pub async fn release(self) -> Result<()> {
        match self.0 {
            Inner::Node(h) => h.release().await,
            Inner::Shared(g) => match Arc::try_unwrap(g) {
                // The owner's last hold: release the lock itself.
                Ok(last) => Box::pin(last.release()).await,
                Err(_others) => Ok(()),
            },
        }
    }
}

crate::hold::impl_hold!(LockGuard, |g| g.held(), release);

impl telemetry::Outcome for LockGuard {
    fn holds(&mut self, f: &mut dyn FnMut(&mut dyn telemetry::Follow)) {
        // A shared (re-entered) hold is followed through its owner's.
        if let Inner::Node(h) = &mut self.0 {
            f(h);
        }
    }
}

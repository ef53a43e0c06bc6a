//! What every guard shares: a node this session holds something through.

use crate::error::{Error, Result};
use crate::primitive::{Created, Fence, Op, OpResult};
use crate::recipes::pending::{delete_if_present, delete_in_background};
use crate::session::Session;

/// A node held by a session: the thing behind every guard (a lock, a lease,
/// a leadership). Deleting it gives up the hold; losing it (the session
/// ends, or someone deletes it) loses the hold.
///
/// Dropping a `HeldNode` without [`HeldNode::release`] deletes its node in
/// the background, best effort; the session's end is the backstop.
#[must_use = "dropping a held node releases it"]
#[derive(Debug)]
pub struct HeldNode {
    session: Session,
    node: Created,
    released: bool,
}

impl HeldNode {
    pub(crate) fn new(session: Session, node: Created) -> Self {
        HeldNode {
            session,
            node,
            released: false,
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

    /// Resolve when the hold is lost: with [`Error::SessionExpired`] or
    /// [`Error::SessionClosed`] when the session ends, or
    /// [`Error::LockLost`] when the node is deleted under it. A suspended
    /// connection is not a loss: the session may come back.
    ///
    /// # Errors
    /// None: it resolves *to* the reason the hold was lost.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn lost(&self) -> Error {
        let path = self.node.path.clone();
        let gone = async {
            let mut backoff = std::time::Duration::from_millis(20);
            loop {
                match self.session.wait_gone(&path).await {
                    Ok(()) => return Error::LockLost { path: path.clone() },
                    Err(e) if e.is_retryable() => {
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(std::time::Duration::from_secs(1));
                    }
                    Err(e) => return e,
                }
            }
        };
        tokio::select! {
            e = self.session.ended() => e,
            e = gone => e,
        }
    }

    /// Give up the hold: delete the node.
    ///
    /// # Errors
    /// [`Error::LockLost`] when the node was already gone (the hold had been
    /// lost before this call: whatever it protected was not protected to
    /// the end); the session's errors otherwise.
    ///
    /// # Cancel safety
    /// Cancel safe in effect: if dropped, the node is deleted in the
    /// background as on `Drop`.
    pub async fn release(mut self) -> Result<()> {
        // If this future is dropped during the delete, `released` is still
        // false and `Drop` deletes in the background.
        let res = self.session.delete(&self.node.path, None).await;
        match res {
            Ok(()) => {
                self.released = true;
                Ok(())
            }
            Err(Error::NotFound { .. }) => {
                self.released = true;
                Err(Error::LockLost {
                    path: self.node.path.clone(),
                })
            }
            Err(e) if e.is_session_end() => {
                self.released = true;
                Err(e)
            }
            // Not known to be deleted: `Drop` tries again in the background.
            Err(e) => Err(e),
        }
    }

    /// Delete the node, treating "already gone" as done.
    pub(crate) async fn discard(mut self) -> Result<()> {
        self.released = true;
        delete_if_present(&self.session, &self.node.path).await
    }
}

impl Drop for HeldNode {
    fn drop(&mut self) {
        if !self.released {
            delete_in_background(self.session.clone(), self.node.path.clone());
        }
    }
}

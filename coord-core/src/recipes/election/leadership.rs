//! The guard of a won election: fencing, guarded writes, `proclaim`,
//! `lost` and `resign`.

use crate::backend::node::{Fence, Op, OpResult};
use crate::error::{Error, Result};
use crate::hold::held::HeldNode;
use crate::path;

/// Leadership won by [`Election::campaign`](super::Election::campaign).
/// Give it up with [`Leadership::resign`]; dropping it resigns in the
/// background, best effort (the session's end is the backstop).
#[must_use = "dropping the leadership resigns it"]
#[derive(Debug)]
pub struct Leadership {
    held: HeldNode,
    value: Vec<u8>,
}

impl Leadership {
    /// Leadership through the offer `held`, made with `value`.
    pub(crate) fn from_held(held: HeldNode, value: Vec<u8>) -> Self {
        Leadership { held, value }
    }

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
    /// observers see the new value on their next read. `value` is any
    /// bytes (`&str`, `String`, `&[u8]`, `Vec<u8>`, `b"…"`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an oversized value; [`Error::LockLost`]
    /// when no longer leader; session errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may land after the drop.
    pub async fn proclaim(&mut self, value: impl AsRef<[u8]>) -> Result<()> {
        let value = value.as_ref();
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

crate::hold::impl_hold!(Leadership, |l| &l.held, resign);

//! Transactions on the in-memory tree: under the store's lock, every fence
//! and every op is checked against the state before any change, then every
//! write is applied. Nothing else runs between the two (the lock is held),
//! and the checks leave nothing for a write to refuse, so a transaction is
//! applied whole or not at all.

use coord_core::{Error, Result, Transaction, TxnFailure, TxnOp, TxnResult, TxnStep};

use crate::tree::{SessionKey, Tree};

impl Tree {
    /// Commit `txn` for the session `owner` (its ephemeral creates are
    /// `owner`'s). `txn` has passed [`Transaction::validate`]: its written
    /// paths are distinct and none lies under another, so no write of it
    /// changes what another of its checks saw.
    pub(crate) fn commit(
        &mut self,
        txn: &Transaction,
        owner: SessionKey,
    ) -> Result<Vec<TxnResult>> {
        for (i, fence) in txn.fences().iter().enumerate() {
            if self.stamp(&fence.path) != Some(fence.stamp) {
                return Err(Error::TransactionFailed {
                    step: TxnStep::Fence(i),
                    path: fence.path.clone(),
                    failure: TxnFailure::FenceLost,
                });
            }
        }
        for (i, op) in txn.ops().iter().enumerate() {
            self.check_op(op)
                .map_err(|e| TxnFailure::refusal(e, TxnStep::Op(i), op.path()))?;
        }
        let mut results = Vec::with_capacity(txn.ops().len());
        for op in txn.ops() {
            results.push(self.apply(op, owner)?);
        }
        Ok(results)
    }

    /// What refuses `op` now, with nothing changed.
    fn check_op(&self, op: &TxnOp) -> Result<()> {
        match op {
            TxnOp::Check { path, version } => self.check_node(path, Some(*version), false),
            TxnOp::Create { path, mode, .. } => self.check_create(path, *mode),
            TxnOp::Set { path, version, .. } => self.check_node(path, *version, false),
            TxnOp::Delete { path, version } => self.check_node(path, *version, true),
            _ => Err(unknown()),
        }
    }

    /// Apply `op`, checked by [`Tree::check_op`].
    fn apply(&mut self, op: &TxnOp, owner: SessionKey) -> Result<TxnResult> {
        match op {
            TxnOp::Check { .. } => Ok(TxnResult::Checked),
            TxnOp::Create { path, data, mode } => self
                .create(path, data, *mode, owner)
                .map(TxnResult::Created),
            TxnOp::Set {
                path,
                data,
                version,
            } => self.set(path, data, *version).map(TxnResult::Set),
            TxnOp::Delete { path, version } => {
                self.delete(path, *version).map(|()| TxnResult::Deleted)
            }
            _ => Err(unknown()),
        }
    }
}

/// An op added to coord-core after this backend: refused before any
/// change, since `check_op` refuses it first.
fn unknown() -> Error {
    Error::NotSupported {
        operation: "this transaction op",
        backend: crate::tree::BACKEND,
    }
}

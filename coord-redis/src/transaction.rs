//! A transaction ([`coord_core::Transaction`]) on Redis: one run of
//! `lua/transaction.lua`, which checks every fence and op before it writes
//! anything, then writes with the single writes' own functions.

use coord_core::{Error, Result, Transaction, TxnLimits, TxnOp, TxnResult, TxnStep};

use crate::error::BACKEND;
use crate::reply::{decode_transaction, flag, version_arg};
use crate::scripts;
use crate::shared::Shared;

/// What one transaction may carry on Redis: ZooKeeper's limits. Redis has
/// none of its own that a transaction meets first (a bulk argument may be
/// 512 MB); these bound how long one script holds the server, which runs
/// nothing else meanwhile.
pub(crate) const LIMITS: TxnLimits = TxnLimits::new(1_000, 1_000_000);

/// The arguments of the transaction script for `txn` (see its header).
fn arguments(txn: &Transaction) -> Result<Vec<Vec<u8>>> {
    let mut args = vec![txn.fences().len().to_string().into_bytes()];
    for fence in txn.fences() {
        args.push(fence.path.clone().into_bytes());
        args.push(fence.stamp.to_string().into_bytes());
    }
    for op in txn.ops() {
        let (kind, data, version, mode): (&[u8], &[u8], _, _) = match op {
            TxnOp::Check { version, .. } => (b"check", b"", Some(*version), None),
            TxnOp::Create { data, mode, .. } => (b"create", data, None, Some(*mode)),
            TxnOp::Set { data, version, .. } => (b"set", data, *version, None),
            TxnOp::Delete { version, .. } => (b"delete", b"", *version, None),
            // An op added to coord-core after this backend: refused
            // before any I/O.
            _ => {
                return Err(Error::NotSupported {
                    operation: "this transaction op",
                    backend: BACKEND,
                })
            }
        };
        // A TTL node's TTL in whole milliseconds, rounded up, as a
        // single create sends it.
        let ttl = mode
            .and_then(|m| m.ttl())
            .map(|t| t.as_nanos().div_ceil(1_000_000).max(1).to_string())
            .unwrap_or_default();
        args.extend([
            kind.to_vec(),
            op.path().as_bytes().to_vec(),
            data.to_vec(),
            version_arg(version),
            flag(mode.is_some_and(|m| m.is_ephemeral())).to_vec(),
            flag(mode.is_some_and(|m| m.is_sequential())).to_vec(),
            ttl.into_bytes(),
        ]);
    }
    Ok(args)
}

/// [`coord_core::backend::PrimitiveSession::transaction`] on Redis.
pub(crate) async fn commit(core: &Shared, txn: &Transaction) -> Result<Vec<TxnResult>> {
    let args = arguments(txn)?;
    let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    match core.call(&scripts::TRANSACTION, &args, None).await {
        Ok(value) => decode_transaction(&value),
        Err(Error::TransactionFailed { step, failure, .. }) => {
            let path = match step {
                TxnStep::Fence(i) => txn.fences().get(i).map(|f| f.path.clone()),
                TxnStep::Op(i) => txn.ops().get(i).map(|o| o.path().to_owned()),
            };
            Err(Error::TransactionFailed {
                step,
                path: path.unwrap_or_default(),
                failure,
            })
        }
        // The script may have run: all of it, or none.
        Err(Error::ConnectionLost(e)) if txn.ops().iter().any(TxnOp::writes) => {
            let first = txn.ops().iter().find(|o| o.writes()).map(TxnOp::path);
            Err(Error::OutcomeUnknown {
                path: first.unwrap_or_default().to_owned(),
                detail: format!(
                    "the answer to this transaction was lost ({e}): all of it or none of it \
                     was applied; read before trying again"
                ),
            })
        }
        Err(e) => Err(e),
    }
}

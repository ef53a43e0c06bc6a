//! A transaction ([`coord_core::Transaction`]) on Redis: one run of
//! `lua/transaction.lua`, which checks every fence and op before it writes
//! anything, then writes with the single writes' own functions; after a
//! lost answer, one run of `lua/txn_outcome.lua` says whether it was
//! applied (and what it answered), and makes sure it never is if not.

use std::sync::atomic::Ordering;
use std::time::Duration;

use coord_core::backend::Backoff;
use coord_core::{Error, Result, Transaction, TxnLimits, TxnOp, TxnResult, TxnStep};
use tokio::time::Instant;

use crate::error::BACKEND;
use crate::reply::{decode_outcome, decode_transaction, flag, version_arg};
use crate::scripts;
use crate::shared::{after, millis, Shared};

/// What one transaction may carry on Redis: 1,000 steps, as on ZooKeeper,
/// and one node's largest data in bytes. Redis has no limit of its own
/// that a transaction meets first (a bulk argument may be 512 MB); these
/// bound how long one script holds the server, which runs nothing else
/// meanwhile.
pub(crate) const LIMITS: TxnLimits = TxnLimits::new(1_000, coord_core::path::MAX_DATA_LEN);

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

/// [`coord_core::backend::PrimitiveSession::transaction`] on Redis. A
/// transaction that writes has a number in the session, under which the
/// script keeps its answer for twice the session timeout (and a request
/// timeout): after a lost answer, [`recover`] reads it.
pub(crate) async fn commit(core: &Shared, txn: &Transaction) -> Result<Vec<TxnResult>> {
    let writes = txn.ops().iter().any(TxnOp::writes);
    let number = if writes {
        core.transactions
            .fetch_add(1, Ordering::Relaxed)
            .to_string()
    } else {
        String::new()
    };
    let keep = millis(
        core.ttl
            .saturating_mul(2)
            .saturating_add(core.request_timeout),
    )
    .to_string();
    let mut args = vec![number.clone().into_bytes(), keep.clone().into_bytes()];
    args.extend(arguments(txn)?);
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
        Err(Error::ConnectionLost(lost)) if writes => {
            recover(core, txn, [number.as_bytes(), keep.as_bytes()], &lost).await
        }
        Err(e) => Err(e),
    }
}

/// After the answer to the transaction numbered `marker[0]` was lost: its
/// kept answer, or `ConnectionLost` when it was not applied (and, marked
/// so, never will be). Asked again while the connection is down, for up to
/// a session timeout; `OutcomeUnknown` when no answer came.
async fn recover(
    core: &Shared,
    txn: &Transaction,
    marker: [&[u8]; 2],
    lost: &str,
) -> Result<Vec<TxnResult>> {
    let deadline = after(Instant::now(), core.ttl);
    let backoff = Backoff::new(Duration::from_millis(25), Duration::from_secs(1));
    let mut attempt = 0;
    loop {
        tracing::debug!(session = %core.sid, "redis transaction answer lost; asking what became of it");
        match core.call(&scripts::TXN_OUTCOME, &marker, None).await {
            Ok(value) => {
                return match decode_outcome(&value)? {
                    Some(results) => Ok(results),
                    None => Err(Error::ConnectionLost(format!(
                        "the answer to this transaction was lost ({lost}); it was not applied, \
                         and now never will be"
                    ))),
                }
            }
            Err(Error::ConnectionLost(_)) if deadline.is_none_or(|d| Instant::now() < d) => {}
            Err(e) => {
                let first = txn.ops().iter().find(|o| o.writes()).map(TxnOp::path);
                return Err(Error::OutcomeUnknown {
                    path: first.unwrap_or_default().to_owned(),
                    detail: format!(
                        "the answer to this transaction was lost ({lost}) and what became of \
                         it could not be read ({e}): all of it or none of it was applied; \
                         read before trying again"
                    ),
                });
            }
        }
        backoff.sleep(&mut attempt).await;
    }
}

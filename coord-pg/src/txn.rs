//! Transactions: one call of `<schema>.txn` with the fences and the ops as
//! parallel arrays. The function checks every fence, then every op against
//! the state before any write, then applies the writes; a refusal names
//! its step in the error's DETAIL (`fence:I`, `op:I`) and rolls the whole
//! statement back, so nothing of it is applied.
//!
//! An answer lost with the connection is `OutcomeUnknown`: the request may
//! have committed before the connection went.

use coord_core::{CreateMode, Error, Result, Transaction, TxnFailure, TxnOp, TxnResult, TxnStep};
use tokio_postgres::types::Type;

use crate::error::BACKEND;
use crate::link::Param;
use crate::rows::{created_at, stat_at, version_arg};
use tokio_postgres::Row;

/// The columns of `<schema>.txn`'s rows.
pub(crate) const COLUMNS: &str = "kind, path, seq, version, stamp, owner, ctime";

/// A transaction as the function's parallel arrays.
pub(crate) struct Arrays<'a> {
    fpaths: Vec<&'a str>,
    fstamps: Vec<i64>,
    kinds: Vec<&'static str>,
    paths: Vec<&'a str>,
    datas: Vec<&'a [u8]>,
    versions: Vec<Option<i64>>,
    ephemerals: Vec<bool>,
    sequentials: Vec<bool>,
    ttls: Vec<Option<i64>>,
}

impl<'a> Arrays<'a> {
    /// `txn` as arrays.
    ///
    /// # Errors
    /// `NotSupported` for an op this backend does not know.
    pub(crate) fn of(txn: &'a Transaction) -> Result<Self> {
        let n = txn.ops().len();
        let mut a = Arrays {
            fpaths: txn.fences().iter().map(|f| f.path.as_str()).collect(),
            fstamps: txn
                .fences()
                .iter()
                .map(|f| i64::try_from(f.stamp).unwrap_or(i64::MAX))
                .collect(),
            kinds: Vec::with_capacity(n),
            paths: Vec::with_capacity(n),
            datas: Vec::with_capacity(n),
            versions: Vec::with_capacity(n),
            ephemerals: Vec::with_capacity(n),
            sequentials: Vec::with_capacity(n),
            ttls: Vec::with_capacity(n),
        };
        for op in txn.ops() {
            let (kind, data, version, mode) = match op {
                TxnOp::Check { version, .. } => ("check", &[][..], Some(*version), None),
                TxnOp::Create { data, mode, .. } => ("create", data.as_slice(), None, Some(*mode)),
                TxnOp::Set { data, version, .. } => ("set", data.as_slice(), *version, None),
                TxnOp::Delete { version, .. } => ("delete", &[][..], *version, None),
                _ => {
                    return Err(Error::NotSupported {
                        operation: "this transaction op",
                        backend: BACKEND,
                    })
                }
            };
            let mode = mode.unwrap_or(CreateMode::Persistent);
            a.kinds.push(kind);
            a.paths.push(op.path());
            a.datas.push(data);
            a.versions.push(version_arg(version));
            a.ephemerals.push(mode.is_ephemeral());
            a.sequentials.push(mode.is_sequential());
            a.ttls.push(
                mode.ttl()
                    .map(|t| i64::try_from(t.as_millis()).unwrap_or(i64::MAX)),
            );
        }
        Ok(a)
    }

    /// The function's parameters after the session id.
    pub(crate) fn params(&self) -> [Param<'_>; 9] {
        [
            (&self.fpaths, Type::TEXT_ARRAY),
            (&self.fstamps, Type::INT8_ARRAY),
            (&self.kinds, Type::TEXT_ARRAY),
            (&self.paths, Type::TEXT_ARRAY),
            (&self.datas, Type::BYTEA_ARRAY),
            (&self.versions, Type::INT8_ARRAY),
            (&self.ephemerals, Type::BOOL_ARRAY),
            (&self.sequentials, Type::BOOL_ARRAY),
            (&self.ttls, Type::INT8_ARRAY),
        ]
    }
}

/// The server's error for `txn`: its refusal when it names a step.
pub(crate) fn server_error(e: tokio_postgres::Error, txn: &Transaction) -> Error {
    let step_paths = |step: TxnStep| match step {
        TxnStep::Fence(i) => txn.fences().get(i).map(|f| f.path.clone()),
        TxnStep::Op(i) => txn.ops().get(i).map(|o| o.path().to_owned()),
    };
    let named = e
        .as_db_error()
        .and_then(|db| step_of(db.detail()?, db.code().code(), step_paths));
    named.unwrap_or_else(|| crate::error::map(e, ""))
}

/// The results of a committed transaction of `n` ops, in op order.
///
/// # Errors
/// A backend error when the server answered another number of rows.
pub(crate) fn results(rows: &[Row], n: usize) -> Result<Vec<TxnResult>> {
    if rows.len() != n {
        return Err(Error::backend(
            BACKEND,
            std::io::Error::other(format!(
                "the transaction answered {} results for {n} ops",
                rows.len()
            )),
        ));
    }
    Ok(rows
        .iter()
        .map(|r| match r.get::<_, &str>(0) {
            "check" => TxnResult::Checked,
            // A create's row: path, seq, version, stamp.
            "create" => TxnResult::Created(created_row(r)),
            "set" => TxnResult::Set(stat_at(r, 3)),
            _ => TxnResult::Deleted,
        })
        .collect())
}

/// A create's row (`kind, path, seq, version, stamp, …`) as `created_at`
/// reads it (`path, seq, stamp`).
fn created_row(r: &tokio_postgres::Row) -> coord_core::Created {
    let c = created_at(r, 1);
    let stamp: i64 = r.get(4);
    coord_core::Created::new(
        c.path,
        c.sequence,
        u64::try_from(stamp).unwrap_or_default(),
        0,
    )
}

/// `e` as the transaction's refusal when the server named a step; a lost
/// answer as `OutcomeUnknown` when the request was sent.
pub(crate) fn lost(e: Error, txn: &Transaction, was_connected: bool) -> Error {
    if let Error::ConnectionLost(m) = &e {
        if was_connected {
            return Error::OutcomeUnknown {
                path: txn
                    .ops()
                    .first()
                    .map(|o| o.path().to_owned())
                    .unwrap_or_default(),
                detail: format!(
                    "a transaction's answer was lost ({m}): it was applied whole or not at all"
                ),
            };
        }
        return e;
    }
    e
}

/// The step a refusal's DETAIL names (`fence:I`, `op:I`), and its failure.
fn step_of(
    detail: &str,
    code: &str,
    txn_paths: impl Fn(TxnStep) -> Option<String>,
) -> Option<Error> {
    let (kind, index) = detail.split_once(':')?;
    let index: usize = index.parse().ok()?;
    let step = match kind {
        "fence" => TxnStep::Fence(index),
        "op" => TxnStep::Op(index),
        _ => return None,
    };
    let failure = match code {
        "CXFEN" => TxnFailure::FenceLost,
        "CXNON" => TxnFailure::NoNode,
        "CXEXI" => TxnFailure::NodeExists,
        "CXVER" => TxnFailure::VersionConflict,
        "CXNEM" => TxnFailure::NotEmpty,
        _ => return None,
    };
    Some(Error::TransactionFailed {
        step,
        path: txn_paths(step)?,
        failure,
    })
}

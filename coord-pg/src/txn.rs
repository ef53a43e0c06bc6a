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
use crate::session::{created_at, stat_at, version_arg, PgSession};

/// Commit `txn` on `session` (see the module's docs).
///
/// # Errors
/// `TransactionFailed` naming the step refused; `OutcomeUnknown` when the
/// answer was lost; `ConnectionLost` when there was no connection to send
/// it on (nothing applied); the session's end.
pub(crate) async fn commit(session: &PgSession, txn: &Transaction) -> Result<Vec<TxnResult>> {
    let fpaths: Vec<&str> = txn.fences().iter().map(|f| f.path.as_str()).collect();
    let fstamps: Vec<i64> = txn
        .fences()
        .iter()
        .map(|f| i64::try_from(f.stamp).unwrap_or(i64::MAX))
        .collect();
    let n = txn.ops().len();
    let mut kinds = Vec::with_capacity(n);
    let mut paths = Vec::with_capacity(n);
    let mut datas: Vec<&[u8]> = Vec::with_capacity(n);
    let mut versions = Vec::with_capacity(n);
    let mut ephemerals = Vec::with_capacity(n);
    let mut sequentials = Vec::with_capacity(n);
    let mut ttls = Vec::with_capacity(n);
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
        kinds.push(kind);
        paths.push(op.path());
        datas.push(data);
        versions.push(version_arg(version));
        ephemerals.push(mode.is_ephemeral());
        sequentials.push(mode.is_sequential());
        ttls.push(
            mode.ttl()
                .map(|t| i64::try_from(t.as_millis()).unwrap_or(i64::MAX)),
        );
    }
    let connected = session.link.connected();
    let step_paths = |step: TxnStep| match step {
        TxnStep::Fence(i) => txn.fences().get(i).map(|f| f.path.clone()),
        TxnStep::Op(i) => txn.ops().get(i).map(|o| o.path().to_owned()),
    };
    let mapper = |e: tokio_postgres::Error| {
        let named = e
            .as_db_error()
            .and_then(|db| step_of(db.detail()?, db.code().code(), step_paths));
        named.unwrap_or_else(|| crate::error::map(e, ""))
    };
    let rows = session
        .call_mapped(
            "kind, path, seq, version, stamp, owner, ctime",
            "txn",
            &[
                (&fpaths, Type::TEXT_ARRAY),
                (&fstamps, Type::INT8_ARRAY),
                (&kinds, Type::TEXT_ARRAY),
                (&paths, Type::TEXT_ARRAY),
                (&datas, Type::BYTEA_ARRAY),
                (&versions, Type::INT8_ARRAY),
                (&ephemerals, Type::BOOL_ARRAY),
                (&sequentials, Type::BOOL_ARRAY),
                (&ttls, Type::INT8_ARRAY),
            ],
            &mapper,
        )
        .await
        .map_err(|e| refusal(e, txn, connected))?;
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
fn refusal(e: Error, txn: &Transaction, was_connected: bool) -> Error {
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

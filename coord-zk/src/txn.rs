//! Transactions on ZooKeeper: one `multi`.
//!
//! 1. **Read the fences.** ZooKeeper's multi checks a node's data version,
//!    not its czxid (coord's stamp), so each fence is read first (`exists`):
//!    missing, or made again (another czxid), is `FenceLost` at once.
//! 2. **One multi**, in this order: a version check of every fence (the
//!    version just read: the check fails if the node was deleted or its
//!    data changed meanwhile), then every check op, then every write in op
//!    order. ZooKeeper applies a multi whole or not at all and names the
//!    first op that failed; its index maps back to the user's step. Checks
//!    come before writes, so they see the state before the transaction.
//! 3. **Retry what is not a refusal**: a fence whose data changed between
//!    the read and the multi is read again; a create whose parent is
//!    missing gets its parents made (containers, as `create` makes them)
//!    and the multi is sent again. An answer lost with the connection is
//!    `OutcomeUnknown` (the multi landed whole or not at all, and nothing
//!    here can tell which); a request that could not be sent is
//!    `ConnectionLost`.
//!
//! The fence's one gap is the guarded write's (see `guarded.rs`): a fence
//! node deleted and made again at the same path with the same data
//! version between the read and the multi passes; lock nodes are
//! sequential, their paths never repeat.

use coord_core::path::parent;
use coord_core::{Error, Fence, Result, Transaction, TxnFailure, TxnOp, TxnResult, TxnStep};
use zookeeper_client as zk;

use crate::create::{zk_options, zk_version, CreateTarget};
use crate::error::BACKEND;
use crate::error::{is_connection_error, Target};
use crate::handle::{Handle, MAX_PARENT_ROUNDS};
use crate::stat::{stamp_of, stat_of};

/// How often a transaction reads its fences again when a fence node's
/// data changed between the read and the multi.
const MAX_FENCE_ROUNDS: usize = 16;

/// Where each entry of the multi came from.
#[derive(Clone, Copy)]
enum Entry {
    Fence(usize),
    Op(usize),
}

/// Why one attempt did not finish.
enum Attempt {
    Done(Error),
    FenceMoved,
    /// The create at this op index has no parent.
    NoParent(usize),
}

impl Handle {
    /// Commit `txn` as one multi; see the module docs.
    pub(crate) async fn transaction(&self, txn: &Transaction) -> Result<Vec<TxnResult>> {
        let targets: Vec<Option<CreateTarget>> = txn
            .ops()
            .iter()
            .map(|op| match op {
                TxnOp::Create { path, mode, .. } => Some(CreateTarget::new(path, *mode)),
                _ => None,
            })
            .collect();
        let mut fence_rounds = 0;
        let mut parent_rounds = 0;
        loop {
            match self.transaction_once(txn, &targets).await {
                Ok(results) => return Ok(results),
                Err(Attempt::Done(e)) => return Err(e),
                Err(Attempt::FenceMoved) if fence_rounds < MAX_FENCE_ROUNDS => fence_rounds += 1,
                Err(Attempt::FenceMoved) => {
                    return Err(Error::ConnectionLost(
                        "a fence kept changing under a transaction".into(),
                    ))
                }
                Err(Attempt::NoParent(i)) if parent_rounds < MAX_PARENT_ROUNDS => {
                    parent_rounds += 1;
                    self.make_parents(parent(txn.ops()[i].path())).await?;
                }
                Err(Attempt::NoParent(i)) => {
                    let path = txn.ops()[i].path();
                    return Err(Error::NotFound {
                        path: parent(path).to_owned(),
                    });
                }
            }
        }
    }

    /// One attempt: read the fences, then one multi.
    async fn transaction_once(
        &self,
        txn: &Transaction,
        targets: &[Option<CreateTarget>],
    ) -> std::result::Result<Vec<TxnResult>, Attempt> {
        let first = txn
            .ops()
            .iter()
            .find(|op| op.writes())
            .unwrap_or(&txn.ops()[0]);
        let mut versions = Vec::with_capacity(txn.fences().len());
        for (i, fence) in txn.fences().iter().enumerate() {
            versions.push(self.fence_version(i, fence).await?);
        }
        let client = self
            .writer(Target::path(first.path()))
            .map_err(Attempt::Done)?;
        let mut writer = client.new_multi_writer();
        let mut entries = Vec::with_capacity(versions.len() + txn.ops().len());
        for (i, (fence, version)) in txn.fences().iter().zip(&versions).enumerate() {
            entries.push(Entry::Fence(i));
            add(writer.add_check_version(&fence.path, *version))?;
        }
        for (i, op) in txn.ops().iter().enumerate() {
            if let TxnOp::Check { path, version } = op {
                entries.push(Entry::Op(i));
                match i32::try_from(*version) {
                    Ok(v) => add(writer.add_check_version(path, v))?,
                    // A version that does not fit never matches.
                    Err(_) => return Err(refused(i, path, TxnFailure::VersionConflict)),
                }
            }
        }
        for (i, op) in txn.ops().iter().enumerate() {
            let added = match (op, &targets[i]) {
                (TxnOp::Check { .. }, _) => continue,
                (TxnOp::Create { data, mode, .. }, Some(target)) => {
                    writer.add_create(&target.path, data, &zk_options(*mode, self.acls))
                }
                (
                    TxnOp::Set {
                        path,
                        data,
                        version,
                    },
                    _,
                ) => match zk_version(path, *version) {
                    Ok(v) => writer.add_set_data(path, data, v),
                    Err(_) => return Err(refused(i, path, TxnFailure::VersionConflict)),
                },
                (TxnOp::Delete { path, version }, _) => match zk_version(path, *version) {
                    Ok(v) => writer.add_delete(path, v),
                    Err(_) => return Err(refused(i, path, TxnFailure::VersionConflict)),
                },
                _ => {
                    return Err(Attempt::Done(Error::NotSupported {
                        operation: "this transaction op",
                        backend: BACKEND,
                    }))
                }
            };
            entries.push(Entry::Op(i));
            add(added)?;
        }
        let results = match writer.commit().await {
            Ok(results) => results,
            Err(zk::MultiWriteError::OperationFailed { index, source }) => {
                return Err(self.failed(txn, entries.get(index).copied(), source));
            }
            Err(zk::MultiWriteError::RequestFailed { source }) if is_connection_error(&source) => {
                return Err(Attempt::Done(if txn.ops().iter().any(TxnOp::writes) {
                    Error::OutcomeUnknown {
                        path: first.path().to_owned(),
                        detail: format!(
                            "{source}: the answer to a transaction of {} ops was lost; it was \
                             applied whole or not at all, and not sent again",
                            txn.ops().len()
                        ),
                    }
                } else {
                    self.map(source, Target::path(first.path()))
                }));
            }
            Err(zk::MultiWriteError::RequestFailed { source }) => {
                return Err(Attempt::Done(self.map(source, Target::path(first.path()))));
            }
        };
        if results.len() != entries.len() {
            return Err(Attempt::Done(unexpected("the wrong number of results")));
        }
        let mut out: Vec<Option<TxnResult>> = vec![None; txn.ops().len()];
        for (entry, result) in entries.into_iter().zip(results) {
            let Entry::Op(i) = entry else { continue };
            out[i] = Some(match (result, &txn.ops()[i], &targets[i]) {
                (zk::MultiWriteResult::Check, TxnOp::Check { .. }, _) => TxnResult::Checked,
                (zk::MultiWriteResult::Create { path, stat }, TxnOp::Create { .. }, Some(t)) => {
                    let (path, sequence) = t.made(Some(&path), None);
                    TxnResult::Created(
                        self.complete(path, sequence, stat)
                            .await
                            .map_err(Attempt::Done)?,
                    )
                }
                (zk::MultiWriteResult::SetData { stat }, TxnOp::Set { .. }, _) => {
                    TxnResult::Set(stat_of(&stat))
                }
                (zk::MultiWriteResult::Delete, TxnOp::Delete { .. }, _) => TxnResult::Deleted,
                _ => return Err(Attempt::Done(unexpected("a result of another kind"))),
            });
        }
        out.into_iter()
            .map(|r| r.ok_or_else(|| Attempt::Done(unexpected("no result for an op"))))
            .collect()
    }

    /// The data version of fence `i`'s node, when it holds.
    async fn fence_version(&self, i: usize, fence: &Fence) -> std::result::Result<i32, Attempt> {
        // Read once, on a live connection: a transaction is a write, and
        // fails at once while the session is suspended.
        let read = self
            .writer(Target::path(&fence.path))
            .map_err(Attempt::Done)?
            .check_stat(&fence.path)
            .await;
        match read {
            Ok(Some(stat)) if stamp_of(&stat) == fence.stamp => Ok(stat.version),
            Ok(_) => Err(fence_lost(i, fence)),
            Err(e) => Err(Attempt::Done(self.map(e, Target::path(&fence.path)))),
        }
    }

    /// The refusal of the multi at `entry`.
    fn failed(&self, txn: &Transaction, entry: Option<Entry>, source: zk::Error) -> Attempt {
        match entry {
            Some(Entry::Fence(i)) => {
                let fence = &txn.fences()[i];
                match source {
                    zk::Error::BadVersion => Attempt::FenceMoved,
                    zk::Error::NoNode => fence_lost(i, fence),
                    e => Attempt::Done(self.map(e, Target::path(&fence.path))),
                }
            }
            Some(Entry::Op(i)) => {
                let op = &txn.ops()[i];
                match (source, op) {
                    (zk::Error::NoNode, TxnOp::Create { .. }) => Attempt::NoParent(i),
                    (e, op) => Attempt::Done(TxnFailure::refusal(
                        self.map(e, Target::path(op.path())),
                        TxnStep::Op(i),
                        op.path(),
                    )),
                }
            }
            None => Attempt::Done(unexpected("a failure at an index it was not sent")),
        }
    }
}

/// An op added to the multi, or the error that stops the attempt.
fn add(added: std::result::Result<(), zk::Error>) -> std::result::Result<(), Attempt> {
    added.map_err(|e| Attempt::Done(Error::backend(BACKEND, e)))
}

fn refused(i: usize, path: &str, failure: TxnFailure) -> Attempt {
    Attempt::Done(Error::TransactionFailed {
        step: TxnStep::Op(i),
        path: path.to_owned(),
        failure,
    })
}

fn fence_lost(i: usize, fence: &Fence) -> Attempt {
    Attempt::Done(Error::TransactionFailed {
        step: TxnStep::Fence(i),
        path: fence.path.clone(),
        failure: TxnFailure::FenceLost,
    })
}

fn unexpected(what: &str) -> Error {
    Error::backend(
        BACKEND,
        zk::Error::UnexpectedError(format!("multi answered with {what}")),
    )
}

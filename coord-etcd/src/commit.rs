//! Committing a transaction on etcd ([`crate::transaction`]'s one Txn):
//! TTL leases granted before it is sent; when a create finds no parent,
//! the parents made and the Txn sent again; the answer read into results
//! or `TransactionFailed`, and the bookkeeping of single writes after it.

use coord_core::{
    CreateMode, Error, Result, Transaction, TxnFailure, TxnLimits, TxnOp, TxnResult, TxnStep,
};

use crate::error;
use crate::etcd_session::EtcdSession;
use crate::listing::{parent_of, DeletingGuard};
use crate::transaction::{Failed, Planned, Step, MAX_REQUEST_BYTES, MAX_TXN_OPS, OPS_PER_STEP};
use crate::txn::{DeletePlan, FenceKey, Plan, SetPlan};

/// How many times a transaction is sent: again after making the parents
/// a create found missing (which may go again before the Txn).
const PARENT_RETRIES: usize = 8;

/// What one transaction may carry on etcd (see the crate docs).
pub(crate) const LIMITS: TxnLimits =
    TxnLimits::new(MAX_TXN_OPS / OPS_PER_STEP, coord_core::path::MAX_DATA_LEN);

impl EtcdSession {
    /// [`coord_core::backend::PrimitiveSession::transaction`] on etcd.
    pub(crate) async fn commit(&self, txn: &Transaction) -> Result<Vec<TxnResult>> {
        self.shared.check_open()?;
        let mut planned = self.plan(txn)?;
        if planned.etcd_ops() > MAX_TXN_OPS || planned.wire_size() > MAX_REQUEST_BYTES {
            return Err(Error::InvalidArgument(format!(
                "this transaction would be an etcd Txn of {} ops and about {} bytes, over \
                 etcd's default limits of {MAX_TXN_OPS} ops (--max-txn-ops) and 1.5 MiB \
                 (--max-request-bytes); split it, or shorten its paths",
                planned.etcd_ops(),
                planned.wire_size()
            )));
        }
        // A TTL node's key goes on a lease of its own (see `crate::ttl`).
        let mut granted = Vec::new();
        for (op, step) in txn.ops().iter().zip(planned.steps.iter_mut()) {
            if let (TxnOp::Create { mode, .. }, Step::Write(Plan::Create(c))) = (op, step) {
                if let Some(ttl) = mode.ttl() {
                    match crate::ttl::grant(&self.shared, ttl).await {
                        Ok(lease) => {
                            (c.lease, c.own_lease) = (lease, lease);
                            granted.push(lease);
                        }
                        Err(e) => {
                            self.revoke_all(&granted).await;
                            return Err(e);
                        }
                    }
                }
            }
        }
        let done = self.commit_planned(txn, &planned).await;
        // Not after `OutcomeUnknown`: the nodes may be on them.
        if matches!(&done, Err(e) if !matches!(e, Error::OutcomeUnknown { .. })) {
            self.revoke_all(&granted).await;
        }
        done
    }

    /// The plan of `txn`: each op as its single write plans it; a create
    /// compares its parent alone (made by [`EtcdSession::make_parents`]
    /// when missing).
    fn plan(&self, txn: &Transaction) -> Result<Planned> {
        let keys = &self.shared.keys;
        let fences = txn
            .fences()
            .iter()
            .map(|f| FenceKey {
                path: f.path.clone(),
                key: keys.key(&f.path),
                stamp: f.stamp,
            })
            .collect();
        let steps = txn
            .ops()
            .iter()
            .map(|op| match op {
                TxnOp::Check { path, version } => Ok(Step::Check {
                    path: path.clone(),
                    key: keys.key(path),
                    version: *version,
                }),
                TxnOp::Create { path, data, mode } => {
                    let mut c = self.create_plan(path, data, *mode);
                    c.parent_known = true;
                    Ok(Step::Write(Plan::Create(c)))
                }
                TxnOp::Set {
                    path,
                    data,
                    version,
                } => Ok(Step::Write(Plan::Set(SetPlan {
                    path: path.clone(),
                    key: keys.key(path),
                    data: data.clone(),
                    version: *version,
                }))),
                TxnOp::Delete { path, version } => Ok(Step::Write(Plan::Delete(DeletePlan {
                    path: path.clone(),
                    key: keys.key(path),
                    child_prefix: keys.child_prefix(path),
                    version: *version,
                    created: self.created(path),
                }))),
                // An op added to coord-core after this backend: refused
                // before any I/O.
                _ => Err(Error::NotSupported {
                    operation: "this transaction op",
                    backend: crate::error::BACKEND,
                }),
            })
            .collect::<Result<_>>()?;
        Ok(Planned { fences, steps })
    }

    /// Send the Txn; when a create found no parent, make the parents and
    /// send it again.
    async fn commit_planned(&self, txn: &Transaction, planned: &Planned) -> Result<Vec<TxnResult>> {
        let shared = &self.shared;
        let _deleting: Vec<DeletingGuard<'_>> = planned
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Write(Plan::Delete(d)) => {
                    Some(DeletingGuard::new(self, &d.path, d.created.is_some()))
                }
                _ => None,
            })
            .collect();
        let read_only = planned.read_only();
        let request = planned.build();
        for attempt in 0..PARENT_RETRIES {
            if attempt > 0 {
                self.make_parents(planned).await?;
            }
            let sent = shared
                .call_tracked(read_only, || {
                    let mut kv = shared.kv_client();
                    let request = request.clone();
                    async move { kv.txn(request).await }
                })
                .await;
            let resp = match sent {
                Ok(resp) => resp,
                Err((e, true)) if e.is_retryable() && !read_only => {
                    return Err(Error::OutcomeUnknown {
                        path: planned.first_written().unwrap_or_default().to_owned(),
                        detail: format!(
                            "the answer to this transaction was lost ({e}): all of it or none \
                             of it was applied; read before trying again"
                        ),
                    })
                }
                Err((e, _)) => return Err(e),
            };
            shared.saw_header(resp.header());
            match planned.interpret(&resp)? {
                Ok(results) => return Ok(self.committed(planned, &resp, results).await),
                Err(Failed::Step(step, failure)) => {
                    if let (TxnStep::Op(i), TxnFailure::NoNode) = (step, failure) {
                        // This session's contender node found gone: its
                        // name is lent again, as after a single delete.
                        if let Some(Step::Write(Plan::Delete(d))) = planned.steps.get(i) {
                            let gone = Err::<(), _>(Error::NotFound {
                                path: d.path.clone(),
                            });
                            self.deleted(&d.path, d.created, &gone);
                        }
                    }
                    let path = match step {
                        TxnStep::Fence(i) => txn.fences().get(i).map(|f| f.path.clone()),
                        TxnStep::Op(i) => txn.ops().get(i).map(|o| o.path().to_owned()),
                    };
                    return Err(Error::TransactionFailed {
                        step,
                        path: path.unwrap_or_default(),
                        failure,
                    });
                }
                Err(Failed::Other(e)) => return Err(e),
                Err(Failed::Parent) => {
                    tracing::debug!("a transaction's create has no parent; making it");
                }
            }
        }
        Err(error::unexpected(
            "a transaction's parents kept going before its Txn",
        ))
    }

    /// Make every create's parent, as a create of it does (with its
    /// missing ancestors); one there already is fine (the Txn's compares
    /// say whether it is plain). After a lost answer, a parent found there
    /// is fine too, whoever made it.
    async fn make_parents(&self, planned: &Planned) -> Result<()> {
        let mut made: Vec<&str> = Vec::new();
        for c in planned.creates() {
            let Some(key) = c.known_parent() else {
                continue;
            };
            let parent = parent_of(&c.path);
            if made.contains(&parent) {
                continue;
            }
            let plan = self.create_plan(parent, b"", CreateMode::Persistent);
            match self.write(Plan::Create(plan), None).await {
                Ok(_) | Err(Error::AlreadyExists { .. }) => made.push(parent),
                Err(e) if e.is_retryable() => {
                    let there = self.shared.get(key, None).await;
                    if !there.is_ok_and(|r| !r.kvs().is_empty()) {
                        return Err(e);
                    }
                    made.push(parent);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// After a committed Txn: the bookkeeping of single writes (names
    /// lent again, TTL leases of deleted nodes revoked, a
    /// TTL node's set restarting its TTL).
    async fn committed(
        &self,
        planned: &Planned,
        resp: &etcd_client::TxnResponse,
        mut results: Vec<TxnResult>,
    ) -> Vec<TxnResult> {
        let shared = &self.shared;
        for step in &planned.steps {
            if let Step::Write(Plan::Delete(d)) = step {
                self.deleted(&d.path, d.created, &Ok(()));
            }
        }
        for lease in planned.deleted_leases(resp) {
            crate::ttl::forget_deleted(shared, lease).await;
        }
        for result in &mut results {
            let TxnResult::Set(stat) = result else {
                continue;
            };
            match crate::ttl::ttl_lease(shared, stat).await {
                Ok(None) => {}
                Ok(Some(lease)) => {
                    if let Err(e) = crate::ttl::restart(shared, lease).await {
                        tracing::warn!(error = %e, "a transaction set a TTL node, whose TTL may run from its previous change");
                    }
                    *stat = crate::ttl::persistent(stat.clone());
                }
                Err(e) => {
                    tracing::warn!(error = %e, "a transaction set a node that may be a TTL node; its TTL may run from its previous change");
                }
            }
        }
        results
    }

    /// Revoke the TTL leases granted for a transaction not applied.
    async fn revoke_all(&self, leases: &[i64]) {
        for &lease in leases {
            crate::ttl::revoke(&self.shared, lease).await;
        }
    }
}

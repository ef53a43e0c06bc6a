//! A coord [`Transaction`](coord_core::Transaction) as one etcd Txn: the
//! single writes of [`crate::txn`] side by side. Its compares are every
//! fence's (as a guarded write's), every check's and every write's own; its
//! success branch every write's op; its failure branch reads that tell
//! which compare failed, first fences, then ops in their order.
//!
//! etcd evaluates every compare of a Txn against the store before the Txn,
//! so checks see the state before the writes, as the contract says. A
//! create's parent is compared alone (there, and not ephemeral), as
//! [`CreatePlan::parent_known`] does: when one is missing, the session
//! makes the parents and sends the Txn again (`crate::commit`). So one step costs at most
//! [`OPS_PER_STEP`] etcd ops in each branch, whatever the depth.

use coord_core::{Error, Result, TxnFailure, TxnResult, TxnStep};
use etcd_client::{Compare, CompareOp, GetOptions, Txn, TxnOp, TxnOpResponse, TxnResponse};

use crate::error::{ephemeral_parent, unexpected};
use crate::txn::{first_kv, rev, urev, CreatePlan, FenceKey, Plan};

/// etcd ops one step may cost, in the compares or in either branch: a
/// create compares its key and its parent twice (there, not ephemeral); a
/// delete reads its key and counts its children.
pub(crate) const OPS_PER_STEP: usize = 3;

/// etcd's default `--max-txn-ops`: ops in a Txn's compares, or in either
/// of its branches.
pub(crate) const MAX_TXN_OPS: usize = 128;

/// etcd's default `--max-request-bytes` (1.5 MiB), less room for what
/// [`Planned::wire_size`] does not count.
pub(crate) const MAX_REQUEST_BYTES: usize = 1_536 * 1_024 - 16 * 1_024;

/// One op of a transaction, planned.
#[derive(Debug, Clone)]
pub(crate) enum Step {
    /// The node at `key` has version (mod revision) `version`.
    Check {
        path: String,
        key: String,
        version: u64,
    },
    /// A create, set or delete, as a single write plans it.
    Write(Plan),
}

/// Why one step of a transaction failed, read from the failure branch.
#[derive(Debug)]
pub(crate) enum Failed {
    /// The step did not hold: `TransactionFailed`.
    Step(TxnStep, TxnFailure),
    /// A create's parent is gone since the session made it: make it and
    /// send again.
    Parent,
    /// Any other error (a child asked for under an ephemeral node).
    Other(Error),
}

/// A whole transaction, planned.
#[derive(Debug, Clone)]
pub(crate) struct Planned {
    pub fences: Vec<FenceKey>,
    pub steps: Vec<Step>,
}

impl Step {
    /// The op's node (a sequential create's with its suffix).
    pub(crate) fn path(&self) -> &str {
        match self {
            Step::Check { path, .. } => path,
            Step::Write(Plan::Create(c) | Plan::Put(c)) => &c.path,
            Step::Write(Plan::Set(s)) => &s.path,
            Step::Write(Plan::Delete(d)) => &d.path,
        }
    }

    fn compares(&self) -> Vec<Compare> {
        match self {
            // A missing key's mod revision is 0, which no version is:
            // version 0 compares with -1, which none is either.
            Step::Check { key, version, .. } => vec![Compare::mod_revision(
                key.as_str(),
                CompareOp::Equal,
                if *version == 0 { -1 } else { rev(*version) },
            )],
            Step::Write(p) => p.compares(),
        }
    }

    fn then_ops(&self) -> Vec<TxnOp> {
        match self {
            Step::Check { .. } => Vec::new(),
            Step::Write(p) => p.then_ops(),
        }
    }

    fn else_ops(&self) -> Vec<TxnOp> {
        let keys_only = || Some(GetOptions::new().with_keys_only());
        match self {
            Step::Check { key, .. } => vec![TxnOp::get(key.as_str(), keys_only())],
            // The key, and the parent (a create that compares its parent
            // alone reads only its key).
            Step::Write(Plan::Create(c)) => {
                let mut ops = Plan::Create(c.clone()).else_ops();
                ops.extend(c.known_parent().map(|p| TxnOp::get(p, keys_only())));
                ops
            }
            Step::Write(p) => p.else_ops(),
        }
    }

    /// Why the step did not hold, from its [`Step::else_ops`] answers;
    /// `None` when it held.
    fn failure(&self, resps: &[TxnOpResponse]) -> Result<Option<Failed>> {
        let kv = first_kv(resps, 0)?;
        let fail = |f| Ok(Some(Failed::Step(TxnStep::Op(0), f)));
        let version_is = |want: Option<u64>| {
            want.is_none_or(|v| kv.as_ref().is_some_and(|kv| urev(kv.mod_revision()) == v))
        };
        match self {
            Step::Check { version, .. } => match &kv {
                None => fail(TxnFailure::NoNode),
                Some(_) if !version_is(Some(*version)) => fail(TxnFailure::VersionConflict),
                Some(_) => Ok(None),
            },
            Step::Write(Plan::Create(c)) => {
                if kv.is_some() {
                    return fail(TxnFailure::NodeExists);
                }
                if c.known_parent().is_none() {
                    return Ok(None);
                }
                match first_kv(resps, 1)? {
                    None => Ok(Some(Failed::Parent)),
                    Some(p) if p.lease() != 0 => Ok(Some(Failed::Other(ephemeral_parent()))),
                    Some(_) => Ok(None),
                }
            }
            Step::Write(Plan::Set(s)) => match &kv {
                None => fail(TxnFailure::NoNode),
                Some(_) if !version_is(s.version) => fail(TxnFailure::VersionConflict),
                Some(_) => Ok(None),
            },
            Step::Write(Plan::Delete(d)) => match &kv {
                None => fail(TxnFailure::NoNode),
                // Another node at the name: this session's is gone.
                Some(kv) if d.created.is_some_and(|c| c != kv.create_revision()) => {
                    fail(TxnFailure::NoNode)
                }
                Some(_) if !version_is(d.version) => fail(TxnFailure::VersionConflict),
                Some(_) if d.created.is_none() && children(resps)? > 0 => {
                    fail(TxnFailure::NotEmpty)
                }
                Some(_) => Ok(None),
            },
            Step::Write(Plan::Put(_)) => Err(unexpected("a put in a transaction")),
        }
    }
}

/// The count of a delete's second failure read (the keys under it).
fn children(resps: &[TxnOpResponse]) -> Result<i64> {
    match resps.get(1) {
        Some(TxnOpResponse::Get(g)) => Ok(g.count()),
        _ => Err(unexpected("a Txn read without its answer")),
    }
}

/// Where each step's ops sit in the Txn's branches.
struct Layout {
    /// Per step, the start of its success ops.
    then_at: Vec<usize>,
    /// Per step, the start of its failure reads (after the fences').
    else_at: Vec<usize>,
}

impl Planned {
    /// The paths each op wrote, in op order (for `OutcomeUnknown`).
    pub(crate) fn first_written(&self) -> Option<&str> {
        self.steps
            .iter()
            .find(|s| matches!(s, Step::Write(_)))
            .map(Step::path)
    }

    /// Whether the transaction writes nothing (checks and fences only):
    /// it may then be sent again like a read.
    pub(crate) fn read_only(&self) -> bool {
        self.steps.iter().all(|s| matches!(s, Step::Check { .. }))
    }

    /// The creates, for what is done before and after the Txn.
    pub(crate) fn creates(&self) -> impl Iterator<Item = &CreatePlan> {
        self.steps.iter().filter_map(|s| match s {
            Step::Write(Plan::Create(c)) => Some(c),
            _ => None,
        })
    }

    fn layout(&self) -> Layout {
        let (mut then_at, mut else_at) = (Vec::new(), Vec::new());
        let (mut t, mut e) = (0, self.fences.len());
        for step in &self.steps {
            then_at.push(t);
            else_at.push(e);
            t += step.then_ops().len();
            e += step.else_ops().len();
        }
        Layout { then_at, else_at }
    }

    /// The Txn.
    pub(crate) fn build(&self) -> Txn {
        let mut compares: Vec<Compare> = self.fences.iter().map(FenceKey::compare).collect();
        let mut then_ops = Vec::new();
        let mut else_ops: Vec<TxnOp> = self.fences.iter().map(FenceKey::read).collect();
        for step in &self.steps {
            compares.extend(step.compares());
            then_ops.extend(step.then_ops());
            else_ops.extend(step.else_ops());
        }
        Txn::new()
            .when(compares)
            .and_then(then_ops)
            .or_else(else_ops)
    }

    /// The etcd ops of the Txn's biggest part (compares, success or
    /// failure branch), which `--max-txn-ops` bounds.
    pub(crate) fn etcd_ops(&self) -> usize {
        let f = self.fences.len();
        let sum = |part: fn(&Step) -> usize| self.steps.iter().map(part).sum::<usize>();
        let compares = f + sum(|s| s.compares().len());
        let then = sum(|s| s.then_ops().len());
        let reads = f + sum(|s| s.else_ops().len());
        compares.max(then).max(reads)
    }

    /// About the bytes of the Txn as sent: every key once per compare and
    /// read it appears in, plus the data, plus a little for each op.
    pub(crate) fn wire_size(&self) -> usize {
        let key = |k: &str, times: usize| times * (k.len() + 16);
        let fences: usize = self.fences.iter().map(|f| key(&f.key, 2)).sum();
        let steps: usize = self
            .steps
            .iter()
            .map(|s| match s {
                Step::Check { key: k, .. } => key(k, 2),
                Step::Write(Plan::Create(c) | Plan::Put(c)) => {
                    key(&c.key, 3) + c.known_parent().map_or(0, |p| key(p, 3)) + c.data.len()
                }
                Step::Write(Plan::Set(s)) => key(&s.key, 4) + s.data.len(),
                Step::Write(Plan::Delete(d)) => key(&d.key, 4) + key(&d.child_prefix, 2),
            })
            .sum();
        fences + steps
    }

    /// What the Txn's answer says: every op's result, or why it failed
    /// (the first fence that does not hold, else the first op, in order).
    pub(crate) fn interpret(
        &self,
        resp: &TxnResponse,
    ) -> Result<std::result::Result<Vec<TxnResult>, Failed>> {
        let resps = resp.op_responses();
        let layout = self.layout();
        if !resp.succeeded() {
            for (i, f) in self.fences.iter().enumerate() {
                if !f.held(first_kv(&resps, i)?) {
                    return Ok(Err(Failed::Step(TxnStep::Fence(i), TxnFailure::FenceLost)));
                }
            }
            for (i, step) in self.steps.iter().enumerate() {
                let at = layout.else_at[i];
                match step.failure(resps.get(at..).unwrap_or_default())? {
                    Some(Failed::Step(_, why)) => {
                        return Ok(Err(Failed::Step(TxnStep::Op(i), why)))
                    }
                    Some(other) => return Ok(Err(other)),
                    None => {}
                }
            }
            return Err(unexpected("a transaction failed with no reason"));
        }
        let revision = resp
            .header()
            .map(|h| h.revision())
            .ok_or_else(|| unexpected("a Txn answer without a header"))?;
        let mut results = Vec::with_capacity(self.steps.len());
        for (i, step) in self.steps.iter().enumerate() {
            results.push(match step {
                Step::Check { .. } => TxnResult::Checked,
                Step::Write(plan) => {
                    let at = layout.then_at[i];
                    let mine = resps.get(at..at + 1).unwrap_or_default();
                    match plan.succeeded(revision, mine)? {
                        coord_core::OpResult::Created(c) => TxnResult::Created(c),
                        coord_core::OpResult::Set(s) => TxnResult::Set(s),
                        coord_core::OpResult::Deleted => TxnResult::Deleted,
                        _ => return Err(unexpected("a transaction's write did something else")),
                    }
                }
            });
        }
        Ok(Ok(results))
    }

    /// The lease of each node a committed transaction deleted, when it had
    /// one (a TTL node's, see `crate::ttl::forget_deleted`).
    pub(crate) fn deleted_leases(&self, resp: &TxnResponse) -> Vec<i64> {
        let resps = resp.op_responses();
        let layout = self.layout();
        self.steps
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s, Step::Write(Plan::Delete(_))))
            .filter_map(|(i, _)| match resps.get(layout.then_at[i]) {
                Some(TxnOpResponse::Delete(d)) => d.prev_kvs().first().map(|kv| kv.lease()),
                _ => None,
            })
            .filter(|&l| l != 0)
            .collect()
    }
}

#[cfg(test)]
#[path = "transaction_tests.rs"]
mod tests;

//! Every write is one etcd Txn: the compares that make it valid, the ops
//! that do it, and on failure a few reads that say which compare failed, so
//! the caller gets the same typed error as on every other backend in one
//! round trip.
//!
//! A guarded write is the same Txn with one more compare in front (the
//! fence key's create revision) and one more read in the failure branch.
//! A put (create or overwrite) branches inside the Txn: a nested Txn puts
//! the key plain when it is absent, keeping its lease when it is there.

use coord_core::{Created, Error, OpResult, Result, Stat};
use etcd_client::{
    Compare, CompareOp, DeleteOptions, GetOptions, KeyValue, PutOptions, SortOrder, SortTarget,
    Txn, TxnOp, TxnOpResponse, TxnResponse,
};

use crate::error::{ephemeral_parent, unexpected};

/// A revision or version from coord (u64) as etcd compares it (i64). One
/// that does not fit can match nothing: -1 never equals a revision.
pub(crate) fn rev(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(-1)
}

/// An etcd revision (never negative) as coord's u64.
pub(crate) fn urev(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// The session owning a key attached to `lease` (a session's id is its
/// lease in hex, as `EtcdSession::id` shows it); `None` for no lease.
pub(crate) fn owner_of(lease: i64) -> Option<coord_core::SessionId> {
    (lease != 0).then(|| coord_core::SessionId(format!("{lease:x}")))
}

/// The stat of a key as coord sees it. etcd keeps no time per key (only
/// revisions), so there is no creation time.
pub(crate) fn stat_of(kv: &KeyValue) -> Stat {
    Stat::new(
        urev(kv.mod_revision()),
        urev(kv.create_revision()),
        kv.lease() != 0,
        None,
    )
    .with_owner(owner_of(kv.lease()))
}

/// A create, ready to send (and to send again, unchanged, after a lost answer).
#[derive(Debug, Clone)]
pub(crate) struct CreatePlan {
    /// The node's full path (with the sequential suffix, if any).
    pub path: String,
    /// Its key.
    pub key: String,
    /// Keys of its ancestors below the root, top down.
    pub ancestors: Vec<String>,
    /// Its data.
    pub data: Vec<u8>,
    /// The lease to put it on: the session's for an ephemeral node, else 0.
    pub lease: i64,
    /// Whether the name carries our unique suffix.
    pub sequential: bool,
    /// Not ephemeral: another session may delete the node (a queue item
    /// taken) before a retry after a lost answer looks for it.
    pub persistent: bool,
    /// The session's lease, to recognise our own node after a lost answer.
    pub own_lease: i64,
    /// Also read the new node's first siblings (keys under this prefix,
    /// by create revision, [`FIRST_READ`] of them) in
    /// the same Txn, right after the put: a read in a Txn sees the Txn's
    /// own writes, so a directory that was empty shows the new node first
    /// (see `session::EtcdSession::create`).
    pub list_siblings: Option<String>,
    /// Read the nearest siblings instead: the new node and the keys just
    /// before it by create revision, [`NEAREST_READ`] in all, nearest first
    /// (a contender's place, see `neighbours::EtcdSession::create_contender`).
    pub nearest_siblings: bool,
    /// The parent was there, not ephemeral, at this session's last create
    /// under it: compare the parent alone instead of making every missing
    /// ancestor ([`Plan::needs_ancestors`] says when that was wrong).
    ///
    /// The same thing, cheaper: a key of coord's tree with no lease has
    /// every ancestor, none with a lease. It was made by a Txn that made
    /// them, a key with children is never deleted, and a key's lease never
    /// changes. A create with several ancestors was most of the Txn's work
    /// (a compare and a nested Txn each; five for a lock under
    /// `/a/b/c/d`).
    pub parent_known: bool,
}

/// A set, compare-and-set when `version` is given.
#[derive(Debug, Clone)]
pub(crate) struct SetPlan {
    pub path: String,
    pub key: String,
    pub data: Vec<u8>,
    pub version: Option<u64>,
}

/// A delete, compare-and-delete when `version` is given.
#[derive(Debug, Clone)]
pub(crate) struct DeletePlan {
    pub path: String,
    pub key: String,
    /// `<key>/`: any key under it is a child (or deeper) and forbids the delete.
    pub child_prefix: String,
    pub version: Option<u64>,
    /// The create revision of the node this session made there, when it
    /// may lend the name again (`crate::slots`): another incarnation at
    /// the key is not deleted, and counts as ours gone.
    pub created: Option<i64>,
}

/// One write.
#[derive(Debug, Clone)]
pub(crate) enum Plan {
    Create(CreatePlan),
    Set(SetPlan),
    Delete(DeletePlan),
    /// Create (persistent, making missing ancestors) or overwrite: the
    /// plan of a persistent, non-sequential create whose parent is not
    /// known ([`CreatePlan::parent_known`] false).
    Put(CreatePlan),
}

/// The fence of a guarded write, as keys.
#[derive(Debug, Clone)]
pub(crate) struct FenceKey {
    pub path: String,
    pub key: String,
    pub stamp: u64,
}

impl FenceKey {
    /// The compare that holds while the fence does: its key's create
    /// revision is the stamp.
    pub(crate) fn compare(&self) -> Compare {
        Compare::create_revision(self.key.as_str(), CompareOp::Equal, rev(self.stamp))
    }

    /// The read, in a Txn's failure branch, that tells whether
    /// [`FenceKey::compare`] failed ([`FenceKey::held`]).
    pub(crate) fn read(&self) -> TxnOp {
        TxnOp::get(self.key.as_str(), Some(GetOptions::new().with_keys_only()))
    }

    /// Whether the fence held, from its [`FenceKey::read`].
    pub(crate) fn held(&self, kv: Option<KeyValue>) -> bool {
        kv.is_some_and(|kv| urev(kv.create_revision()) == self.stamp)
    }
}

impl Plan {
    pub(crate) fn compares(&self) -> Vec<Compare> {
        match self {
            Plan::Create(c) => {
                let mut v = vec![Compare::create_revision(
                    c.key.as_str(),
                    CompareOp::Equal,
                    0,
                )];
                if let Some(parent) = c.known_parent() {
                    // There, and not ephemeral (nor a TTL node's).
                    v.push(Compare::create_revision(parent, CompareOp::Greater, 0));
                    v.push(Compare::lease(parent, CompareOp::Equal, 0));
                    return v;
                }
                v.extend(plain_ancestors(&c.ancestors));
                v
            }
            // Whether the key is there is decided inside (`then_ops`).
            Plan::Put(c) => plain_ancestors(&c.ancestors).collect(),
            Plan::Set(s) => {
                let mut v = vec![Compare::create_revision(
                    s.key.as_str(),
                    CompareOp::Greater,
                    0,
                )];
                if let Some(ver) = s.version {
                    v.push(Compare::mod_revision(
                        s.key.as_str(),
                        CompareOp::Equal,
                        rev(ver),
                    ));
                }
                v
            }
            Plan::Delete(d) => {
                let mut v = vec![match d.created {
                    Some(c) => Compare::create_revision(d.key.as_str(), CompareOp::Equal, c),
                    None => Compare::create_revision(d.key.as_str(), CompareOp::Greater, 0),
                }];
                if let Some(ver) = d.version {
                    v.push(Compare::mod_revision(
                        d.key.as_str(),
                        CompareOp::Equal,
                        rev(ver),
                    ));
                }
                // A node of this session's own ephemeral-sequential
                // creates (`created`) has no children: a create under an
                // ephemeral node is refused. Any other may.
                if d.created.is_none() {
                    // Over a range, a compare holds only if it holds for
                    // every key; over an empty range it is compared with a
                    // zero key. So "every key under <key>/ has create
                    // revision 0" means "there is none".
                    v.push(
                        Compare::create_revision(d.child_prefix.as_str(), CompareOp::Equal, 0)
                            .with_prefix(),
                    );
                }
                v
            }
        }
    }

    pub(crate) fn then_ops(&self) -> Vec<TxnOp> {
        match self {
            Plan::Create(c) => {
                let mut ops = Vec::with_capacity(c.ancestors.len() + 2);
                // Missing parents, each only if absent (a nested Txn), as
                // plain keys with no value and no lease.
                if c.known_parent().is_none() {
                    ops.extend(make_ancestors(&c.ancestors));
                }
                let opts = (c.lease != 0).then(|| PutOptions::new().with_lease(c.lease));
                ops.push(TxnOp::put(c.key.as_str(), c.data.clone(), opts));
                if let Some(prefix) = &c.list_siblings {
                    let read = if c.nearest_siblings {
                        nearest_by_creation(NEAREST_READ)
                    } else {
                        first_by_creation(FIRST_READ)
                    };
                    ops.push(TxnOp::get(prefix.as_str(), Some(read)));
                }
                ops
            }
            Plan::Set(s) => vec![overwrite(&s.key, &s.data)],
            Plan::Put(c) => {
                let mut ops: Vec<TxnOp> = make_ancestors(&c.ancestors).collect();
                // Absent: a plain persistent key. There: overwritten,
                // keeping its lease. etcd allows the same key put in both
                // branches of one Txn, as only one runs.
                ops.push(TxnOp::txn(
                    Txn::new()
                        .when([Compare::create_revision(
                            c.key.as_str(),
                            CompareOp::Equal,
                            0,
                        )])
                        .and_then([TxnOp::put(c.key.as_str(), c.data.clone(), None)])
                        .or_else([overwrite(&c.key, &c.data)]),
                ));
                ops
            }
            // With the deleted key, whose lease says whether it was a TTL
            // node (see `deleted_lease`); not for this session's own
            // contender nodes, which never are.
            Plan::Delete(d) => vec![TxnOp::delete(
                d.key.as_str(),
                d.created
                    .is_none()
                    .then(|| DeleteOptions::new().with_prev_key()),
            )],
        }
    }

    pub(crate) fn else_ops(&self) -> Vec<TxnOp> {
        match self {
            Plan::Create(c) => {
                let mut ops = vec![TxnOp::get(c.key.as_str(), None)];
                if c.known_parent().is_some() {
                    // Nothing more: a failure with the key absent is the
                    // parent's, and sends the whole plan (see
                    // `Plan::needs_ancestors`).
                    return ops;
                }
                ops.extend(read_ancestors(&c.ancestors));
                ops
            }
            Plan::Put(c) => read_ancestors(&c.ancestors).collect(),
            Plan::Set(s) => vec![TxnOp::get(
                s.key.as_str(),
                Some(GetOptions::new().with_keys_only()),
            )],
            Plan::Delete(d) => vec![
                TxnOp::get(d.key.as_str(), Some(GetOptions::new().with_keys_only())),
                TxnOp::get(
                    d.child_prefix.as_str(),
                    Some(GetOptions::new().with_prefix().with_count_only()),
                ),
            ],
        }
    }

    /// What the write did, from the Txn's revision and its ops' answers.
    pub(crate) fn succeeded(&self, revision: i64, resps: &[TxnOpResponse]) -> Result<OpResult> {
        match self {
            Plan::Create(c) => {
                // Every put of one Txn gets the Txn's revision.
                let r = urev(revision);
                Ok(OpResult::Created(Created::new(
                    c.path.clone(),
                    c.sequential.then_some(r),
                    r,
                    r,
                )))
            }
            Plan::Set(_) => overwritten(revision, resps.first()),
            Plan::Delete(_) => Ok(OpResult::Deleted),
            Plan::Put(c) => match resps.last() {
                Some(TxnOpResponse::Txn(t)) if t.succeeded() => {
                    let r = urev(revision);
                    Ok(OpResult::Created(Created::new(c.path.clone(), None, r, r)))
                }
                Some(TxnOpResponse::Txn(t)) => overwritten(revision, t.op_responses().first()),
                _ => Err(unexpected("a put without its nested Txn")),
            },
        }
    }

    /// Which compare failed, as coord's error; or, for a create retried
    /// after a lost answer, the node the first attempt made.
    fn failed(&self, resps: &[TxnOpResponse], retrying: bool) -> Result<OpResult> {
        match self {
            Plan::Create(c) => {
                if let Some(kv) = first_kv(resps, 0)? {
                    if retrying && is_ours(c, &kv) {
                        return Ok(OpResult::Created(Created::new(
                            c.path.clone(),
                            c.sequential.then(|| urev(kv.create_revision())),
                            urev(kv.create_revision()),
                            urev(kv.mod_revision()),
                        )));
                    }
                    if retrying && !c.sequential && c.lease == 0 {
                        // A persistent node now exists where our create's
                        // answer was lost: it may be ours or anyone's.
                        return Err(Error::ConnectionLost(format!(
                            "the answer to creating {} was lost and the node exists now; \
                             whether this session made it is unknown",
                            c.path
                        )));
                    }
                    return Err(Error::AlreadyExists {
                        path: c.path.clone(),
                    });
                }
                if c.known_parent().is_some() {
                    // The key absent: `Plan::needs_ancestors`'s case, sent
                    // again whole before it gets here.
                    return Err(unexpected("a create failed on its parent alone"));
                }
                leased_ancestor(resps.get(1..).unwrap_or_default(), c.ancestors.len())?;
                Err(unexpected("a create failed with no reason"))
            }
            Plan::Put(c) => {
                leased_ancestor(resps, c.ancestors.len())?;
                Err(unexpected("a put failed with no reason"))
            }
            Plan::Set(s) => match first_kv(resps, 0)? {
                None => Err(Error::NotFound {
                    path: s.path.clone(),
                }),
                Some(_) => Err(Error::VersionMismatch {
                    path: s.path.clone(),
                    expected: s.version.unwrap_or(0),
                }),
            },
            Plan::Delete(d) => {
                let Some(kv) = first_kv(resps, 0)? else {
                    return Err(Error::NotFound {
                        path: d.path.clone(),
                    });
                };
                if d.created.is_some_and(|c| c != kv.create_revision()) {
                    // Another node at the name: ours is gone.
                    return Err(Error::NotFound {
                        path: d.path.clone(),
                    });
                }
                // The version first, then the children, as ZooKeeper does.
                if let Some(v) = d.version {
                    if urev(kv.mod_revision()) != v {
                        return Err(Error::VersionMismatch {
                            path: d.path.clone(),
                            expected: v,
                        });
                    }
                }
                Err(Error::NotEmpty {
                    path: d.path.clone(),
                })
            }
        }
    }
}

/// "No ancestor is ephemeral (nor a TTL node)": a missing one compares as
/// lease 0, so missing ancestors pass.
fn plain_ancestors(ancestors: &[String]) -> impl Iterator<Item = Compare> + '_ {
    ancestors
        .iter()
        .map(|a| Compare::lease(a.as_str(), CompareOp::Equal, 0))
}

/// Make each missing ancestor, only if absent (a nested Txn each), as a
/// plain key with no value and no lease.
fn make_ancestors(ancestors: &[String]) -> impl Iterator<Item = TxnOp> + '_ {
    ancestors.iter().map(|a| {
        TxnOp::txn(
            Txn::new()
                .when([Compare::create_revision(a.as_str(), CompareOp::Equal, 0)])
                .and_then([TxnOp::put(a.as_str(), Vec::<u8>::new(), None)]),
        )
    })
}

/// Read each ancestor's key, to tell which one failed
/// [`plain_ancestors`] ([`leased_ancestor`]).
fn read_ancestors(ancestors: &[String]) -> impl Iterator<Item = TxnOp> + '_ {
    ancestors
        .iter()
        .map(|a| TxnOp::get(a.as_str(), Some(GetOptions::new().with_keys_only())))
}

/// The error for an ancestor found with a lease among the first `n` reads
/// of [`read_ancestors`].
fn leased_ancestor(resps: &[TxnOpResponse], n: usize) -> Result<()> {
    for i in 0..n {
        if first_kv(resps, i)?.is_some_and(|kv| kv.lease() != 0) {
            return Err(ephemeral_parent());
        }
    }
    Ok(())
}

/// Overwrite an existing key's value, keeping its lease (an ephemeral node
/// stays ephemeral), answering with the previous key.
fn overwrite(key: &str, data: &[u8]) -> TxnOp {
    TxnOp::put(
        key,
        data.to_vec(),
        Some(PutOptions::new().with_ignore_lease().with_prev_key()),
    )
}

/// The stat after an [`overwrite`] at `revision`, from its answer.
fn overwritten(revision: i64, resp: Option<&TxnOpResponse>) -> Result<OpResult> {
    let prev = match resp {
        Some(TxnOpResponse::Put(p)) => p.prev_key().cloned(),
        _ => None,
    };
    let prev = prev.ok_or_else(|| unexpected("set without its previous key"))?;
    // The put ignored the lease (kept the key's): the previous key's lease
    // is the key's lease now.
    Ok(OpResult::Set(
        Stat::new(
            urev(revision),
            urev(prev.create_revision()),
            prev.lease() != 0,
            None,
        )
        .with_owner(owner_of(prev.lease())),
    ))
}

impl CreatePlan {
    /// The parent's key, when the plan compares it alone
    /// ([`CreatePlan::parent_known`]).
    pub(crate) fn known_parent(&self) -> Option<&str> {
        if self.parent_known {
            self.ancestors.last().map(String::as_str)
        } else {
            None
        }
    }
}

impl Plan {
    /// Whether the Txn of this plan failed only on what a create that
    /// compares its parent alone assumed: the parent was not there (or
    /// not plain). The whole plan must be sent then, making the missing
    /// ancestors or telling why not. `false` for any other outcome,
    /// including a failed fence (that is `LockLost`).
    pub(crate) fn needs_ancestors(&self, fence: Option<&FenceKey>, resp: &TxnResponse) -> bool {
        let Plan::Create(c) = self else { return false };
        if resp.succeeded() || c.known_parent().is_none() {
            return false;
        }
        let resps = resp.op_responses();
        let mut at = 0;
        if let Some(f) = fence {
            if !first_kv(&resps, 0).is_ok_and(|kv| f.held(kv)) {
                return false;
            }
            at = 1;
        }
        // The key absent: the parent's compares failed.
        matches!(first_kv(&resps, at), Ok(None))
    }
}

/// Whether the node found at a create's key is the one an earlier attempt
/// of the same create made: a sequential name carries our lease and counter,
/// so nobody else makes it; an ephemeral one is on our lease.
fn is_ours(c: &CreatePlan, kv: &KeyValue) -> bool {
    if c.sequential {
        return true;
    }
    c.lease != 0 && kv.lease() == c.own_lease
}

/// The first key of the `i`-th answer, which must be a get.
pub(crate) fn first_kv(resps: &[TxnOpResponse], i: usize) -> Result<Option<KeyValue>> {
    match resps.get(i) {
        Some(TxnOpResponse::Get(g)) => Ok(g.kvs().first().cloned()),
        _ => Err(unexpected("a Txn read without its answer")),
    }
}

/// The Txn for `plan`, behind `fence` when given.
pub(crate) fn build(plan: &Plan, fence: Option<&FenceKey>) -> Txn {
    let mut compares = Vec::new();
    let mut else_ops = Vec::new();
    if let Some(f) = fence {
        compares.push(f.compare());
        else_ops.push(f.read());
    }
    compares.extend(plan.compares());
    else_ops.extend(plan.else_ops());
    Txn::new()
        .when(compares)
        .and_then(plan.then_ops())
        .or_else(else_ops)
}

/// The outcome of the Txn built by [`build`].
pub(crate) fn interpret(
    plan: &Plan,
    fence: Option<&FenceKey>,
    resp: &TxnResponse,
    retrying: bool,
) -> Result<OpResult> {
    let resps = resp.op_responses();
    if resp.succeeded() {
        let revision = resp
            .header()
            .map(|h| h.revision())
            .ok_or_else(|| unexpected("a Txn answer without a header"))?;
        return plan.succeeded(revision, &resps);
    }
    let mut rest = &resps[..];
    if let Some(f) = fence {
        // The fence is checked first: a lost hold is LockLost whatever else.
        if !f.held(first_kv(&resps, 0)?) {
            return Err(Error::LockLost {
                path: f.path.clone(),
            });
        }
        rest = &resps[1..];
    }
    plan.failed(rest, retrying)
}

/// How many children a contender create reads back in its Txn, first by
/// create revision: enough for a lock's "am I first" and a small
/// semaphore's "am I among the first n" without a listing of every
/// waiter (whose size grows with the crowd).
pub(crate) const FIRST_READ: i64 = 8;

/// A range over a prefix (keys only), the first `limit` keys by create
/// revision: `more` in the answer says whether there were others. etcd
/// reads every key of the range to sort it, but sends only these.
pub(crate) fn first_by_creation(limit: i64) -> GetOptions {
    GetOptions::new()
        .with_prefix()
        .with_keys_only()
        .with_sort(SortTarget::Create, SortOrder::Ascend)
        .with_limit(limit)
}

/// How many keys a contender create that reads its place reads back,
/// nearest first: the new node itself, then the earlier keys `place` would
/// read first (its window of 8).
pub(crate) const NEAREST_READ: i64 = 9;

/// A range over a prefix (keys only), the last `limit` keys by create
/// revision, newest first. Right after a put in the same Txn, the newest is
/// the new key: no key has a later create revision than the Txn's own.
pub(crate) fn nearest_by_creation(limit: i64) -> GetOptions {
    GetOptions::new()
        .with_prefix()
        .with_keys_only()
        .with_sort(SortTarget::Create, SortOrder::Descend)
        .with_limit(limit)
}

/// The sibling read a successful create asked for
/// ([`CreatePlan::list_siblings`]): the first keys under the parent's
/// prefix by create revision, and whether there were more.
pub(crate) fn sibling_listing(plan: &Plan, resp: &TxnResponse) -> Option<(Vec<KeyValue>, bool)> {
    match plan {
        Plan::Create(c) if c.list_siblings.is_some() && resp.succeeded() => {
            match resp.op_responses().pop() {
                Some(TxnOpResponse::Get(g)) => Some((g.kvs().to_vec(), g.more())),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The lease of the key a delete that succeeded removed, when it had one
/// (an ephemeral node's, or a TTL node's own).
pub(crate) fn deleted_lease(plan: &Plan, resp: &TxnResponse) -> Option<i64> {
    if !matches!(plan, Plan::Delete(_)) || !resp.succeeded() {
        return None;
    }
    resp.op_responses().iter().find_map(|r| match r {
        TxnOpResponse::Delete(d) => d
            .prev_kvs()
            .first()
            .map(KeyValue::lease)
            .filter(|&l| l != 0),
        _ => None,
    })
}

#[cfg(test)]
#[path = "txn_tests.rs"]
mod tests;

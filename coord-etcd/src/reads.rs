//! Reading nodes: one (`get`), and many in few requests (`get_many`): the
//! keys in batches of [`READS_PER_TXN`], each batch one read-only Txn of
//! gets, sent together; then, for each batch that found nodes on other
//! sessions' leases, one more Txn reading those leases' TTL markers (a TTL
//! node reads as persistent, as `get` reports it; see [`crate::ttl`]).
//!
//! So N nodes cost 2 × ⌈N / 128⌉ requests where N `get`s cost up to 2N.
//! Each batch is one revision; the batches are not one snapshot together,
//! which the contract allows (each node as at some moment of the call).

use std::collections::HashSet;

use coord_core::{Error, Node, Result, Stat};
use etcd_client::{GetOptions, Txn, TxnOp, TxnOpResponse};
use futures_util::future::try_join_all;

use crate::error::{self, unexpected};
use crate::shared::Shared;
use crate::transaction::MAX_TXN_OPS;
use crate::txn::stat_of;

/// Keys read per Txn: etcd's default `--max-txn-ops`.
pub(crate) const READS_PER_TXN: usize = MAX_TXN_OPS;

/// The nodes at `paths` (valid, checked by `coord_core::Session`), in
/// their order.
pub(crate) async fn get_many(shared: &Shared, paths: &[String]) -> Result<Vec<Option<Node>>> {
    shared.check_open()?;
    let batches = try_join_all(paths.chunks(READS_PER_TXN).map(|b| batch(shared, b))).await?;
    Ok(batches.into_iter().flatten().collect())
}

/// One batch: a Txn of gets (the root, which has no key, answered here),
/// then the TTL markers of the foreign leases found.
async fn batch(shared: &Shared, paths: &[String]) -> Result<Vec<Option<Node>>> {
    let keyed: Vec<&String> = paths.iter().filter(|p| *p != "/").collect();
    let mut found = Vec::with_capacity(keyed.len());
    if !keyed.is_empty() {
        let ops: Vec<TxnOp> = keyed
            .iter()
            .map(|p| TxnOp::get(shared.keys.key(p), None))
            .collect();
        let resp = match shared.txn(&Txn::new().and_then(ops), true).await {
            Ok(resp) => resp,
            // Denied somewhere in the batch: read it key by key, so the
            // error names the path that was denied.
            Err(Error::PermissionDenied { .. }) => return one_by_one(shared, paths).await,
            Err(e) => return Err(e),
        };
        shared.saw_header(resp.header());
        if resp.op_responses().len() != keyed.len() {
            return Err(unexpected("a Txn of reads without an answer for each"));
        }
        for r in resp.op_responses() {
            match r {
                TxnOpResponse::Get(g) => found.push(
                    g.kvs()
                        .first()
                        .map(|kv| (kv.value().to_vec(), stat_of(kv), kv.lease())),
                ),
                _ => return Err(unexpected("a Txn read without its answer")),
            }
        }
    }
    let ttl = ttl_leases(shared, found.iter().flatten().map(|(_, _, l)| *l)).await?;
    let mut found = found.into_iter();
    let mut out = Vec::with_capacity(paths.len());
    for p in paths {
        if p == "/" {
            out.push(Some(root()));
            continue;
        }
        let Some(read) = found.next() else {
            return Err(unexpected("a Txn of reads without an answer for each"));
        };
        out.push(read.map(|(data, stat, lease)| {
            let stat = if ttl.contains(&lease) {
                crate::ttl::persistent(stat)
            } else {
                stat
            };
            Node::new(data, stat)
        }));
    }
    Ok(out)
}

/// The nodes at `paths`, one `get` after another.
async fn one_by_one(shared: &Shared, paths: &[String]) -> Result<Vec<Option<Node>>> {
    let mut out = Vec::with_capacity(paths.len());
    for p in paths {
        out.push(get(shared, p).await?);
    }
    Ok(out)
}

/// The node at `path`: the contract's `get`, one range (and, for a node
/// on another session's lease, one read of that lease's TTL marker).
pub(crate) async fn get(shared: &Shared, path: &str) -> Result<Option<Node>> {
    shared.check_open()?;
    if path == "/" {
        // The root has no key and always exists.
        return Ok(Some(root()));
    }
    let resp = shared
        .get(&shared.keys.key(path), None)
        .await
        .map_err(error::at(path))?;
    shared.saw_header(resp.header());
    let Some(kv) = resp.kvs().first() else {
        return Ok(None);
    };
    let mut stat = stat_of(kv);
    if crate::ttl::ttl_lease(shared, &stat).await?.is_some() {
        stat = crate::ttl::persistent(stat);
    }
    Ok(Some(Node::new(kv.value().to_vec(), stat)))
}

/// The root's node: no key, always there.
fn root() -> Node {
    Node::new(Vec::new(), Stat::new(0, 0, false, None))
}

/// Which of `leases` are TTL nodes' (carry a marker): one Txn reading the
/// markers of the distinct leases that are neither 0 nor this session's;
/// none when there are no such leases.
async fn ttl_leases(shared: &Shared, leases: impl Iterator<Item = i64>) -> Result<HashSet<i64>> {
    let mut foreign: Vec<i64> = leases
        .filter(|l| *l != 0 && *l != shared.lease)
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    if foreign.is_empty() {
        return Ok(HashSet::new());
    }
    foreign.sort_unstable();
    let ops: Vec<TxnOp> = foreign
        .iter()
        .map(|l| {
            TxnOp::get(
                shared.keys.ttl_marker(*l),
                Some(GetOptions::new().with_keys_only()),
            )
        })
        .collect();
    let resp = shared.txn(&Txn::new().and_then(ops), true).await?;
    shared.saw_header(resp.header());
    let mut marked = HashSet::new();
    for (lease, r) in foreign.iter().zip(resp.op_responses()) {
        match r {
            TxnOpResponse::Get(g) if !g.kvs().is_empty() => {
                marked.insert(*lease);
            }
            TxnOpResponse::Get(_) => {}
            _ => return Err(unexpected("a Txn read without its answer")),
        }
    }
    Ok(marked)
}

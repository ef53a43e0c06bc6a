//! C: the primitive cycle — create an ephemeral node, list its directory,
//! delete the node — through `coord_core::Session`, beside the same three
//! calls on the raw client (etcd-client, zookeeper-client), in interleaved
//! blocks. On etcd also the raw client sending coord's request shapes one
//! at a time, so each promise's cost is measured: the create's Txn (never
//! overwrite; the parent there and not ephemeral), the listing's Txn (the
//! directory read with its children, at one revision: `NotFound` for a
//! missing one) and the delete's Txn (`NotFound`; `NotEmpty` when it has
//! children; the deleted value read back).

use std::time::Instant;

use coordination::{CreateMode, Session};
use etcd_client::{Compare, CompareOp, DeleteOptions, GetOptions, PutOptions, Txn, TxnOp};

use crate::context::{timed, Ctx};
use crate::error::BenchResult;
use crate::row::{Row, Unit};

/// Who runs the cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// `coord_core::Session`.
    Coord,
    /// zookeeper-client: create, getChildren, delete.
    Zk,
    /// etcd-client: which of coord's Txn shapes replace the plain put,
    /// range and delete.
    Etcd(Shapes),
}

/// Which of the cycle's etcd requests take coord's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Shapes {
    create: bool,
    list: bool,
    delete: bool,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Coord => "coord Session",
            Side::Zk => "zookeeper-client",
            Side::Etcd(s) => match (s.create, s.list, s.delete) {
                (false, false, false) => "etcd-client (put, range, delete)",
                (true, false, false) => "etcd-client, coord's create Txn",
                (false, true, false) => "etcd-client, coord's listing Txn",
                (false, false, true) => "etcd-client, coord's delete Txn",
                (true, true, true) => "etcd-client, all three of coord's shapes",
                _ => "etcd-client, some of coord's shapes",
            },
        }
    }

    fn key(self) -> &'static str {
        match self {
            Side::Coord => "coord",
            Side::Zk => "zk_raw",
            Side::Etcd(s) => match (s.create, s.list, s.delete) {
                (false, false, false) => "etcd_raw",
                (true, false, false) => "etcd_create_txn",
                (false, true, false) => "etcd_list_txn",
                (false, false, true) => "etcd_delete_txn",
                _ => "etcd_all_txn",
            },
        }
    }
}

/// A raw client, ready to cycle in its own directory.
enum Raw {
    Zk(zookeeper_client::Client, String),
    Etcd(Box<etcd_client::Client>, i64, String),
}

/// Run the primitive cycle and record its rows.
///
/// # Errors
/// The session cannot be opened; a failed run is recorded in the report.
pub(crate) async fn bench(ctx: &mut Ctx<'_>) -> BenchResult<()> {
    let s = ctx.sessions(1).await?.remove(0);
    let (ops, blocks, limit) = (
        ctx.cfg.growth.cycle_ops.max(1),
        ctx.cfg.growth.cycle_blocks.max(1),
        ctx.cfg.growth.timeout,
    );
    let dir = ctx.dir("cycle");
    let run = cycles(ctx, &s, &dir, ops, blocks);
    let got = timed(limit, "primitive cycle", run).await;
    let got = match got {
        Ok(g) => g,
        Err(e) => {
            ctx.fail("primitive cycle", e);
            return Ok(());
        }
    };
    let Some((_, coord)) = got.iter().find(|(side, _)| *side == Side::Coord) else {
        return Ok(());
    };
    let coord = coord.clone();
    let case = "create ephemeral + children(dir) + delete, 1 session";
    ctx.rep.push(
        Row::new(
            "growth.cycle.coord.per_s",
            "C",
            format!("{case}, coord Session"),
        )
        .metric("cycles (median of blocks)", Unit::PerSec)
        .value(crate::stats::median(&coord)),
    );
    let raw = got
        .iter()
        .find(|(side, _)| {
            matches!(
                side,
                Side::Zk
                    | Side::Etcd(Shapes {
                        create: false,
                        list: false,
                        delete: false
                    })
            )
        })
        .cloned();
    if let Some((raw_side, raw)) = raw {
        for (side, rates) in &got {
            if *side == raw_side {
                continue;
            }
            ctx.rep.push(
                Row::new(
                    format!("growth.cycle.{}.per_s", side.key()),
                    "C",
                    format!("{case}, {}", side.name()),
                )
                .metric("cycles", Unit::PerSec)
                .blocks(rates, (raw_side.name(), &raw)),
            );
        }
        let target = if raw_side == Side::Zk { 0.97 } else { 0.95 };
        let r = Row::new("x", "C", "")
            .metric("", Unit::PerSec)
            .blocks(&coord, ("", &raw))
            .ratio();
        if let Some(r) = r {
            ctx.rep.targets.push(crate::report::TargetCheck {
                what: format!("primitive cycle ≥ {target}× {}", raw_side.name()),
                measured: r,
                met: r >= target,
            });
        }
    }
    Ok(())
}

/// Run `blocks` blocks of `ops` cycles of every side the backend has,
/// the order rotating from block to block; returns each side's cycles/s
/// per block.
async fn cycles(
    ctx: &Ctx<'_>,
    s: &Session,
    dir: &str,
    ops: usize,
    blocks: usize,
) -> BenchResult<Vec<(Side, Vec<f64>)>> {
    let mut sides = vec![(Side::Coord, None)];
    let raw_dir = format!("{dir}-raw");
    if let Some(hosts) = ctx.target.zk_hosts() {
        s.ensure_dir(&raw_dir).await?;
        let client = zookeeper_client::Client::connect(&hosts).await?;
        sides.push((Side::Zk, Some(Raw::Zk(client, raw_dir.clone()))));
    }
    if let Some(endpoints) = ctx.target.etcd_endpoints() {
        let prefix = format!("/coord-bench-raw/{}", uuid::Uuid::new_v4().simple());
        for (c, l, d) in [
            (false, false, false),
            (true, false, false),
            (false, true, false),
            (false, false, true),
            (true, true, true),
        ] {
            let mut client = etcd_client::Client::connect(endpoints.clone(), None).await?;
            let lease = client.lease_grant(600, None).await?.id();
            let dir_key = format!("{prefix}/{c}{l}{d}");
            client.put(dir_key.as_str(), "", None).await?;
            let shapes = Shapes {
                create: c,
                list: l,
                delete: d,
            };
            sides.push((
                Side::Etcd(shapes),
                Some(Raw::Etcd(Box::new(client), lease, dir_key)),
            ));
        }
    }
    s.ensure_dir(dir).await?;
    let mut out: Vec<(Side, Vec<f64>)> = sides.iter().map(|(s, _)| (*s, Vec::new())).collect();
    // A warm-up block, not counted.
    for b in 0..=blocks {
        let n = sides.len();
        for j in 0..n {
            let i = (j + b) % n;
            let (side, raw) = &mut sides[i];
            let count = if b == 0 { ops.min(20) } else { ops };
            let start = Instant::now();
            match raw {
                None => coord_cycles(s, dir, count).await?,
                Some(r) => raw_cycles(r, *side, count).await?,
            }
            if b > 0 {
                out[i].1.push(count as f64 / start.elapsed().as_secs_f64());
            }
        }
    }
    for (_, raw) in sides {
        if let Some(Raw::Etcd(mut c, lease, dir_key)) = raw {
            let _ = c.lease_revoke(lease).await;
            let _ = c.delete(dir_key, None).await;
        }
    }
    Ok(out)
}

/// `ops` cycles through coord's `Session`.
async fn coord_cycles(s: &Session, dir: &str, ops: usize) -> BenchResult<()> {
    let node = format!("{dir}/node");
    for _ in 0..ops {
        s.create(&node, b"", CreateMode::Ephemeral).await?;
        let listed = s.children(dir).await?;
        if listed.is_empty() {
            return Err("the listing missed the node just made".into());
        }
        s.delete(&node, None).await?;
    }
    Ok(())
}

/// `ops` cycles on a raw client, in the request shapes `side` names.
async fn raw_cycles(raw: &mut Raw, side: Side, ops: usize) -> BenchResult<()> {
    match raw {
        Raw::Zk(c, dir) => {
            let node = format!("{dir}/node");
            let opts = zookeeper_client::CreateMode::Ephemeral
                .with_acls(zookeeper_client::Acls::anyone_all());
            for _ in 0..ops {
                c.create(&node, b"", &opts).await?;
                if c.list_children(dir).await?.is_empty() {
                    return Err("the listing missed the node just made".into());
                }
                c.delete(&node, None).await?;
            }
        }
        Raw::Etcd(c, lease, dir_key) => {
            let Side::Etcd(shapes) = side else {
                return Err("an etcd client for another side".into());
            };
            let key = format!("{dir_key}/node");
            let prefix = format!("{dir_key}/");
            let put = || Some(PutOptions::new().with_lease(*lease));
            let keys_under = || Some(GetOptions::new().with_prefix().with_keys_only());
            for _ in 0..ops {
                if shapes.create {
                    // Never overwrite; the parent there and not ephemeral.
                    let txn = Txn::new()
                        .when([
                            Compare::create_revision(key.as_str(), CompareOp::Equal, 0),
                            Compare::create_revision(dir_key.as_str(), CompareOp::Greater, 0),
                            Compare::lease(dir_key.as_str(), CompareOp::Equal, 0),
                        ])
                        .and_then([TxnOp::put(key.as_str(), "", put())]);
                    if !c.txn(txn).await?.succeeded() {
                        return Err("the create's compare failed".into());
                    }
                } else {
                    c.put(key.as_str(), "", put()).await?;
                }
                let listed = if shapes.list {
                    // The directory's key and its children at one revision.
                    let txn = Txn::new().and_then([
                        TxnOp::get(dir_key.as_str(), Some(GetOptions::new().with_keys_only())),
                        TxnOp::get(prefix.as_str(), keys_under()),
                    ]);
                    let r = c.txn(txn).await?;
                    r.op_responses().len()
                } else {
                    c.get(prefix.as_str(), keys_under()).await?.kvs().len()
                };
                if listed == 0 {
                    return Err("the listing missed the node just made".into());
                }
                if shapes.delete {
                    // There; no children; the deleted value read back.
                    let txn = Txn::new()
                        .when([
                            Compare::create_revision(key.as_str(), CompareOp::Greater, 0),
                            Compare::create_revision(format!("{key}/"), CompareOp::Equal, 0)
                                .with_prefix(),
                        ])
                        .and_then([TxnOp::delete(
                            key.as_str(),
                            Some(DeleteOptions::new().with_prev_key()),
                        )]);
                    if !c.txn(txn).await?.succeeded() {
                        return Err("the delete's compare failed".into());
                    }
                } else {
                    c.delete(key.as_str(), None).await?;
                }
            }
        }
    }
    Ok(())
}

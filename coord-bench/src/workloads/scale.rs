//! Lock hand-off at scale (issue 35): K sessions, each its own connection,
//! loop acquire → release on one lock; hand-offs per second at every K
//! (1, 8, 64, 256, 1,024 by default), coord's `Lock` beside each backend's
//! native lock in interleaved blocks — the same contender loop as W2
//! ([`locks::contended`]), and on ZooKeeper also Curator's
//! `InterProcessMutex` in a Java process ([`super::curator`]).
//!
//! The rate is taken once every contender has had its turn to arrive:
//! from the K-th acquisition of a block to its last. All K contenders
//! arrive at the gate together, and in a block of 2K hand-offs their K
//! first creates would otherwise weigh as much as the hand-offs; the whole
//! block's rate is a row of its own.
//!
//! Rows: `scale.k<K>.<lock>.per_s` (median of the blocks),
//! `scale.k<K>.<lock>.whole_per_s` (the same over whole blocks),
//! `scale.k<K>.<coord lock>.vs.<peer>` (the median of the per-block
//! ratios, with their range), `scale.k<K>.<lock>.vs_k8` (rate at K ÷ rate
//! at 8) and `scale.k<K>.<coord lock>.wakeups`. [`Scale::markdown`] puts
//! them in one table per backend.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use crate::context::{timed, Ctx};
use crate::error::BenchResult;
use crate::locks::{self, Handoffs, LockKind};
use crate::report::{Report, TargetCheck};
use crate::row::{Row, Unit};
use crate::stats::median;
use crate::target::Target;
use crate::Config;

use super::curator::Curator;

/// What a scale run does.
#[derive(Debug, Clone)]
pub struct ScaleConfig {
    /// Numbers of sessions contending, in order.
    pub ks: Vec<usize>,
    /// Hand-offs per block (at least twice K are run, so that every
    /// session holds about twice).
    pub handoffs: usize,
    /// Interleaved blocks per K.
    pub blocks: usize,
    /// Curator's peer on ZooKeeper (none: no Curator column).
    pub curator: Option<Curator>,
    /// Give up on one block after this long.
    pub block_timeout: Duration,
}

impl ScaleConfig {
    /// The sizes: K = 1, 8, 64, 256, 1,024, 3 blocks of at least
    /// 400 hand-offs.
    pub fn full() -> Self {
        ScaleConfig {
            ks: vec![1, 8, 64, 256, 1024],
            handoffs: 400,
            blocks: 3,
            curator: None,
            block_timeout: Duration::from_secs(300),
        }
    }

    /// A few hand-offs at small K: the test suite's smoke run.
    pub fn smoke() -> Self {
        ScaleConfig {
            ks: vec![1, 4, 8],
            handoffs: 20,
            blocks: 2,
            curator: None,
            block_timeout: Duration::from_secs(30),
        }
    }

    /// The hand-offs one block runs at `k` sessions.
    pub fn per_block(&self, k: usize) -> usize {
        self.handoffs.max(2 * k).max(2)
    }
}

/// One lock of the run: coord's or a peer's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// A lock of coord-bench's contender loop.
    Loop(LockKind),
    /// Curator's `InterProcessMutex`, in a Java process.
    Curator,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Loop(LockKind::Lock) => "coord Lock",
            Side::Loop(LockKind::LockDrop) => "coord Lock, guard dropped",
            Side::Loop(k) => k.name(),
            Side::Curator => "Curator InterProcessMutex",
        }
    }

    /// The name in row keys.
    fn slug(self) -> &'static str {
        match self {
            Side::Loop(LockKind::Lock) => "lock",
            Side::Loop(LockKind::LockDrop) => "lockdrop",
            Side::Loop(LockKind::Simple) => "simple",
            Side::Loop(LockKind::ZkNative) => "zkclient",
            Side::Loop(LockKind::EtcdNative) => "etcdrpc",
            Side::Loop(LockKind::PgAdvisory) => "advisory",
            Side::Loop(LockKind::Tokio) => "tokio",
            Side::Curator => "curator",
        }
    }

    fn is_coord(self) -> bool {
        matches!(self, Side::Loop(LockKind::Lock | LockKind::LockDrop))
    }
}

/// The locks run on `backend`: coord's first, then the peers.
fn sides(backend: &str, curator: bool) -> Vec<Side> {
    let mut v = vec![Side::Loop(LockKind::Lock)];
    if backend == "zk" {
        v.push(Side::Loop(LockKind::LockDrop));
    }
    if let Some(n) = LockKind::native(backend) {
        v.push(Side::Loop(n));
    }
    if backend == "zk" && curator {
        v.push(Side::Curator);
    }
    v
}

/// A finished scale run: its report, and what the table needs.
#[derive(Debug, Clone)]
pub struct Scale {
    /// Rows, targets and failures, as every coord-bench run.
    pub report: Report,
    /// The numbers of sessions run.
    pub ks: Vec<usize>,
    /// Every block's figures, per K and lock (its name).
    pub blocks: BTreeMap<(usize, String), Vec<Handoffs>>,
}

/// Run the scale workload against `url`: every K of `cfg`, each lock of
/// the backend in `cfg.blocks` interleaved blocks (the order rotated by
/// one each block, a fresh lock each block). A failed block is recorded in
/// the report's failures and ends that K.
///
/// # Errors
/// A malformed URL, an unreachable server, sessions that cannot be opened.
///
/// # Cancel safety
/// Not cancel safe: dropped mid-run, the sessions opened so far close as
/// they drop (their lock nodes go with them), and a Curator peer's JVM runs
/// on until its own deadline.
pub async fn run(url: &str, cfg: &ScaleConfig) -> BenchResult<Scale> {
    let target = Target::new(url)?;
    let started = Instant::now();
    let base = Config::smoke();
    let mut ctx = Ctx::new(&target, url, &base).await?;
    ctx.rep.config = vec![
        ("ks".into(), join(&cfg.ks, "/")),
        (
            "handoffs_per_block".into(),
            format!("max({}, 2K)", cfg.handoffs),
        ),
        ("blocks".into(), cfg.blocks.to_string()),
    ];
    let sides = sides(target.backend(), cfg.curator.is_some());
    let mut blocks: BTreeMap<(usize, String), Vec<Handoffs>> = BTreeMap::new();
    for &k in &cfg.ks {
        at(&mut ctx, cfg, &sides, k, &mut blocks).await?;
    }
    rows(&mut ctx.rep, cfg, &sides, &blocks);
    let mut report = ctx.finish().await;
    report.elapsed = started.elapsed();
    report.targets = targets(&report, &cfg.ks, &sides);
    Ok(Scale {
        report,
        ks: cfg.ks.clone(),
        blocks,
    })
}

/// Every block at `k` sessions.
async fn at(
    ctx: &mut Ctx<'_>,
    cfg: &ScaleConfig,
    sides: &[Side],
    k: usize,
    out: &mut BTreeMap<(usize, String), Vec<Handoffs>>,
) -> BenchResult<()> {
    let target = ctx.target;
    let sessions = ctx.sessions(k).await?;
    let total = cfg.per_block(k);
    for b in 0..cfg.blocks.max(1) {
        for j in 0..sides.len() {
            let side = sides[(j + b) % sides.len()];
            let dir = ctx.dir(&format!("scale-k{k}-{}-b{b}", side.slug()));
            let what = format!("scale {} k={k}", side.name());
            let r = match side {
                Side::Loop(kind) => {
                    let run = locks::contended(target, &sessions, kind, k, &dir, total);
                    timed(cfg.block_timeout, &what, run).await
                }
                Side::Curator => match (&cfg.curator, target.zk_hosts()) {
                    (Some(c), Some(hosts)) => {
                        c.run(&hosts, &dir, k, total, cfg.block_timeout).await
                    }
                    _ => Err("no Curator peer for this target".into()),
                },
            };
            match r {
                Ok(h) => out.entry((k, side.name().to_owned())).or_default().push(h),
                Err(e) => {
                    ctx.fail(what, e);
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}

/// Each block's hand-offs per second with K waiting: from the K-th
/// acquisition on ([`Handoffs::steady_per_s`]), so that the K first
/// arrivals, all at the start of a block, do not count as hand-offs.
fn rates(hs: &[Handoffs]) -> Vec<f64> {
    hs.iter().map(|h| h.steady_per_s).collect()
}

/// Record the rows of every K and lock.
fn rows(
    rep: &mut Report,
    cfg: &ScaleConfig,
    sides: &[Side],
    blocks: &BTreeMap<(usize, String), Vec<Handoffs>>,
) {
    let get = |k: usize, s: Side| blocks.get(&(k, s.name().to_owned()));
    for &k in &cfg.ks {
        for &s in sides {
            let Some(hs) = get(k, s) else { continue };
            let case = format!("{}, {k} sessions", s.name());
            let key = format!("scale.k{k}.{}", s.slug());
            let rate = median(&rates(hs));
            rep.push(
                Row::new(format!("{key}.per_s"), "scale", &case)
                    .metric("hand-offs", Unit::PerSec)
                    .value(rate),
            );
            let whole: Vec<f64> = hs.iter().map(|h| h.per_s).collect();
            rep.push(
                Row::new(format!("{key}.whole_per_s"), "scale", &case)
                    .metric(
                        "hand-offs, the whole block (the K arrivals in it)",
                        Unit::PerSec,
                    )
                    .value(median(&whole)),
            );
            if let Some(at8) = get(8, s).filter(|_| k != 8) {
                rep.push(
                    Row::new(format!("{key}.vs_k8"), "scale", &case)
                        .metric("hand-offs, against K = 8", Unit::PerSec)
                        .value(rate)
                        .ratio_to(("rate at K = 8", median(&rates(at8)))),
                );
            }
            if !s.is_coord() {
                continue;
            }
            for &p in sides.iter().filter(|p| !p.is_coord()) {
                let Some(peer) = get(k, p).filter(|p| p.len() == hs.len()) else {
                    continue;
                };
                rep.push(
                    Row::new(format!("{key}.vs.{}", p.slug()), "scale", &case)
                        .metric("hand-offs, per-block ratio", Unit::PerSec)
                        .blocks(&rates(hs), (p.name(), &rates(peer))),
                );
            }
            let w: Vec<f64> = hs.iter().filter_map(|h| h.wakeups_per_release).collect();
            rep.push(
                Row::new(format!("{key}.wakeups"), "scale", &case)
                    .metric("wake-ups per release", Unit::Count)
                    .value(median(&w)),
            );
        }
    }
    let violations: usize = blocks.values().flatten().map(|h| h.violations).sum();
    if violations > 0 {
        rep.failures.push((
            "scale".into(),
            format!("{violations} mutual exclusion violations"),
        ));
    }
    let lost = blocks
        .iter()
        .flat_map(|((k, name), hs)| hs.iter().map(move |h| (k, name, h)))
        .find(|(_, _, h)| h.tallied != h.acquisitions);
    if let Some((k, name, h)) = lost {
        rep.failures.push((
            format!("scale {name} k={k}"),
            format!(
                "{} acquisitions counted, {} by the contenders",
                h.acquisitions, h.tallied
            ),
        ));
    }
}

/// Issue 35's targets that this run's Ks cover.
fn targets(rep: &Report, ks: &[usize], sides: &[Side]) -> Vec<TargetCheck> {
    let mut t = Vec::new();
    let ratio = |key: String| rep.get(&key).map(|r| r.ratio().unwrap_or(f64::NAN));
    let mut at_least = |key: String, what: String, min: f64| {
        if let Some(x) = ratio(key) {
            t.push(TargetCheck {
                what,
                measured: x,
                met: x >= min,
            });
        }
    };
    let b = rep.backend.clone();
    at_least(
        "scale.k256.lock.vs_k8".into(),
        format!("{b}: coord Lock hand-off rate at 256 sessions ≥ 0.8× the rate at 8"),
        0.8,
    );
    let has = |s: Side| sides.contains(&s);
    for &k in ks {
        if has(Side::Loop(LockKind::EtcdNative)) {
            at_least(
                format!("scale.k{k}.lock.vs.etcdrpc"),
                format!("etcd: coord Lock ≥ 1.0× the lock RPC at {k} sessions"),
                1.0,
            );
        }
        if has(Side::Loop(LockKind::ZkNative)) {
            at_least(
                format!("scale.k{k}.lockdrop.vs.zkclient"),
                format!("ZooKeeper: coord Lock, guard dropped, ≥ 1.1× zookeeper-client's lock at {k} sessions"),
                1.1,
            );
            at_least(
                format!("scale.k{k}.lock.vs.zkclient"),
                format!("ZooKeeper: coord Lock, release().await, ≥ 1.0× zookeeper-client's lock at {k} sessions"),
                1.0,
            );
        }
    }
    if has(Side::Curator) {
        at_least(
            "scale.k256.lock.vs.curator".into(),
            "ZooKeeper: coord Lock ≥ 2× Curator's InterProcessMutex at 256 sessions".into(),
            2.0,
        );
    }
    t
}

fn join(xs: &[usize], sep: &str) -> String {
    xs.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(sep)
}

impl Scale {
    /// The backend's table — K, each lock's hand-offs/s, coord ÷ each peer
    /// (median \[range\] of the blocks), each lock's rate(K) ÷ rate(8) —
    /// then the report's rows, targets and failures.
    pub fn markdown(&self) -> String {
        let rep = &self.report;
        let mut names: Vec<(&str, &str)> = Vec::new();
        for r in &rep.rows {
            if let Some(rest) = r.key.strip_suffix(".per_s") {
                let slug = rest.rsplit('.').next().unwrap_or("");
                let name = r.case.rsplit_once(", ").map_or(&*r.case, |(n, _)| n);
                if !names.iter().any(|(s, _)| *s == slug) {
                    names.push((slug, name));
                }
            }
        }
        let coord: Vec<_> = names
            .iter()
            .filter(|(s, _)| s.starts_with("lock"))
            .collect();
        let peers: Vec<_> = names
            .iter()
            .filter(|(s, _)| !s.starts_with("lock"))
            .collect();
        let mut head = vec!["K".to_owned()];
        head.extend(names.iter().map(|(_, n)| format!("{n} /s")));
        for (_, cn) in &coord {
            for (_, pn) in &peers {
                head.push(format!("{cn} ÷ {pn}"));
            }
        }
        head.extend(names.iter().map(|(_, n)| format!("{n}: rate(K) ÷ rate(8)")));
        let mut s = String::new();
        let _ = writeln!(
            s,
            "## Lock hand-off at scale: {} (`{}`)\n",
            rep.backend, rep.url
        );
        let _ = writeln!(s, "| {} |", head.join(" | "));
        let _ = writeln!(s, "|{}", "---:|".repeat(head.len()));
        for &k in &self.ks {
            let mut cells = vec![k.to_string()];
            let v = |key: String| rep.get(&key);
            for (slug, _) in &names {
                cells.push(
                    v(format!("scale.k{k}.{slug}.per_s")).map_or("–".into(), |r| num(r.value)),
                );
            }
            for (c, _) in &coord {
                for (p, _) in &peers {
                    cells.push(v(format!("scale.k{k}.{c}.vs.{p}")).map_or("–".into(), ratio_cell));
                }
            }
            for (slug, _) in &names {
                let cell = if k == 8 {
                    "1".into()
                } else {
                    v(format!("scale.k{k}.{slug}.vs_k8"))
                        .and_then(|r| r.ratio())
                        .map_or("–".into(), ratio)
                };
                cells.push(cell);
            }
            let _ = writeln!(s, "| {} |", cells.join(" | "));
        }
        let _ = writeln!(s);
        s.push_str(&rep.markdown());
        s
    }
}

/// A per-block ratio cell: `1.23× [1.10–1.40]`.
fn ratio_cell(r: &Row) -> String {
    match (r.ratio(), r.ratio_range()) {
        (Some(x), Some((lo, hi))) => format!("{}× [{}–{}]", ratio(x), ratio(lo), ratio(hi)),
        (Some(x), None) => format!("{}×", ratio(x)),
        _ => "no sample".into(),
    }
}

/// A ratio with two decimals, or three significant digits below 0.1 (a
/// lock 300× slower than its peer is not "0.00×").
fn ratio(x: f64) -> String {
    if x >= 0.1 || x == 0.0 || !x.is_finite() {
        format!("{x:.2}")
    } else {
        let decimals = (2.0 - x.log10().floor()) as usize;
        format!("{x:.decimals$}")
    }
}

fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.0}")
    } else {
        "no sample".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_backend_runs_coord_beside_its_peers() {
        let names =
            |b: &str, c: bool| -> Vec<&str> { sides(b, c).iter().map(|s| s.slug()).collect() };
        assert_eq!(
            names("zk", true),
            ["lock", "lockdrop", "zkclient", "curator"]
        );
        assert_eq!(names("zk", false), ["lock", "lockdrop", "zkclient"]);
        assert_eq!(names("etcd", true), ["lock", "etcdrpc"]);
        assert_eq!(names("redis", false), ["lock"]);
        assert_eq!(names("pg", false), ["lock", "advisory"]);
        assert_eq!(names("mem", false), ["lock", "tokio"]);
        let c = ScaleConfig::full();
        assert_eq!((c.per_block(1), c.per_block(1024)), (400, 2048));
    }

    #[test]
    fn small_ratios_keep_three_significant_digits() {
        assert_eq!(ratio(1.234), "1.23");
        assert_eq!(ratio(0.13), "0.13");
        assert_eq!(ratio(0.0277), "0.0277");
        assert_eq!(ratio(0.00284), "0.00284");
        assert_eq!(ratio(0.0), "0.00");
    }
}

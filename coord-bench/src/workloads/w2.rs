//! W2: contended handoffs among K sessions — `SimpleLock` once (the herd
//! baseline), then the native lock and `Lock` in interleaved blocks.

use coordination::Session;

use crate::context::{timed, Ctx};
use crate::error::BenchResult;
use crate::locks::{self, Handoffs, LockKind};
use crate::row::{Row, Unit};
use crate::stats::median;

/// A figure of one block of handoffs.
type Figure = fn(&Handoffs) -> f64;

/// The rows every lock gets: key suffix, metric, the figure, its unit.
const ROWS: [(&str, &str, Figure, Unit); 3] = [
    ("per_s", "handoffs", |h| h.per_s, Unit::PerSec),
    ("p50_ms", "release→acquire p50", |h| h.latency.p50, Unit::Ms),
    ("p99_ms", "release→acquire p99", |h| h.latency.p99, Unit::Ms),
];

/// Requests every one of `sessions` has sent so far (0 for a backend
/// that does not count them).
fn requests_of(sessions: &[Session]) -> u64 {
    sessions.iter().filter_map(|s| s.requests_sent()).sum()
}

/// The figure `f` of every block.
fn each(hs: &[Handoffs], f: Figure) -> Vec<f64> {
    hs.iter().map(f).collect()
}

/// Run W2 at every number of sessions and record its rows. Each block is
/// a fresh lock and which goes first alternates, so every ratio to the
/// native lock is the median of the per-block ratios.
///
/// # Errors
/// Sessions that cannot be opened; a failed run is recorded in the report.
pub(crate) async fn bench(ctx: &mut Ctx<'_>) -> BenchResult<()> {
    let cfg = ctx.cfg;
    for &k in &cfg.sessions {
        at(ctx, k).await?;
    }
    Ok(())
}

/// W2 with `k` sessions.
async fn at(ctx: &mut Ctx<'_>, k: usize) -> BenchResult<()> {
    let (cfg, target, limit) = (ctx.cfg, ctx.target, ctx.limit());
    let native = LockKind::native(target.backend());
    let sessions = ctx.sessions(k).await?;
    let case = |n: &str| format!("{n}, {k} sessions");
    let dir = ctx.dir(&format!("w2s{k}"));
    let run = locks::contended(target, &sessions, LockKind::Simple, k, &dir, cfg.handoffs);
    let simple = match timed(limit, "W2 SimpleLock", run).await {
        Ok(h) => Some(h),
        Err(e) => {
            ctx.fail(format!("W2 SimpleLock k={k}"), e);
            None
        }
    };
    let blocks = cfg.w2_blocks.max(1);
    let per_block = (cfg.handoffs / blocks).max(2);
    let mut nat: Vec<Handoffs> = Vec::new();
    let mut ours: Vec<Handoffs> = Vec::new();
    let mut our_requests = 0u64;
    'blocks: for b in 0..blocks {
        let native_first = b % 2 == 0;
        for native_turn in [native_first, !native_first] {
            let (kind, dir) = match (native_turn, native) {
                (true, Some(kind)) => (kind, ctx.dir(&format!("w2n{k}b{b}"))),
                (true, None) => continue,
                (false, _) => (LockKind::Lock, ctx.dir(&format!("w2{k}b{b}"))),
            };
            let before = requests_of(&sessions);
            let run = locks::contended(target, &sessions, kind, k, &dir, per_block);
            match timed(limit, "W2", run).await {
                Ok(h) if native_turn => nat.push(h),
                Ok(h) => {
                    our_requests += requests_of(&sessions).saturating_sub(before);
                    ours.push(h);
                }
                Err(e) => {
                    ctx.fail(format!("W2 {} k={k}", kind.name()), e);
                    break 'blocks;
                }
            }
        }
    }
    if let (Some(kind), false) = (native, nat.is_empty()) {
        let c = case(&format!("{} (baseline)", kind.name()));
        for (key, metric, f, unit) in ROWS {
            ctx.rep.push(
                Row::new(format!("w2.native.k{k}.{key}"), "W2", &c)
                    .metric(metric, unit)
                    .value(median(&each(&nat, f))),
            );
        }
    }
    let nat_name = native.map(|kind| kind.name());
    if let Some(h) = &simple {
        let base = |f: Figure| {
            nat_name
                .filter(|_| !nat.is_empty())
                .map(|n| (n, median(&each(&nat, f))))
        };
        let c = case("SimpleLock (herd baseline)");
        for (key, metric, f, unit) in ROWS {
            ctx.rep.push(
                Row::new(format!("w2.simple.k{k}.{key}"), "W2", &c)
                    .metric(metric, unit)
                    .value(f(h))
                    .ratio_to(base(f)),
            );
        }
        ctx.rep.push(
            Row::new(format!("w2.simple.k{k}.wakeups"), "W2", &c)
                .metric("wake-ups per release", Unit::Count)
                .value(h.wakeups_per_release.unwrap_or(0.0)),
        );
    }
    if !ours.is_empty() {
        let c = case("Lock");
        for (key, metric, f, unit) in ROWS {
            let row = Row::new(format!("w2.lock.k{k}.{key}"), "W2", &c).metric(metric, unit);
            let our = each(&ours, f);
            ctx.rep.push(match nat_name {
                Some(n) if nat.len() == ours.len() => row.blocks(&our, (n, &each(&nat, f))),
                _ => row
                    .value(median(&our))
                    .ratio_to(simple.as_ref().map(|h| ("SimpleLock", f(h)))),
            });
        }
        let wakeups: Vec<f64> = ours.iter().filter_map(|h| h.wakeups_per_release).collect();
        ctx.rep.push(
            Row::new(format!("w2.lock.k{k}.wakeups"), "W2", &c)
                .metric("wake-ups per release", Unit::Count)
                .value(wakeups.iter().sum::<f64>() / wakeups.len().max(1) as f64)
                .ratio_to(
                    simple
                        .and_then(|s| s.wakeups_per_release)
                        .map(|w| ("SimpleLock", w)),
                ),
        );
        ctx.rep.push(
            Row::new(format!("rt.w2.k{k}.requests"), "RT", &c)
                .metric("requests per acquisition (all sessions)", Unit::Requests)
                .value(our_requests as f64 / (ours.len() * per_block) as f64),
        );
    }
    let violations: usize = ours
        .iter()
        .chain(&nat)
        .chain(&simple)
        .map(|h| h.violations)
        .sum();
    if violations > 0 {
        ctx.fail(
            format!("W2 k={k}"),
            format!("{violations} mutual exclusion violations"),
        );
    }
    Ok(())
}

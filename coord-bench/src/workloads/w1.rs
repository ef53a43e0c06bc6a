//! W1: uncontended acquire + release on one session — `Lock` (released,
//! and guard dropped) beside the backend's native lock, in alternating
//! blocks.

use crate::context::{timed, Ctx};
use crate::error::BenchResult;
use crate::locks::{self, Cycles, LockKind};
use crate::row::{Row, Unit};

/// Run W1 and record its rows.
///
/// # Errors
/// The session cannot be opened; a failed run is recorded in the report.
pub(crate) async fn bench(ctx: &mut Ctx<'_>) -> BenchResult<()> {
    let native = LockKind::native(ctx.target.backend());
    let kinds: Vec<LockKind> = native
        .into_iter()
        .chain([LockKind::LockDrop, LockKind::Lock])
        .collect();
    let s = ctx.sessions(1).await?;
    let (dir, cfg) = (ctx.dir("w1"), ctx.cfg);
    let run = locks::uncontended(ctx.target, &s, &kinds, &dir, cfg.cycles, cfg.w1_blocks);
    let (mut base, mut ours, mut dropped) = (None, None, None);
    match timed(ctx.limit(), "W1", run).await {
        Ok(mut got) => {
            ours = got.pop();
            dropped = got.pop();
            if let (Some(kind), Some(c)) = (native, got.pop()) {
                let case = format!("{} (baseline)", kind.name());
                let row = |key: &str, metric: &str, unit| {
                    Row::new(key, "W1", case.as_str()).metric(metric, unit)
                };
                ctx.rep
                    .push(row("w1.native.per_s", "cycles", Unit::PerSec).value(c.per_s));
                ctx.rep
                    .push(row("w1.native.p50_ms", "latency p50", Unit::Ms).value(c.latency.p50));
                ctx.rep
                    .push(row("w1.native.p99_ms", "latency p99", Unit::Ms).value(c.latency.p99));
                base = Some((kind.name().to_owned(), c));
            }
        }
        Err(e) => ctx.fail("W1", e),
    }
    let Some(c) = ours else {
        return Ok(());
    };
    // Without a native lock, the raw round trip is the baseline: one
    // cycle per round trip at best.
    let (bn, per_s, p50, p99) = match &base {
        Some((n, b)) => (n.clone(), b.per_s, b.latency.p50, b.latency.p99),
        None => match ctx.rtt() {
            Some((n, v)) => (n.to_string(), 1e3 / v, v, v),
            None => (String::new(), 0.0, 0.0, 0.0),
        },
    };
    let b = |v: f64| (!bn.is_empty()).then_some((bn.as_str(), v));
    // Cycles per second: a ratio per block when the native lock ran in
    // blocks too.
    let per_s_row = |key: &str, case: &str, x: &Cycles| {
        let row = Row::new(key, "W1", case).metric("cycles", Unit::PerSec);
        match &base {
            Some((n, base)) if !base.blocks.is_empty() => row.blocks(&x.blocks, (n, &base.blocks)),
            _ => row.value(x.per_s).ratio_to(b(per_s)),
        }
    };
    let case = "Lock, 1 session";
    let row = |key: &str, metric: &str| Row::new(key, "W1", case).metric(metric, Unit::Ms);
    ctx.rep.push(per_s_row("w1.lock.per_s", case, &c));
    ctx.rep.push(
        row("w1.lock.p50_ms", "latency p50")
            .value(c.latency.p50)
            .ratio_to(b(p50)),
    );
    ctx.rep.push(
        row("w1.lock.p99_ms", "latency p99")
            .value(c.latency.p99)
            .ratio_to(b(p99)),
    );
    if let Some(d) = dropped {
        let case = "Lock, guard dropped (background release), 1 session";
        ctx.rep.push(per_s_row("w1.lockdrop.per_s", case, &d));
        ctx.rep.push(
            Row::new("w1.lockdrop.p50_ms", "W1", case)
                .metric("latency p50", Unit::Ms)
                .value(d.latency.p50)
                .ratio_to(b(p50)),
        );
    }
    Ok(())
}

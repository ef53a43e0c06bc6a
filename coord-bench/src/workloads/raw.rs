//! The raw round trip: the server's own create + delete on one session,
//! every other workload's yardstick.

use std::time::Instant;

use coordination::Session;

use crate::context::{timed, Ctx};
use crate::error::BenchResult;
use crate::locks::Cycles;
use crate::row::{Row, Unit};
use crate::stats::percentiles;

/// Measure the raw round trip and record it (and keep its p50 as the
/// run's yardstick, [`Ctx::rtt`]).
///
/// # Errors
/// None: a failure is recorded in the report.
pub(crate) async fn bench(ctx: &mut Ctx<'_>) -> BenchResult<()> {
    let (dir, cycles) = (ctx.dir("raw"), ctx.cfg.cycles);
    let pool = &mut ctx.pool;
    let got = timed(ctx.cfg.workload_timeout, "raw", async {
        let s = pool.get(1).await?;
        raw_round_trip(&s[0], &dir, cycles).await
    })
    .await;
    match got {
        Ok(c) => {
            ctx.rtt_ms = Some(c.latency.p50);
            let row = |key: &str, metric: &str, unit| {
                Row::new(key, "base", "create + delete, 1 session").metric(metric, unit)
            };
            ctx.rep
                .push(row("raw.p50_ms", "latency p50", Unit::Ms).value(c.latency.p50));
            ctx.rep
                .push(row("raw.per_s", "round trips", Unit::PerSec).value(c.per_s));
        }
        Err(e) => ctx.fail("raw", e),
    }
    Ok(())
}

/// The raw round trip: create an ephemeral node and delete it, `ops` times
/// on one session.
///
/// # Errors
/// Server errors.
pub async fn raw_round_trip(session: &Session, dir: &str, ops: usize) -> BenchResult<Cycles> {
    let path = format!("{dir}/node");
    session.ensure_dir(dir).await?;
    for _ in 0..ops.clamp(1, 20) {
        session
            .create(&path, b"", coordination::CreateMode::Ephemeral)
            .await?;
        session.delete(&path, None).await?;
    }
    let mut lat = Vec::with_capacity(ops);
    let start = Instant::now();
    for _ in 0..ops {
        let t0 = Instant::now();
        session
            .create(&path, b"", coordination::CreateMode::Ephemeral)
            .await?;
        session.delete(&path, None).await?;
        lat.push(t0.elapsed());
    }
    Ok(Cycles {
        per_s: ops as f64 / start.elapsed().as_secs_f64(),
        blocks: Vec::new(),
        latency: percentiles(&mut lat),
    })
}

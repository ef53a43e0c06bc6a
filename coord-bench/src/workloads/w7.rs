//! W7: the double barrier — participants entering and leaving a fresh
//! barrier round after round, at each size.

use std::sync::Arc;
use std::time::{Duration, Instant};

use coordination::{DoubleBarrier, Session};

use crate::context::{timed, Ctx};
use crate::error::{BenchError, BenchResult};
use crate::row::{Row, Unit};

/// Run W7 at every size and record its rows.
///
/// # Errors
/// Sessions that cannot be opened; a failed run is recorded in the report.
pub(crate) async fn bench(ctx: &mut Ctx<'_>) -> BenchResult<()> {
    let (cfg, limit) = (ctx.cfg, ctx.limit());
    let (rounds, rtt) = (cfg.barrier_rounds, ctx.rtt());
    for &size in &cfg.barrier_sizes {
        let sessions = ctx.sessions(size).await?;
        let dir = ctx.dir(&format!("w7n{size}"));
        let run = double_barrier(&sessions, &dir, rounds);
        match timed(limit, "W7", run).await {
            Ok(d) => {
                let round = d.as_secs_f64() * 1e3 / rounds as f64;
                let case = format!("DoubleBarrier, {size} participants × {rounds} rounds");
                let row = |key: &str, metric: &str| {
                    Row::new(format!("w7.n{size}.{key}"), "W7", &case).metric(metric, Unit::Ms)
                };
                ctx.rep
                    .push(row("round_ms", "time per round").value(round).ratio_to(rtt));
                ctx.rep.push(
                    row("per_participant_ms", "time per participant per round")
                        .value(round / size as f64)
                        .ratio_to(("ZooKeeper paper, upper", 0.51)),
                );
            }
            Err(e) => ctx.fail(format!("W7 n={size}"), e),
        }
    }
    Ok(())
}

/// W7: `sessions.len()` participants enter and leave a fresh double
/// barrier `rounds` times; returns the whole time.
///
/// # Errors
/// Server errors.
pub async fn double_barrier(
    sessions: &[Session],
    dir: &str,
    rounds: usize,
) -> BenchResult<Duration> {
    let n = sessions.len();
    let gate = Arc::new(tokio::sync::Barrier::new(n + 1));
    let mut set = tokio::task::JoinSet::new();
    for s in sessions {
        let s = s.clone();
        let dir = dir.to_owned();
        let gate = gate.clone();
        set.spawn(async move {
            gate.wait().await;
            for r in 0..rounds {
                // A fresh barrier each round: the recipe's `ready` node stays.
                let b = DoubleBarrier::new(&s, &format!("{dir}/r{r}"), n)?;
                let inside = b.enter().await?;
                inside.leave().await?;
            }
            Ok::<(), BenchError>(())
        });
    }
    // Timed from before the gate opens: a fast run may finish before
    // this task is polled again.
    let start = Instant::now();
    gate.wait().await;
    while let Some(r) = set.join_next().await {
        r??;
    }
    Ok(start.elapsed())
}

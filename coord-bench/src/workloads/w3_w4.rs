//! W3 and W4: a mixed load on K sessions — `RwLock` with 90% reads (W3)
//! and a 4-lease `Semaphore` (W4) — beside the exclusive `Lock` under the
//! same load, in interleaved blocks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use coordination::{Lock, RwLock, Semaphore, Session};

use crate::context::{timed, Ctx};
use crate::error::{BenchError, BenchResult};
use crate::row::{Row, Unit};
use crate::stats::{median, percentiles, Percentiles};

/// A W3 latency row: key, metric, the figure of a block.
type MixedRow = (&'static str, &'static str, fn(&Mixed) -> f64);

/// Run W3 and W4 with the exclusive `Lock` under the same load as their
/// baseline, and record their rows. The three run in `w2_blocks`
/// interleaved blocks (the order rotates), and each ratio to the `Lock`
/// is the median of the blocks' ratios.
///
/// # Errors
/// Sessions that cannot be opened; a failed run is recorded in the report.
pub(crate) async fn bench(ctx: &mut Ctx<'_>) -> BenchResult<()> {
    let m = ctx.cfg.mixed_sessions;
    let sessions = ctx.sessions(m).await?;
    let kinds = [
        MixKind::Exclusive,
        MixKind::ReadWrite,
        MixKind::Semaphore(4),
    ];
    let names = ["W3/W4 baseline", "W3", "W4"];
    let blocks = ctx.cfg.w2_blocks.max(1);
    let ops = (ctx.cfg.mixed_ops / blocks).max(1);
    let mut runs: [Vec<Mixed>; 3] = Default::default();
    'w34: for b in 0..blocks {
        for j in 0..kinds.len() {
            let i = (j + b) % kinds.len();
            let dir = ctx.dir(&format!("w34k{i}b{b}"));
            match timed(ctx.limit(), names[i], mixed(&sessions, kinds[i], &dir, ops)).await {
                Ok(x) => runs[i].push(x),
                Err(e) => {
                    ctx.fail(names[i], e);
                    break 'w34;
                }
            }
        }
    }
    let [excl, rw, sem] = runs;
    let per_s = |xs: &[Mixed]| xs.iter().map(|x| x.per_s).collect::<Vec<f64>>();
    let med = |xs: &[Mixed], f: fn(&Mixed) -> f64| median(&xs.iter().map(f).collect::<Vec<f64>>());
    // The exclusive Lock's throughput: the baseline of W3's and W4's.
    let same_load = per_s(&excl);
    if !excl.is_empty() {
        ctx.rep.push(
            Row::new(
                "w34.exclusive.per_s",
                "W3/W4",
                format!("Lock (baseline), {m} sessions"),
            )
            .metric("ops", Unit::PerSec)
            .value(median(&same_load)),
        );
    }
    let complete = |xs: &[Mixed]| !xs.is_empty() && xs.len() == excl.len();
    let rtt = ctx.rtt();
    if complete(&rw) {
        let case = format!("RwLock 90% reads, {m} sessions");
        ctx.rep.push(
            Row::new("w3.per_s", "W3", &case)
                .metric("ops", Unit::PerSec)
                .blocks(&per_s(&rw), ("Lock, same load", &same_load)),
        );
        let rows: [MixedRow; 4] = [
            ("w3.read_p50_ms", "read acquire p50", |x| x.read.p50),
            ("w3.read_p99_ms", "read acquire p99", |x| x.read.p99),
            ("w3.write_p50_ms", "write acquire p50", |x| x.write.p50),
            ("w3.write_p99_ms", "write acquire p99", |x| x.write.p99),
        ];
        for (key, metric, f) in rows {
            ctx.rep.push(
                Row::new(key, "W3", &case)
                    .metric(metric, Unit::Ms)
                    .value(med(&rw, f))
                    .ratio_to(rtt),
            );
        }
    }
    if complete(&sem) {
        let case = format!("Semaphore 4 leases, {m} sessions");
        let row = |key: &str, metric: &str, unit| Row::new(key, "W4", &case).metric(metric, unit);
        ctx.rep.push(
            row("w4.per_s", "ops", Unit::PerSec)
                .blocks(&per_s(&sem), ("Lock, same load", &same_load)),
        );
        ctx.rep.push(
            row("w4.p50_ms", "acquire p50", Unit::Ms)
                .value(med(&sem, |x| x.read.p50))
                .ratio_to(rtt),
        );
        ctx.rep.push(
            row("w4.p99_ms", "acquire p99", Unit::Ms)
                .value(med(&sem, |x| x.read.p99))
                .ratio_to(rtt),
        );
        let most = sem.iter().map(|x| x.max_inside).max().unwrap_or(0);
        ctx.rep.push(
            row("w4.max_inside", "most holders at once", Unit::Count)
                .value(most as f64)
                .ratio_to(("leases", 4.0)),
        );
        if most > 4 {
            ctx.fail("W4", format!("{most} holders at once over 4 leases"));
        }
    }
    Ok(())
}

/// What W3 and W4 take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MixKind {
    /// `RwLock`: every tenth operation writes, the others read.
    ReadWrite,
    /// `Lock` for every operation (W3's and W4's baseline).
    Exclusive,
    /// `Semaphore` with this many leases, one lease per operation.
    Semaphore(u32),
}

/// W3 / W4 results.
#[derive(Debug, Clone, Copy)]
pub struct Mixed {
    /// Operations (acquire + release) per second, all sessions together.
    pub per_s: f64,
    /// Acquire latency of reads (or of every operation).
    pub read: Percentiles,
    /// Acquire latency of writes (`ReadWrite` only).
    pub write: Percentiles,
    /// The most holders inside at once.
    pub max_inside: usize,
}

/// Run W3 / W4: each session does `ops` operations.
///
/// # Errors
/// Server errors.
pub async fn mixed(
    sessions: &[Session],
    kind: MixKind,
    dir: &str,
    ops: usize,
) -> BenchResult<Mixed> {
    let inside = Arc::new(AtomicUsize::new(0));
    let max_inside = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(tokio::sync::Barrier::new(sessions.len() + 1));
    let n = sessions.len();
    let mut set = tokio::task::JoinSet::new();
    for (t, s) in sessions.iter().enumerate() {
        let s = s.clone();
        let dir = dir.to_owned();
        let inside = inside.clone();
        let max_inside = max_inside.clone();
        let gate = gate.clone();
        set.spawn(async move {
            let mut reads = Vec::new();
            let mut writes = Vec::new();
            let enter = || {
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                max_inside.fetch_max(now, Ordering::SeqCst);
            };
            let leave = || {
                inside.fetch_sub(1, Ordering::SeqCst);
            };
            gate.wait().await;
            match kind {
                MixKind::ReadWrite => {
                    let rw = RwLock::new(&s, &dir)?;
                    for i in 0..ops {
                        let write = (i * n + t).is_multiple_of(10);
                        let t0 = Instant::now();
                        let g = if write {
                            rw.write().await?
                        } else {
                            rw.read().await?
                        };
                        let d = t0.elapsed();
                        if write {
                            writes.push(d);
                        } else {
                            reads.push(d);
                        }
                        enter();
                        leave();
                        g.release().await?;
                    }
                }
                MixKind::Exclusive => {
                    let l = Lock::new(&s, &dir)?;
                    for _ in 0..ops {
                        let t0 = Instant::now();
                        let g = l.acquire().await?;
                        reads.push(t0.elapsed());
                        enter();
                        leave();
                        g.release().await?;
                    }
                }
                MixKind::Semaphore(leases) => {
                    let sem = Semaphore::new(&s, &dir, leases)?;
                    for _ in 0..ops {
                        let t0 = Instant::now();
                        let l = sem.acquire(1).await?;
                        reads.push(t0.elapsed());
                        enter();
                        // Hold briefly so that leases overlap.
                        tokio::task::yield_now().await;
                        leave();
                        Semaphore::return_all(l).await?;
                    }
                }
            }
            Ok::<_, BenchError>((reads, writes))
        });
    }
    // Timed from before the gate opens: a fast run may finish before
    // this task is polled again.
    let start = Instant::now();
    gate.wait().await;
    let mut reads = Vec::new();
    let mut writes = Vec::new();
    while let Some(r) = set.join_next().await {
        let (r, w) = r??;
        reads.extend(r);
        writes.extend(w);
    }
    let elapsed = start.elapsed().as_secs_f64();
    Ok(Mixed {
        per_s: (ops * n) as f64 / elapsed,
        read: percentiles(&mut reads),
        write: percentiles(&mut writes),
        max_inside: max_inside.load(Ordering::SeqCst),
    })
}

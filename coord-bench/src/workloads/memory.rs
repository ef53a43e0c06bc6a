//! M: memory — one session holding 10,000 locks (10,000 distinct `Lock`s,
//! their guards held), and one session watching 10,000 nodes
//! (`get_watch`): the process's resident memory per hold and per watch.
//! On the in-memory backend the server's side lives in the same process
//! and is counted too.

use std::time::Instant;

use coordination::{CreateMode, Lock, Session};

use crate::context::{timed, Ctx};
use crate::error::{BenchError, BenchResult};
use crate::row::{Row, Unit};

/// How many acquires, creates or watches are in flight at once.
const IN_FLIGHT: usize = 64;

/// The process's resident memory in bytes (`VmRSS` of
/// `/proc/self/status`); `None` where there is no such file.
pub fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// What [`holds`] or [`watches`] measured.
#[derive(Debug, Clone, Copy)]
pub struct Held {
    /// Locks held or nodes watched.
    pub count: usize,
    /// Resident memory (bytes) before and while holding them.
    pub rss: (u64, u64),
    /// Holds (or watches) set up per second.
    pub per_s: f64,
}

impl Held {
    /// Resident bytes per hold; NaN when memory shrank (nothing to say).
    pub fn per_hold(&self) -> f64 {
        let (a, b) = self.rss;
        if b < a {
            return f64::NAN;
        }
        (b - a) as f64 / self.count.max(1) as f64
    }
}

/// Run the memory workload and record its rows.
///
/// # Errors
/// Sessions that cannot be opened; a failed run is recorded in the report.
pub(crate) async fn bench(ctx: &mut Ctx<'_>) -> BenchResult<()> {
    let (n, limit) = (ctx.cfg.growth.holds, ctx.cfg.growth.timeout);
    let s = ctx.sessions(1).await?.remove(0);
    let dir = ctx.dir("mem-locks");
    match timed(limit, "memory, locks", holds(&s, &dir, n)).await {
        Ok(h) => push(ctx, "locks", &format!("1 session holding {n} Locks"), &h),
        Err(e) => ctx.fail("memory, locks", e),
    }
    let dir = ctx.dir("mem-watches");
    let maker = ctx.target.open().await?;
    let run = watches(&maker, &s, &dir, n);
    match timed(limit, "memory, watches", run).await {
        Ok(h) => push(
            ctx,
            "watches",
            &format!("1 session watching {n} nodes (get_watch)"),
            &h,
        ),
        Err(e) => ctx.fail("memory, watches", e),
    }
    // Its ephemeral nodes go with it.
    let _ = maker.close().await;
    Ok(())
}

fn push(ctx: &mut Ctx<'_>, what: &str, case: &str, h: &Held) {
    let row = |key: &str, metric: &str, unit| {
        Row::new(format!("growth.memory.{what}.{key}"), "M", case).metric(metric, unit)
    };
    ctx.rep
        .push(row("bytes_per", "resident bytes per hold", Unit::Count).value(h.per_hold()));
    ctx.rep.push(
        row("rss_mib", "resident MiB while holding", Unit::Count)
            .value(h.rss.1 as f64 / 1048576.0)
            .ratio_to(("before", h.rss.0 as f64 / 1048576.0)),
    );
    ctx.rep
        .push(row("setup_per_s", "set up", Unit::PerSec).value(h.per_s));
}

/// `IN_FLIGHT` at a time, run `f(i)` for `i` in `0..n`; their outputs, in
/// no particular order.
async fn many<T, F, Fut>(n: usize, f: F) -> BenchResult<Vec<T>>
where
    T: Send + 'static,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = BenchResult<T>> + Send + 'static,
{
    let mut out = Vec::with_capacity(n);
    let mut set = tokio::task::JoinSet::new();
    for i in 0..n {
        if set.len() >= IN_FLIGHT {
            if let Some(r) = set.join_next().await {
                out.push(r??);
            }
        }
        set.spawn(f(i));
    }
    while let Some(r) = set.join_next().await {
        out.push(r??);
    }
    Ok(out)
}

/// Acquire `n` distinct locks under `dir` on `s` and hold them: the
/// resident memory before and while holding; then release them.
///
/// # Errors
/// Server errors.
pub async fn holds(s: &Session, dir: &str, n: usize) -> BenchResult<Held> {
    let lock = |i: usize| {
        let s = s.clone();
        let path = format!("{dir}/l{i}");
        async move {
            let l = Lock::new(&s, &path)?;
            Ok::<_, BenchError>(l.acquire().await?)
        }
    };
    // Warm up the paths the holds take, so their first-use allocations
    // are not counted per hold.
    for g in many(n.min(100), lock).await? {
        g.release().await?;
    }
    let before = rss_bytes().unwrap_or(0);
    let start = Instant::now();
    let guards = many(n, |i| lock(i + n)).await?;
    let per_s = n as f64 / start.elapsed().as_secs_f64();
    let during = rss_bytes().unwrap_or(0);
    if guards.len() != n {
        return Err(format!("held {} locks of {n}", guards.len()).into());
    }
    let mut set = tokio::task::JoinSet::new();
    for g in guards {
        if set.len() >= IN_FLIGHT {
            if let Some(r) = set.join_next().await {
                r??;
            }
        }
        set.spawn(g.release());
    }
    while let Some(r) = set.join_next().await {
        r??;
    }
    Ok(Held {
        count: n,
        rss: (before, during),
        per_s,
    })
}

/// `maker` makes `n` ephemeral nodes under `dir`; `s` reads each with a
/// watch (`get_watch`) and holds the watches: the resident memory before
/// and while watching. The nodes stay (they go with `maker`).
///
/// # Errors
/// Server errors; a node not found.
pub async fn watches(maker: &Session, s: &Session, dir: &str, n: usize) -> BenchResult<Held> {
    maker.ensure_dir(dir).await?;
    many(n, |i| {
        let m = maker.clone();
        let path = format!("{dir}/n{i}");
        async move {
            m.create(&path, b"", CreateMode::Ephemeral).await?;
            Ok::<_, BenchError>(())
        }
    })
    .await?;
    let watch = |i: usize| {
        let s = s.clone();
        let path = format!("{dir}/n{i}");
        async move {
            let (_, w) = s
                .get_watch(&path)
                .await?
                .ok_or_else(|| format!("{path} is not there"))?;
            Ok::<_, BenchError>(w)
        }
    };
    // Warm-up, as for the holds.
    drop(many(n.min(100), watch).await?);
    let before = rss_bytes().unwrap_or(0);
    let start = Instant::now();
    let held = many(n, watch).await?;
    let per_s = n as f64 / start.elapsed().as_secs_f64();
    let during = rss_bytes().unwrap_or(0);
    if held.len() != n {
        return Err(format!("watched {} nodes of {n}", held.len()).into());
    }
    drop(held);
    Ok(Held {
        count: n,
        rss: (before, during),
        per_s,
    })
}

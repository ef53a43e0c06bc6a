//! Q: queue scale — 100,000 prefilled items drained with 4 consumers and
//! with 1 (`poll` until empty), beside a 10,000-item drain: items per
//! second, and names listed per item; every item taken exactly once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use coordination::{Queue, Session};

use crate::context::{timed, Ctx};
use crate::error::{BenchError, BenchResult};
use crate::row::{Row, Unit};

/// One drain's figures.
#[derive(Debug, Clone, Copy)]
pub struct Drain {
    /// Items offered per second while prefilling.
    pub fill_per_s: f64,
    /// Items taken per second while draining.
    pub items_per_s: f64,
    /// Listings the consumers made.
    pub listings: u64,
    /// Names those listings returned, summed.
    pub names_listed: u64,
    /// Items taken (every one exactly once, or the drain fails).
    pub taken: usize,
}

/// Run the queue scale and record its rows.
///
/// # Errors
/// Sessions that cannot be opened; a failed run is recorded in the report.
pub(crate) async fn bench(ctx: &mut Ctx<'_>) -> BenchResult<()> {
    let (big, small) = ctx.cfg.growth.queue_sizes;
    let (c, limit) = (ctx.cfg.consumers.max(1), ctx.cfg.growth.timeout);
    let sessions = ctx.sessions(c + 1).await?;
    let mut rates = Vec::new();
    for consumers in [c, 1] {
        let mut per = Vec::new();
        for n in [small, big] {
            let dir = ctx.dir(&format!("q{consumers}n{n}"));
            let run = drain_checked(&sessions, &sessions[1..=consumers], &dir, n);
            let d = match timed(limit, "queue scale", run).await {
                Ok(d) => d,
                Err(e) => {
                    ctx.fail(format!("queue scale, {n} items, {consumers} consumers"), e);
                    continue;
                }
            };
            let case = format!("Queue, drain {n} prefilled items, {consumers} consumer(s)");
            let row = |key: &str, metric: &str, unit| {
                Row::new(format!("growth.queue.c{consumers}.n{n}.{key}"), "Q", &case)
                    .metric(metric, unit)
            };
            ctx.rep
                .push(row("fill_per_s", "items offered", Unit::PerSec).value(d.fill_per_s));
            ctx.rep
                .push(row("per_s", "items taken", Unit::PerSec).value(d.items_per_s));
            ctx.rep.push(
                row("taken", "items taken (each exactly once)", Unit::Count)
                    .value(d.taken as f64)
                    .ratio_to(("items", n as f64)),
            );
            ctx.rep.push(
                row("names_per_item", "names listed per item", Unit::Count)
                    .value(d.names_listed as f64 / n.max(1) as f64),
            );
            ctx.rep.push(
                row("listings_per_item", "listings per item", Unit::Count)
                    .value(d.listings as f64 / n.max(1) as f64),
            );
            per.push(d.items_per_s);
        }
        if let [s, b] = per.as_slice() {
            rates.push((consumers, *s, *b));
        }
    }
    for (consumers, s, b) in rates {
        ctx.rep.push(
            Row::new(
                format!("growth.queue.c{consumers}.ratio"),
                "Q",
                format!("Queue, {consumers} consumer(s): items/s draining {big} ÷ {small}"),
            )
            .metric("items taken", Unit::PerSec)
            .value(b)
            .ratio_to((format!("drain {small}").as_str(), s)),
        );
    }
    Ok(())
}

/// Prefill `n` items (`item <i>`, four offers in flight per session of
/// `fillers`), then time `consumers` draining them with `poll` until
/// empty, and check that every item was taken exactly once.
///
/// # Errors
/// Server errors; an item taken twice, or not at all.
pub async fn drain_checked(
    fillers: &[Session],
    consumers: &[Session],
    dir: &str,
    n: usize,
) -> BenchResult<Drain> {
    let next = Arc::new(AtomicUsize::new(0));
    let mut set = tokio::task::JoinSet::new();
    let start = Instant::now();
    for s in fillers.iter().cycle().take(fillers.len() * 4) {
        let q = Queue::new(s, dir)?;
        let next = next.clone();
        set.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= n {
                    return Ok::<(), BenchError>(());
                }
                q.offer(format!("item {i}").as_bytes()).await?;
            }
        });
    }
    while let Some(r) = set.join_next().await {
        r??;
    }
    let fill_per_s = n as f64 / start.elapsed().as_secs_f64();
    let gate = Arc::new(tokio::sync::Barrier::new(consumers.len() + 1));
    let mut set = tokio::task::JoinSet::new();
    for s in consumers {
        let q = Queue::new(s, dir)?;
        let gate = gate.clone();
        set.spawn(async move {
            gate.wait().await;
            let mut taken = Vec::new();
            while let Some(item) = q.poll().await? {
                taken.push(item);
            }
            let st = q.stats();
            Ok::<_, BenchError>((taken, st.listings(), st.names_listed()))
        });
    }
    let start = Instant::now();
    gate.wait().await;
    let mut seen = vec![0u8; n];
    let (mut listings, mut names_listed, mut taken) = (0, 0, 0);
    while let Some(r) = set.join_next().await {
        let (items, l, names) = r??;
        listings += l;
        names_listed += names;
        taken += items.len();
        for item in items {
            let i = std::str::from_utf8(&item)
                .ok()
                .and_then(|s| s.strip_prefix("item "))
                .and_then(|s| s.parse::<usize>().ok())
                .filter(|i| *i < n)
                .ok_or("an item that was never offered")?;
            seen[i] = seen[i].saturating_add(1);
        }
    }
    let elapsed = start.elapsed();
    if let Some(i) = seen.iter().position(|&c| c != 1) {
        return Err(format!("item {i} was taken {} times", seen[i]).into());
    }
    Ok(Drain {
        fill_per_s,
        items_per_s: n as f64 / elapsed.as_secs_f64(),
        listings,
        names_listed,
        taken,
    })
}

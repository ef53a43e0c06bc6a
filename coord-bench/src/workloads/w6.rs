//! W6: the queue — one producer with consumers taking concurrently,
//! draining N and 2N prefilled items, and four consumers against one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use coordination::{Queue, Session};

use crate::context::{timed, Ctx};
use crate::error::{BenchError, BenchResult};
use crate::row::{Row, Unit};

/// Run W6 and record its rows.
///
/// # Errors
/// Sessions that cannot be opened; a failed run is recorded in the report.
pub(crate) async fn bench(ctx: &mut Ctx<'_>) -> BenchResult<()> {
    let (c, n, limit) = (ctx.cfg.consumers, ctx.cfg.queue_items, ctx.limit());
    let sessions = ctx.sessions(c + 1).await?;
    let (producer, consumers) = (&sessions[0], &sessions[1..]);
    let dir = ctx.dir("w6a");
    let run = queue_concurrent(producer, consumers, &dir, n);
    match timed(limit, "W6", run).await {
        Ok(q) => {
            let case = format!("Queue, 1 producer + {c} consumers, {n} items");
            ctx.rep.push(
                Row::new("w6.items_per_s", "W6", &case)
                    .metric("items", Unit::PerSec)
                    .value(q.items_per_s)
                    .ratio_to(ctx.rtt_ms.map(|v| ("raw create+delete", 1e3 / v))),
            );
            ctx.rep.push(
                Row::new("w6.listings", "W6", &case)
                    .metric("listings", Unit::Count)
                    .value(q.listings as f64)
                    .ratio_to(("items", n as f64)),
            );
        }
        Err(e) => ctx.fail("W6", e),
    }

    // Draining N, then 2N: the time should grow linearly.
    let mut drains = Vec::new();
    for (i, items) in [n, 2 * n].into_iter().enumerate() {
        let dir = ctx.dir(&format!("w6d{i}"));
        let run = queue_drain(&sessions[..1], consumers, &dir, items);
        match timed(limit, "W6 drain", run).await {
            Ok(q) => drains.push((items, q)),
            Err(e) => ctx.fail(format!("W6 drain {items}"), e),
        }
    }
    if let [(n1, a), (n2, b)] = drains.as_slice() {
        for (key, items, q, base) in [
            ("w6.drain1", n1, a, None),
            (
                "w6.drain2",
                n2,
                b,
                Some((format!("drain {n1}"), a.drain.as_secs_f64())),
            ),
        ] {
            let case = format!("drain {items}, {c} consumers");
            ctx.rep.push(
                Row::new(format!("{key}_s"), "W6", &case)
                    .metric("time", Unit::Secs)
                    .value(q.drain.as_secs_f64())
                    .ratio_to(base.as_ref().map(|(n, v)| (n.as_str(), *v))),
            );
            ctx.rep.push(
                Row::new(format!("{key}_listings"), "W6", &case)
                    .metric("listings", Unit::Count)
                    .value(q.listings as f64)
                    .ratio_to(("items", *items as f64)),
            );
        }
    }

    // W6c: one consumer against all of them, draining the same number of
    // prefilled items in interleaved blocks (which goes first alternates).
    let items = (n / 5).max(10);
    let (mut one, mut all) = (Vec::new(), Vec::new());
    'blocks: for b in 0..ctx.cfg.w2_blocks.max(1) {
        let one_first = b % 2 == 0;
        for one_turn in [one_first, !one_first] {
            let consumers = if one_turn {
                &sessions[1..2]
            } else {
                &sessions[1..]
            };
            let dir = ctx.dir(&format!("w6c{b}{}", if one_turn { "one" } else { "all" }));
            match timed(
                limit,
                "W6 consumers",
                queue_drain(&sessions[..1], consumers, &dir, items),
            )
            .await
            {
                Ok(q) if one_turn => one.push(q.items_per_s),
                Ok(q) => all.push(q.items_per_s),
                Err(e) => {
                    ctx.fail("W6 consumers", e);
                    break 'blocks;
                }
            }
        }
    }
    if !all.is_empty() && all.len() == one.len() {
        ctx.rep.push(
            Row::new(
                "w6.four_vs_one.per_s",
                "W6",
                format!("drain {items}, {c} consumers"),
            )
            .metric("items", Unit::PerSec)
            .blocks(&all, ("1 consumer", &one)),
        );
    }
    Ok(())
}

/// W6's results.
#[derive(Debug, Clone, Copy, Default)]
pub struct QueueRun {
    /// Items per second, producer and consumers running together.
    pub items_per_s: f64,
    /// Time to drain the prefilled queue with the consumers.
    pub drain: Duration,
    /// Directory listings the consumers made while draining.
    pub listings: u64,
}

/// W6a: one producer offers `n` items while `consumers` take them.
///
/// # Errors
/// Server errors.
pub async fn queue_concurrent(
    producer: &Session,
    consumers: &[Session],
    dir: &str,
    n: usize,
) -> BenchResult<QueueRun> {
    let taken = Arc::new(AtomicUsize::new(0));
    let (done_tx, done_rx) = tokio::sync::watch::channel(false);
    let done_tx = Arc::new(done_tx);
    let mut set = tokio::task::JoinSet::new();
    for s in consumers {
        let q = Queue::new(s, dir)?;
        let taken = taken.clone();
        let done_tx = done_tx.clone();
        let mut done_rx = done_rx.clone();
        set.spawn(async move {
            loop {
                if *done_rx.borrow() {
                    break;
                }
                tokio::select! {
                    r = q.take() => {
                        r?;
                        if taken.fetch_add(1, Ordering::SeqCst) + 1 >= n {
                            let _ = done_tx.send(true);
                            break;
                        }
                    }
                    _ = done_rx.changed() => {}
                }
            }
            Ok::<u64, BenchError>(q.stats().listings())
        });
    }
    let q = Queue::new(producer, dir)?;
    let start = Instant::now();
    for i in 0..n {
        q.offer(format!("item {i}").as_bytes()).await?;
    }
    let mut listings = 0;
    while let Some(r) = set.join_next().await {
        listings += r??;
    }
    Ok(QueueRun {
        items_per_s: n as f64 / start.elapsed().as_secs_f64(),
        drain: Duration::ZERO,
        listings,
    })
}

/// W6b: prefill `n` items (several offers in flight), then time the
/// consumers draining them with `poll` until empty.
///
/// # Errors
/// Server errors.
pub async fn queue_drain(
    fillers: &[Session],
    consumers: &[Session],
    dir: &str,
    n: usize,
) -> BenchResult<QueueRun> {
    let next = Arc::new(AtomicUsize::new(0));
    let mut set = tokio::task::JoinSet::new();
    for s in fillers.iter().cycle().take(fillers.len() * 4) {
        let q = Queue::new(s, dir)?;
        let next = next.clone();
        set.spawn(async move {
            while next.fetch_add(1, Ordering::SeqCst) < n {
                q.offer(b"item").await?;
            }
            Ok::<(), BenchError>(())
        });
    }
    while let Some(r) = set.join_next().await {
        r??;
    }
    let taken = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(tokio::sync::Barrier::new(consumers.len() + 1));
    let mut set = tokio::task::JoinSet::new();
    for s in consumers {
        let q = Queue::new(s, dir)?;
        let taken = taken.clone();
        let gate = gate.clone();
        set.spawn(async move {
            gate.wait().await;
            while q.poll().await?.is_some() {
                taken.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<u64, BenchError>(q.stats().listings())
        });
    }
    // Timed from before the gate opens: a fast run may finish before
    // this task is polled again.
    let start = Instant::now();
    gate.wait().await;
    let mut listings = 0;
    while let Some(r) = set.join_next().await {
        listings += r??;
    }
    let drain = start.elapsed();
    let got = taken.load(Ordering::Relaxed);
    if got != n {
        return Err(format!("drained {got} items of {n}").into());
    }
    Ok(QueueRun {
        items_per_s: n as f64 / drain.as_secs_f64(),
        drain,
        listings,
    })
}

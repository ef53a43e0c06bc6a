//! W6: the queue — one producer with consumers taking concurrently,
//! draining N and 2N prefilled items, and four consumers against one; on
//! PostgreSQL also the drain beside `SELECT … FOR UPDATE SKIP LOCKED`
//! consumers of a plain table (the native floor).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use coordination::{Queue, Session};

use crate::context::{timed, Ctx};
use crate::error::{BenchError, BenchResult};
use crate::locks::pg_connect;
use crate::row::{Row, Unit};
use crate::stats::median;

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
    if let Some(url) = ctx.target.pg_url() {
        let url = url.to_owned();
        skip_locked(ctx, &url, &sessions).await;
    }
    Ok(())
}

/// W6n (PostgreSQL): draining the same prefilled items with the same
/// number of consumers, `Queue::poll` against `SKIP LOCKED` consumers, in
/// interleaved blocks (which goes first alternates); the table is made in
/// coord's schema and dropped at the end.
async fn skip_locked(ctx: &mut Ctx<'_>, url: &str, sessions: &[Session]) {
    let (c, items, limit) = (ctx.cfg.consumers, ctx.cfg.queue_items, ctx.limit());
    let schema = match ctx.target.pg_schema() {
        Some(s) => s.to_owned(),
        None => return,
    };
    let table = format!(
        "{schema}.bench_queue_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let native = match SkipLocked::open(url, &table, c).await {
        Ok(n) => n,
        Err(e) => return ctx.fail("W6 SKIP LOCKED", e),
    };
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    'blocks: for b in 0..ctx.cfg.w2_blocks.max(1) {
        let native_first = b % 2 == 0;
        for native_turn in [native_first, !native_first] {
            let got = if native_turn {
                timed(limit, "W6 SKIP LOCKED", native.drain(items)).await
            } else {
                let dir = ctx.dir(&format!("w6n{b}"));
                let run = queue_drain(&sessions[..1], &sessions[1..], &dir, items);
                timed(limit, "W6 drain", run).await
            };
            match got {
                Ok(q) if native_turn => theirs.push(q.items_per_s),
                Ok(q) => ours.push(q.items_per_s),
                Err(e) => {
                    ctx.fail("W6 SKIP LOCKED", e);
                    break 'blocks;
                }
            }
        }
    }
    native.close().await;
    if theirs.is_empty() || ours.len() != theirs.len() {
        return;
    }
    let base = "SELECT … FOR UPDATE SKIP LOCKED";
    ctx.rep.push(
        Row::new(
            "w6.native.drain_per_s",
            "W6",
            format!("{base} (baseline), drain {items}, {c} consumers"),
        )
        .metric("items", Unit::PerSec)
        .value(median(&theirs)),
    );
    ctx.rep.push(
        Row::new(
            "w6.vs_native.drain_per_s",
            "W6",
            format!("Queue, drain {items}, {c} consumers"),
        )
        .metric("items", Unit::PerSec)
        .blocks(&ours, (base, &theirs)),
    );
}

/// The native queue: a plain table and consumers on connections of their
/// own, each taking the oldest row no other consumer has locked and
/// deleting it, in one statement (autocommit).
struct SkipLocked {
    table: String,
    admin: tokio_postgres::Client,
    consumers: Vec<Arc<tokio_postgres::Client>>,
}

impl SkipLocked {
    /// The table made, `consumers` connections opened.
    ///
    /// # Errors
    /// The server is unreachable or refuses the table.
    async fn open(url: &str, table: &str, consumers: usize) -> BenchResult<Self> {
        let admin = pg_connect(url).await?;
        admin
            .batch_execute(&format!(
                "create table {table} (id bigserial primary key, payload bytea not null)"
            ))
            .await?;
        let mut out = Vec::with_capacity(consumers);
        for _ in 0..consumers.max(1) {
            out.push(Arc::new(pg_connect(url).await?));
        }
        Ok(SkipLocked {
            table: table.to_owned(),
            admin,
            consumers: out,
        })
    }

    /// Prefill `n` rows (one statement), then time the consumers taking
    /// them until each finds none left.
    ///
    /// # Errors
    /// Server errors; fewer rows taken than filled.
    async fn drain(&self, n: usize) -> BenchResult<QueueRun> {
        let table = &self.table;
        let count = i32::try_from(n)?;
        self.admin
            .execute(
                &format!(
                    "insert into {table} (payload) \
                     select 'item'::bytea from generate_series(1, $1::int)"
                ),
                &[&count],
            )
            .await?;
        let take = format!(
            "delete from {table} where id = (select id from {table} order by id \
             for update skip locked limit 1) returning payload"
        );
        let taken = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new(tokio::sync::Barrier::new(self.consumers.len() + 1));
        let mut set = tokio::task::JoinSet::new();
        for client in &self.consumers {
            let statement = client.prepare(&take).await?;
            let (client, taken, gate) = (client.clone(), taken.clone(), gate.clone());
            set.spawn(async move {
                gate.wait().await;
                while client.query_opt(&statement, &[]).await?.is_some() {
                    taken.fetch_add(1, Ordering::Relaxed);
                }
                Ok::<(), BenchError>(())
            });
        }
        let start = Instant::now();
        gate.wait().await;
        while let Some(r) = set.join_next().await {
            r??;
        }
        let drain = start.elapsed();
        let got = taken.load(Ordering::Relaxed);
        if got != n {
            return Err(format!("SKIP LOCKED consumers took {got} rows of {n}").into());
        }
        Ok(QueueRun {
            items_per_s: n as f64 / drain.as_secs_f64(),
            drain,
            listings: 0,
        })
    }

    /// Drop the table; the connections close when dropped.
    async fn close(self) {
        let _ = self
            .admin
            .batch_execute(&format!("drop table if exists {}", self.table))
            .await;
    }
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

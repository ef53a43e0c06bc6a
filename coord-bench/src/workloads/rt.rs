//! RT: what each operation costs in requests sent to the server
//! ([`Session::requests_sent`]), the benchmark's deterministic figure:
//! unlike a time, it does not move with the machine's load. Each figure is
//! a mean over many operations; the conformance suite holds every backend
//! to the floors (`coord-conformance/src/round_trips.rs`).

use std::time::Instant;

use coordination::Session;
use coordination::{Lock, Queue, Semaphore};

use crate::context::{timed, Ctx};
use crate::error::BenchResult;
use crate::row::{Row, Unit};
use crate::stats::percentiles;

/// Measure and record what each operation costs in requests, and the
/// uncontended `Semaphore` acquire's time beside `Lock`'s.
///
/// # Errors
/// None: a failure is recorded in the report.
pub(crate) async fn bench(ctx: &mut Ctx<'_>) -> BenchResult<()> {
    let (dir, ops) = (ctx.dir("rt"), ctx.cfg.cycles.clamp(1, 200));
    let pool = &mut ctx.pool;
    let got = timed(ctx.cfg.workload_timeout, "RT", async {
        let s = pool.get(5).await?;
        round_trips(s, &dir, ops).await
    })
    .await;
    match got {
        Ok(t) => {
            for trip in &t.trips {
                ctx.rep.push(
                    Row::new(&trip.key, "RT", &trip.case)
                        .metric("requests per operation", Unit::Requests)
                        .value(trip.per_op),
                );
            }
            let (lock_p50, sem_p50) = t.acquire_p50;
            ctx.rep.push(
                Row::new(
                    "rt.semaphore.acquire_p50_ms",
                    "RT",
                    "Semaphore acquire (1 of 2), uncontended, in turn with Lock's",
                )
                .metric("latency p50", Unit::Ms)
                .value(sem_p50)
                .ratio_to(("Lock acquire p50", lock_p50)),
            );
        }
        Err(e) => ctx.fail("RT", e),
    }
    Ok(())
}

/// One figure: a stable key, what ran, and requests per operation.
#[derive(Debug, Clone)]
pub struct Trip {
    /// `rt.<op>`.
    pub key: String,
    /// What the operation is.
    pub case: String,
    /// Requests per operation (mean).
    pub per_op: f64,
}

/// What [`round_trips`] measured.
#[derive(Debug, Clone)]
pub struct Trips {
    /// Requests per operation.
    pub trips: Vec<Trip>,
    /// Acquire latency p50 (ms) of the uncontended `Lock` and `Semaphore`,
    /// their cycles run in turn.
    pub acquire_p50: (f64, f64),
}

/// Requests `s` has sent so far.
fn sent(s: &Session) -> BenchResult<u64> {
    s.requests_sent()
        .ok_or_else(|| format!("the {} backend does not count its requests", s.backend()).into())
}

/// Requests every one of `sessions` has sent so far.
fn sent_by(sessions: &[Session]) -> BenchResult<u64> {
    sessions.iter().map(sent).sum()
}

/// Measure, under `root`, with `sessions` (at least 5: one producer, four
/// consumers): a `Lock`'s uncontended acquire and release and a
/// `Semaphore`'s (2 leases), in turn (with their acquire times), a queue's
/// offer, a take by a lone consumer and a take by one
/// of four consumers draining together (and their deletes per item).
/// `ops` operations of each.
///
/// # Errors
/// A failed operation; fewer than 5 sessions.
pub async fn round_trips(sessions: &[Session], root: &str, ops: usize) -> BenchResult<Trips> {
    let [s, consumers @ ..] = sessions else {
        return Err("round trips need sessions".into());
    };
    let consumers = consumers.get(..4).ok_or("round trips need 5 sessions")?;
    let ops = ops.max(1);
    let n = ops as f64;
    let mut out = Vec::new();
    let mut add = |key: &str, case: &str, total: u64, count: f64| {
        out.push(Trip {
            key: format!("rt.{key}"),
            case: case.to_owned(),
            per_op: total as f64 / count,
        });
    };

    // Lock and Semaphore (2 leases, one taken at a time), cycle after
    // cycle in turn, so their acquire times see the same machine. The
    // first cycle of each makes its directories; count the next ones.
    let lock = Lock::new(s, &format!("{root}/lock"))?;
    lock.acquire().await?.release().await?;
    let sem = Semaphore::new(s, &format!("{root}/sem"), 2)?;
    Semaphore::return_all(sem.acquire(1).await?).await?;
    let (mut lock_acq, mut lock_rel, mut sem_acq, mut sem_rel) = (0, 0, 0, 0);
    let mut lock_ms = Vec::with_capacity(ops);
    let mut sem_ms = Vec::with_capacity(ops);
    for _ in 0..ops {
        let (t0, at) = (sent(s)?, Instant::now());
        let g = lock.acquire().await?;
        lock_ms.push(at.elapsed());
        let t1 = sent(s)?;
        g.release().await?;
        lock_acq += t1 - t0;
        lock_rel += sent(s)? - t1;

        let (t0, at) = (sent(s)?, Instant::now());
        let l = sem.acquire(1).await?;
        sem_ms.push(at.elapsed());
        let t1 = sent(s)?;
        Semaphore::return_all(l).await?;
        sem_acq += t1 - t0;
        sem_rel += sent(s)? - t1;
    }
    add("lock.acquire", "Lock acquire, uncontended", lock_acq, n);
    add("lock.release", "Lock release", lock_rel, n);
    add(
        "semaphore.acquire",
        "Semaphore acquire (1 of 2), uncontended",
        sem_acq,
        n,
    );
    add("semaphore.release", "Semaphore release", sem_rel, n);
    // A guard dropped and the lock taken again at once, as W1's
    // guard-dropped case does: the drop's delete and the next create and
    // listing, and nothing else when the acquire never waits for its own
    // old node.
    drop(lock.acquire().await?);
    let t0 = sent(s)?;
    for _ in 0..ops {
        drop(lock.acquire().await?);
    }
    add(
        "lock.dropcycle",
        "Lock cycle, guard dropped (acquire + the drop's delete)",
        sent(s)? - t0,
        n,
    );
    let acquire_p50 = (percentiles(&mut lock_ms).p50, percentiles(&mut sem_ms).p50);

    // Queue: offers, then a lone consumer's takes.
    let dir = format!("{root}/queue1");
    let q = Queue::new(s, &dir)?;
    q.offer(b"first").await?;
    let t0 = sent(s)?;
    for i in 0..ops {
        q.offer(format!("{i}").as_bytes()).await?;
    }
    add("queue.offer", "Queue offer", sent(s)? - t0, n);
    let c = Queue::new(&consumers[0], &dir)?;
    let t0 = sent(&consumers[0])?;
    let mut taken = 0u64;
    while c.poll().await?.is_some() {
        taken += 1;
    }
    add(
        "queue.take1",
        "Queue take, 1 consumer (listings included)",
        sent(&consumers[0])? - t0,
        taken.max(1) as f64,
    );

    // Four consumers draining `4 × ops` items together.
    let dir = format!("{root}/queue4");
    let q = Queue::new(s, &dir)?;
    let items = 4 * ops;
    for i in 0..items {
        q.offer(format!("{i}").as_bytes()).await?;
    }
    let t0 = sent_by(consumers)?;
    let mut tasks = tokio::task::JoinSet::new();
    for cs in consumers {
        let q = Queue::new(cs, &dir)?;
        tasks.spawn(async move {
            let mut got = 0u64;
            while q.poll().await?.is_some() {
                got += 1;
            }
            let stats = q.stats();
            Ok::<_, coordination::Error>((got, stats.attempts(), stats.names_listed()))
        });
    }
    let (mut got, mut attempts, mut names) = (0u64, 0u64, 0u64);
    while let Some(r) = tasks.join_next().await {
        let (g, a, l) = r??;
        got += g;
        attempts += a;
        names += l;
    }
    if got != items as u64 {
        return Err(format!("4 consumers took {got} of {items} items").into());
    }
    let per = got as f64;
    add(
        "queue.take4",
        "Queue take, 1 of 4 consumers (listings included)",
        sent_by(consumers)? - t0,
        per,
    );
    add(
        "queue.take4.deletes",
        "Queue take, 1 of 4 consumers: deletes per item",
        attempts,
        per,
    );
    add(
        "queue.take4.names",
        "Queue take, 1 of 4 consumers: names listed per item",
        names,
        per,
    );
    Ok(Trips {
        trips: out,
        acquire_p50,
    })
}

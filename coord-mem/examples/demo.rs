//! The coord demo on the in-memory backend: `cargo run -p coord-mem --example demo`.
//!
//! 1. Seed 003, done right: 9 instances share a "6-hourly" job (time scaled
//!    down: one hour is 40 ms); the instance running period 1 crashes
//!    mid-run (its session expires) and another instance runs the period
//!    again. Each period is recorded exactly once.
//! 2. A leader election with two failovers: the leader's session expires,
//!    then the next leader resigns; an observer sees every leader in order.
//! 3. A queue drained by several consumers: every item exactly once.
//!
//! It prints a timeline and checks its own invariants, exiting non-zero if
//! one breaks.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coord_core::recipes::{Election, PeriodicJob, Queue, RunOutcome};
use coord_core::Error;
use coord_mem::MemStore;
use tokio::task::JoinSet;
use tokio::time::Instant;

const HOUR: Duration = Duration::from_millis(40);
const PERIODS: u64 = 4;
const INSTANCES: usize = 9;
const CRASH_PERIOD: u64 = 1;

/// A timeline printer and a list of broken invariants.
#[derive(Clone)]
struct Log {
    t0: Instant,
    broken: Arc<Mutex<Vec<String>>>,
}

impl Log {
    fn say(&self, what: impl AsRef<str>) {
        let t = self.t0.elapsed().as_secs_f64();
        println!("[{t:7.3}s] {}", what.as_ref());
    }

    fn check(&self, ok: bool, what: impl AsRef<str>) {
        if ok {
            println!("            ok: {}", what.as_ref());
        } else {
            println!("        BROKEN: {}", what.as_ref());
            if let Ok(mut b) = self.broken.lock() {
                b.push(what.as_ref().to_owned());
            }
        }
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() -> ExitCode {
    let log = Log {
        t0: Instant::now(),
        broken: Arc::new(Mutex::new(Vec::new())),
    };
    let store = MemStore::new();
    let deadline = Duration::from_secs(10);
    let all = async {
        periodic_job(&store, &log).await;
        election(&store, &log).await;
        queue(&store, &log).await;
    };
    if tokio::time::timeout(deadline, all).await.is_err() {
        log.check(false, format!("the demo finished within {deadline:?}"));
    }
    let broken = log.broken.lock().map(|b| b.clone()).unwrap_or_default();
    if broken.is_empty() {
        println!("all invariants held");
        ExitCode::SUCCESS
    } else {
        println!("{} invariant(s) broken: {broken:?}", broken.len());
        ExitCode::FAILURE
    }
}

/// Part 1: 9 instances, one job every 6 "hours", one crash mid-run.
async fn periodic_job(store: &MemStore, log: &Log) {
    log.say(format!(
        "== seed 003: {INSTANCES} instances, one job every 6 h (1 h = {HOUR:?}), {PERIODS} periods"
    ));
    let started = Arc::new(Mutex::new(vec![Vec::<usize>::new(); PERIODS as usize]));
    let finished = Arc::new(Mutex::new(vec![Vec::<usize>::new(); PERIODS as usize]));
    let running = Arc::new(AtomicUsize::new(0));
    let overlap = Arc::new(AtomicBool::new(false));
    let crash_pending = Arc::new(AtomicBool::new(true));
    let (crash_tx, mut crash_rx) = tokio::sync::mpsc::unbounded_channel();
    let t0 = Instant::now();
    let mut instances = JoinSet::new();
    let mut sessions = Vec::new();
    for i in 0..INSTANCES {
        let session = store.open();
        sessions.push(session.clone());
        let job = match PeriodicJob::new(&session, "/jobs/revenue-sql") {
            Ok(j) => j,
            Err(e) => return log.check(false, format!("job handle: {e}")),
        };
        let (log, started, finished, running, overlap, crash_pending, crash_tx) = (
            log.clone(),
            started.clone(),
            finished.clone(),
            running.clone(),
            overlap.clone(),
            crash_pending.clone(),
            crash_tx.clone(),
        );
        instances.spawn(async move {
            for period in 0..PERIODS {
                tokio::time::sleep_until(t0 + HOUR * 6 * period as u32).await;
                let outcome = job
                    .run(period, |ctx| {
                        let (log, started, finished, running, overlap) = (
                            log.clone(),
                            started.clone(),
                            finished.clone(),
                            running.clone(),
                            overlap.clone(),
                        );
                        let crash = period == CRASH_PERIOD && crash_pending.swap(false, Ordering::SeqCst);
                        let crash_tx = crash_tx.clone();
                        async move {
                            if running.fetch_add(1, Ordering::SeqCst) != 0 {
                                overlap.store(true, Ordering::SeqCst);
                            }
                            if let Ok(mut s) = started.lock() {
                                s[period as usize].push(i);
                            }
                            log.say(format!(
                                "period {period}: instance {i} starts the SQL job (fencing token {})",
                                ctx.fencing_token()
                            ));
                            if crash {
                                log.say(format!("period {period}: instance {i} crashes mid-run"));
                                let _ = crash_tx.send(i);
                                // Hangs until its session is expired under it.
                                std::future::pending::<()>().await;
                            }
                            tokio::time::sleep(HOUR / 2).await;
                            running.fetch_sub(1, Ordering::SeqCst);
                            if let Ok(mut f) = finished.lock() {
                                f[period as usize].push(i);
                            }
                            Ok::<_, String>(())
                        }
                    })
                    .await;
                match outcome {
                    Ok(RunOutcome::Ran(())) => {
                        log.say(format!("period {period}: instance {i} finished and recorded it"))
                    }
                    Ok(_) => {}
                    Err(e) => {
                        log.say(format!("period {period}: instance {i} is gone ({e})"));
                        return;
                    }
                }
            }
        });
    }
    drop(crash_tx);
    // The "server" side of the crash: the crashed instance's session
    // expires, which releases its lock and stops its job.
    if let Some(i) = crash_rx.recv().await {
        tokio::time::sleep(HOUR).await;
        running.fetch_sub(1, Ordering::SeqCst);
        log.say(format!("session of instance {i} expires"));
        store.expire(&sessions[i].id());
    }
    let mut clean = 0;
    while let Some(r) = instances.join_next().await {
        clean += usize::from(r.is_ok());
    }
    log.check(
        clean == INSTANCES,
        format!("{clean} instance tasks ended cleanly"),
    );
    let started = started.lock().map(|s| s.clone()).unwrap_or_default();
    let finished = finished.lock().map(|s| s.clone()).unwrap_or_default();
    log.check(
        finished.len() == PERIODS as usize,
        "every period was accounted for",
    );
    for (p, by) in finished.iter().enumerate() {
        log.check(
            by.len() == 1,
            format!("period {p} completed exactly once (by {by:?})"),
        );
    }
    let crashed = started
        .get(CRASH_PERIOD as usize)
        .cloned()
        .unwrap_or_default();
    log.check(
        crashed.len() == 2,
        format!(
            "the crashed period {CRASH_PERIOD} was retried by another instance (starts: {crashed:?})"
        ),
    );
    log.check(!overlap.load(Ordering::SeqCst), "no two runs overlapped");
    let reader = store.open();
    let last = match PeriodicJob::new(&reader, "/jobs/revenue-sql") {
        Ok(j) => j.last_run().await.ok().flatten(),
        Err(_) => None,
    };
    log.check(
        last == Some(PERIODS - 1),
        format!("the record says the last period run is {last:?}"),
    );
}

/// Part 2: an election with two failovers, followed by an observer.
async fn election(store: &MemStore, log: &Log) {
    log.say("== leader election: node-a, node-b, node-c");
    let observer_session = store.open();
    let mut observer = match Election::new(&observer_session, "/elections/scheduler") {
        Ok(e) => e.observe(),
        Err(e) => return log.check(false, format!("election handle: {e}")),
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let watcher = {
        let (log, seen) = (log.clone(), seen.clone());
        tokio::spawn(async move {
            while let Ok(leader) = observer.next().await {
                let value = String::from_utf8_lossy(&leader.value).into_owned();
                log.say(format!(
                    "observer: leader is {value} (token {})",
                    leader.token
                ));
                let done = value == "node-c";
                if let Ok(mut s) = seen.lock() {
                    s.push(value);
                }
                if done {
                    return;
                }
            }
        })
    };
    let mut sessions = Vec::new();
    let mut campaigns = Vec::new();
    for name in ["node-a", "node-b", "node-c"] {
        let session = store.open();
        let election = match Election::new(&session, "/elections/scheduler") {
            Ok(e) => e,
            Err(e) => return log.check(false, format!("election handle: {e}")),
        };
        sessions.push(session);
        campaigns.push(tokio::spawn(async move {
            election.campaign(name.as_bytes()).await
        }));
        // Offer one after another, so the line is a, b, c.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut campaigns = campaigns.into_iter();
    let Some(a) = next_leader(&mut campaigns).await else {
        return log.check(false, "node-a was elected");
    };
    seen_by_observer(&seen, "node-a").await;
    log.say(format!(
        "node-a leads (token {}); its session now expires",
        a.fencing_token()
    ));
    store.expire(&sessions[0].id());
    let why = a.lost().await;
    log.say(format!("node-a learns it lost leadership: {why}"));
    log.check(
        matches!(why, Error::SessionExpired | Error::LockLost { .. }),
        "node-a's lost() saw its session expire",
    );
    let Some(b) = next_leader(&mut campaigns).await else {
        return log.check(false, "node-b took over");
    };
    seen_by_observer(&seen, "node-b").await;
    log.say(format!(
        "node-b leads (token {}); it resigns",
        b.fencing_token()
    ));
    log.check(
        b.fencing_token() > a.fencing_token(),
        "tokens increase across leaders",
    );
    let b_token = b.fencing_token();
    if let Err(e) = b.resign().await {
        log.check(false, format!("node-b resigns: {e}"));
    }
    let Some(c) = next_leader(&mut campaigns).await else {
        return log.check(false, "node-c took over");
    };
    log.say(format!("node-c leads (token {})", c.fencing_token()));
    log.check(
        c.fencing_token() > b_token,
        "tokens increase across leaders",
    );
    let _ = tokio::time::timeout(Duration::from_secs(3), watcher).await;
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    log.check(
        seen == ["node-a", "node-b", "node-c"],
        format!("the observer saw every leader in order: {seen:?}"),
    );
    let _ = c.resign().await;
}

/// Wait (at most 2 s) until the observer has reported `who`, so the demo
/// does not end a leadership before the observer could see it.
async fn seen_by_observer(seen: &Mutex<Vec<String>>, who: &str) {
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        if seen
            .lock()
            .map(|s| s.iter().any(|v| v == who))
            .unwrap_or(false)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

type Campaign = tokio::task::JoinHandle<coord_core::Result<coord_core::recipes::Leadership>>;

/// The next campaign in line, once it has won (within 3 s).
async fn next_leader(
    campaigns: &mut impl Iterator<Item = Campaign>,
) -> Option<coord_core::recipes::Leadership> {
    let c = campaigns.next()?;
    match tokio::time::timeout(Duration::from_secs(3), c).await {
        Ok(Ok(Ok(l))) => Some(l),
        other => {
            println!("campaign failed: {other:?}");
            None
        }
    }
}

/// Part 3: 3 producers, 3 consumers, every item exactly once.
async fn queue(store: &MemStore, log: &Log) {
    const PER_PRODUCER: usize = 100;
    log.say(format!(
        "== queue: 3 producers x {PER_PRODUCER} items, 3 consumers"
    ));
    let total = 3 * PER_PRODUCER;
    let received = Arc::new(AtomicUsize::new(0));
    let mut tasks = JoinSet::new();
    for p in 0..3 {
        let Ok(q) = Queue::new(&store.open(), "/queues/reports") else {
            return log.check(false, "queue handle");
        };
        tasks.spawn(async move {
            for k in 0..PER_PRODUCER {
                if q.offer(format!("{p}:{k}").as_bytes()).await.is_err() {
                    return (usize::MAX, Vec::new(), 0);
                }
            }
            (usize::MAX, Vec::new(), 0)
        });
    }
    for c in 0..3 {
        let Ok(q) = Queue::new(&store.open(), "/queues/reports") else {
            return log.check(false, "queue handle");
        };
        let received = received.clone();
        tasks.spawn(async move {
            let mut mine = Vec::new();
            while received.load(Ordering::SeqCst) < total {
                if let Ok(item) = q.take_timeout(Duration::from_millis(50)).await {
                    received.fetch_add(1, Ordering::SeqCst);
                    mine.push(String::from_utf8_lossy(&item).into_owned());
                }
            }
            (c, mine, q.stats().listings())
        });
    }
    let mut all = Vec::new();
    while let Some(r) = tasks.join_next().await {
        let Ok((c, mine, listings)) = r else {
            return log.check(false, "a queue task ended cleanly");
        };
        if c != usize::MAX {
            log.say(format!(
                "consumer {c} took {} items with {listings} listings",
                mine.len()
            ));
            all.extend(mine);
        }
    }
    let n = all.len();
    all.sort();
    all.dedup();
    log.check(
        n == total && all.len() == total,
        format!(
            "{total} items delivered exactly once ({n} deliveries, {} distinct)",
            all.len()
        ),
    );
}

//! Part 1: 9 instances, one job every 6 "hours", one crash mid-run.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use coordination::{PeriodicJob, RunOutcome};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::cluster::Cluster;
use super::log::Log;

const PERIODS: u64 = 4;
const INSTANCES: usize = 9;
const CRASH_PERIOD: u64 = 1;

/// Who started and who finished each period, and whether runs overlapped.
#[derive(Clone, Default)]
struct Tally {
    started: Arc<Mutex<Vec<Vec<usize>>>>,
    finished: Arc<Mutex<Vec<Vec<usize>>>>,
    running: Arc<AtomicUsize>,
    overlap: Arc<AtomicBool>,
}

impl Tally {
    fn new() -> Self {
        Tally {
            started: Arc::new(Mutex::new(vec![Vec::new(); PERIODS as usize])),
            finished: Arc::new(Mutex::new(vec![Vec::new(); PERIODS as usize])),
            ..Tally::default()
        }
    }

    fn mark(list: &Mutex<Vec<Vec<usize>>>, period: u64, who: usize) {
        if let Ok(mut l) = list.lock() {
            if let Some(p) = l.get_mut(period as usize) {
                p.push(who);
            }
        }
    }

    fn read(list: &Mutex<Vec<Vec<usize>>>) -> Vec<Vec<usize>> {
        list.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

pub async fn periodic_job(cluster: &Cluster, log: &Log) {
    let hour = cluster.hour;
    let job_path = cluster.path("/jobs/revenue-sql");
    log.say(format!(
        "== the 6-hourly job: {INSTANCES} instances, one job every 6 h (1 h = {hour:?}), {PERIODS} periods"
    ));
    let tally = Tally::new();
    let crash_pending = Arc::new(AtomicBool::new(true));
    let (crash_tx, mut crash_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut sessions = Vec::new();
    let mut jobs = Vec::new();
    for _ in 0..INSTANCES {
        let session = match cluster.open().await {
            Ok(s) => s,
            Err(e) => return log.check(false, format!("instance session: {e}")),
        };
        match PeriodicJob::new(&session, &job_path) {
            Ok(j) => jobs.push(j),
            Err(e) => return log.check(false, format!("job handle: {e}")),
        }
        sessions.push(session);
    }
    let t0 = Instant::now();
    let mut instances = JoinSet::new();
    for (i, job) in jobs.into_iter().enumerate() {
        let (log, tally, crash_pending, crash_tx) = (
            log.clone(),
            tally.clone(),
            crash_pending.clone(),
            crash_tx.clone(),
        );
        instances.spawn(async move {
            for period in 0..PERIODS {
                tokio::time::sleep_until(t0 + hour * 6 * period as u32).await;
                let outcome = job
                    .run(period, |ctx| {
                        let (log, tally) = (log.clone(), tally.clone());
                        let crash =
                            period == CRASH_PERIOD && crash_pending.swap(false, Ordering::SeqCst);
                        let crash_tx = crash_tx.clone();
                        async move {
                            if tally.running.fetch_add(1, Ordering::SeqCst) != 0 {
                                tally.overlap.store(true, Ordering::SeqCst);
                            }
                            Tally::mark(&tally.started, period, i);
                            log.say(format!(
                                "period {period}: instance {i} starts the SQL job (fencing token {})",
                                ctx.fencing_token()
                            ));
                            if crash {
                                log.say(format!("period {period}: instance {i} crashes mid-run"));
                                let _ = crash_tx.send(i);
                                // Hangs until its session is ended under it.
                                std::future::pending::<()>().await;
                            }
                            tokio::time::sleep(hour / 2).await;
                            tally.running.fetch_sub(1, Ordering::SeqCst);
                            Tally::mark(&tally.finished, period, i);
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
    // The "server" side of the crash: the crashed instance's session ends,
    // which releases its lock and stops its job.
    if let Some(i) = crash_rx.recv().await {
        tokio::time::sleep(hour).await;
        tally.running.fetch_sub(1, Ordering::SeqCst);
        log.say(format!("session of instance {i} ends (as on a crash)"));
        cluster.crash(&sessions[i]).await;
    }
    let mut clean = 0;
    while let Some(r) = instances.join_next().await {
        clean += usize::from(r.is_ok());
    }
    log.check(
        clean == INSTANCES,
        format!("{clean} instance tasks ended cleanly"),
    );
    let started = Tally::read(&tally.started);
    let finished = Tally::read(&tally.finished);
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
    log.check(
        !tally.overlap.load(Ordering::SeqCst),
        "no two runs overlapped",
    );
    let last = match cluster.open().await {
        Ok(reader) => match PeriodicJob::new(&reader, &job_path) {
            Ok(j) => j.last_run().await.ok().flatten(),
            Err(_) => None,
        },
        Err(_) => None,
    };
    log.check(
        last == Some(PERIODS - 1),
        format!("the record says the last period run is {last:?}"),
    );
}

//! Conformance of run-once-per-period ([`coord_core::recipes::PeriodicJob`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use coord_core::recipes::{period_index, OnCrash, PeriodicJob, RunOutcome};
use tokio::sync::oneshot;
use tokio::task::JoinSet;

use crate::{await_children, within, Harness};

type Outcome = RunOutcome<u64, String>;

/// 5 instances ask to run every period: exactly one runs it, the others
/// find it done; the record follows.
pub async fn periodic_job_one_run_per_period(h: &dyn Harness) {
    let root = h.root("periodic_job_one_run_per_period");
    let runs = Arc::new(AtomicUsize::new(0));
    let mut jobs = Vec::new();
    for _ in 0..5 {
        jobs.push(PeriodicJob::new(&h.open().await, &root).expect("job"));
    }
    for period in 10..14u64 {
        let mut tasks = JoinSet::new();
        for job in &jobs {
            let job = job.clone();
            let runs = runs.clone();
            tasks.spawn(async move {
                job.run(period, |ctx| async move {
                    assert_eq!(ctx.period(), period);
                    runs.fetch_add(1, Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    Ok::<_, String>(ctx.fencing_token())
                })
                .await
                .expect("run")
            });
        }
        let mut ran = 0;
        while let Some(r) = within("instances finish", tasks.join_next()).await {
            match r.expect("instance panicked") {
                Outcome::Ran(_) => ran += 1,
                Outcome::AlreadyDone { last } => assert_eq!(last, period),
                other => panic!("unexpected outcome {other:?}"),
            }
        }
        assert_eq!(ran, 1, "period {period} ran {ran} times");
        assert_eq!(jobs[0].last_run().await.expect("last"), Some(period));
    }
    assert_eq!(runs.load(Ordering::SeqCst), 4);
    // An older period is never run after a newer one was recorded.
    let r: Outcome = jobs[1].run(11, |_| async { Ok(0) }).await.expect("run");
    assert_eq!(r, Outcome::AlreadyDone { last: 13 });
}

/// Start a run of `period` on `job` whose job signals it started and then
/// hangs; returns the run's task.
async fn hanging_run(
    job: PeriodicJob,
    period: u64,
) -> tokio::task::JoinHandle<coord_core::Result<Outcome>> {
    let (tx, rx) = oneshot::channel();
    let task = tokio::spawn(async move {
        job.run(period, |_| async move {
            let _ = tx.send(());
            std::future::pending::<Result<u64, String>>().await
        })
        .await
    });
    within("the run starts", rx).await.expect("started");
    task
}

/// OnCrash::Retry: when the runner's session expires mid-run, its run
/// fails without recording, and the next instance waiting runs the same
/// period; only that run is recorded.
pub async fn periodic_job_crashed_period_is_retried(h: &dyn Harness) {
    let root = h.root("periodic_job_crashed_period_is_retried");
    let (doomed, s2) = (h.open().await, h.open().await);
    let first = hanging_run(PeriodicJob::new(&doomed, &root).expect("job"), 7).await;
    let job2 = PeriodicJob::new(&s2, &root).expect("job");
    let j2 = job2.clone();
    let second = tokio::spawn(async move { j2.run(7, |_| async { Ok::<_, String>(2) }).await });
    await_children(&s2, &format!("{root}/lock"), "second waits", |c| {
        c.len() == 2
    })
    .await;
    assert!(!second.is_finished());
    h.expire(&doomed).await;
    let r = within("the crashed run ends", first).await.expect("join");
    assert!(r.is_err(), "a run whose lock was lost succeeded: {r:?}");
    let r = within("the retry", second)
        .await
        .expect("join")
        .expect("run");
    assert_eq!(r, Outcome::Ran(2));
    assert_eq!(job2.last_run().await.expect("last"), Some(7));
}

/// OnCrash::Skip: a period whose runner died is not started again; the
/// next period runs.
pub async fn periodic_job_crashed_period_is_skipped(h: &dyn Harness) {
    let root = h.root("periodic_job_crashed_period_is_skipped");
    let (doomed, s2) = (h.open().await, h.open().await);
    let job1 = PeriodicJob::new(&doomed, &root)
        .expect("job")
        .on_crash(OnCrash::Skip);
    let first = hanging_run(job1, 7).await;
    h.expire(&doomed).await;
    assert!(within("the crashed run ends", first)
        .await
        .expect("join")
        .is_err());
    let job2 = PeriodicJob::new(&s2, &root)
        .expect("job")
        .on_crash(OnCrash::Skip);
    let r: Outcome = within("after the crash", job2.run(7, |_| async { Ok(2) }))
        .await
        .expect("run");
    assert_eq!(r, Outcome::Abandoned { started: 7 });
    assert_eq!(job2.last_run().await.expect("last"), None);
    let r: Outcome = job2.run(8, |_| async { Ok(3) }).await.expect("run");
    assert_eq!(r, Outcome::Ran(3));
    assert_eq!(job2.last_run().await.expect("last"), Some(8));
}

/// A failed job is not recorded; with Retry the next instance runs the
/// period; `try_run` says Busy while another instance runs.
pub async fn periodic_job_failed_job_and_busy(h: &dyn Harness) {
    let root = h.root("periodic_job_failed_job_and_busy");
    let (s1, s2) = (h.open().await, h.open().await);
    let a = PeriodicJob::new(&s1, &root).expect("job");
    let b = PeriodicJob::new(&s2, &root).expect("job");
    let r: Outcome = a
        .run(1, |_| async { Err("db down".to_owned()) })
        .await
        .expect("run");
    assert_eq!(r, Outcome::Failed("db down".to_owned()));
    assert_eq!(a.last_run().await.expect("last"), None);
    let hanging = hanging_run(a.clone(), 1).await;
    let r: Outcome = b.try_run(1, |_| async { Ok(9) }).await.expect("try_run");
    assert_eq!(r, Outcome::Busy);
    hanging.abort();
    let _ = hanging.await;
    // The aborted run released its lock (in the background): b runs.
    let r: Outcome = within("b runs", b.run(1, |_| async { Ok(9) }))
        .await
        .expect("run");
    assert_eq!(r, Outcome::Ran(9));
    assert_eq!(b.last_run().await.expect("last"), Some(1));
}

/// Period numbering from the wall clock.
pub async fn periodic_job_period_index_from_clock(_h: &dyn Harness) {
    let six_hours = Duration::from_secs(6 * 3600);
    let t = SystemTime::UNIX_EPOCH + Duration::from_secs(13 * 3600);
    assert_eq!(period_index(t, six_hours), 2);
    assert_eq!(period_index(SystemTime::UNIX_EPOCH, six_hours), 0);
    assert_eq!(period_index(t, Duration::ZERO), 13 * 3600 * 1_000_000_000);
}

#[doc(hidden)]
#[macro_export]
macro_rules! __periodic_job_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            periodic_job::periodic_job_one_run_per_period,
            periodic_job::periodic_job_crashed_period_is_retried,
            periodic_job::periodic_job_crashed_period_is_skipped,
            periodic_job::periodic_job_failed_job_and_busy,
            periodic_job::periodic_job_period_index_from_clock,
        );
    };
}

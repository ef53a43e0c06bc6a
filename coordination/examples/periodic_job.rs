//! [`coordination::PeriodicJob`]: a job run at most once per period across every
//! instance ("9 pods, one SQL job every 6 hours"). Every instance calls
//! `run` each period; one runs the job, the others find it done.
//!
//! `cargo run -p coordination --example periodic_job [-- --url URL]`

mod common;

use std::time::{Duration, SystemTime};

use coordination::{period_index, PeriodicJob, RunOutcome};

#[tokio::main]
async fn main() -> common::Result {
    let path = format!("{}/revenue-sql", common::root("periodic-job"));
    let period = period_index(SystemTime::now(), Duration::from_secs(6 * 3600));

    let mut ran = 0;
    for pod in 0..3 {
        let session = common::session().await?;
        let job = PeriodicJob::new(&session, &path)?;
        let outcome = job
            .run(period, |ctx| async move {
                // Pass ctx.fencing_token() to what the job writes.
                println!("pod {pod} runs period {}", ctx.period());
                Ok::<_, String>(())
            })
            .await?;
        match outcome {
            RunOutcome::Ran(()) => ran += 1,
            other => println!("pod {pod}: {other:?}"),
        }
    }
    assert_eq!(ran, 1);

    let session = common::session().await?;
    let last = PeriodicJob::new(&session, &path)?.last_run().await?;
    println!("last recorded period: {last:?}");
    assert_eq!(last, Some(period));
    Ok(())
}

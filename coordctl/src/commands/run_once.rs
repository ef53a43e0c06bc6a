//! `coordctl run-once JOB --every D -- CMD…`: the 9-pods/6-hourly job
//! problem's job, from the shell.

use std::time::{Duration, SystemTime};

use coord::{period_index, OnCrash, PeriodicJob, RunOutcome, Session};

use crate::child::TermOnDrop;
use crate::cli::RunOnceArgs;
use crate::ctx::Ctx;
use crate::exit::{self, Failure};

pub async fn run_once(ctx: &Ctx, a: RunOnceArgs) -> Result<u8, Failure> {
    if a.every.is_zero() {
        return Err(Failure::new(exit::USAGE, "--every must be positive"));
    }
    let path = if a.job.starts_with('/') {
        a.job.clone()
    } else {
        format!("/jobs/{}", a.job)
    };
    let what = format!("run-once {path}");
    let mut session: Option<Session> = None;
    let mut last_code = exit::OK;
    let mut failures = 0u32;
    loop {
        if ctx.interrupted() {
            // CMD got the signal and ended: exit with its status.
            return Ok(last_code);
        }
        let s = match &session {
            Some(s) if !s.state().is_terminal() => s.clone(),
            _ => {
                let s = ctx.open().await?;
                session = Some(s.clone());
                s
            }
        };
        // At most once per period: a failed or crashed run is not retried.
        let job = PeriodicJob::new(&s, &path)
            .map_err(|e| Failure::coord(&what, e))?
            .on_crash(OnCrash::Skip);
        let period = period_index(SystemTime::now(), a.every);
        let cmd = &a.cmd;
        let outcome = job
            .run(period, |run| async move {
                let proc = ctx.children.spawn(
                    cmd,
                    &[
                        ("COORD_FENCING_TOKEN", run.fencing_token().to_string()),
                        ("COORD_PERIOD", run.period().to_string()),
                    ],
                )?;
                // Dropped by the recipe when the lock is lost: stop CMD.
                let guard = TermOnDrop(proc.clone());
                let code = proc.wait().await;
                drop(guard);
                if code == 0 {
                    Ok(code)
                } else {
                    Err(Failure::new(
                        code,
                        format!("the command exited with {code}"),
                    ))
                }
            })
            .await;
        match outcome {
            Ok(RunOutcome::Ran(code)) => {
                eprintln!("coordctl: {path}: period {period} ran here (exit {code})");
                last_code = code;
                failures = 0;
            }
            Ok(RunOutcome::Failed(f)) => {
                if f.code == exit::NOT_FOUND || f.code == exit::CANNOT_EXECUTE {
                    return Err(f);
                }
                eprintln!(
                    "coordctl: {path}: period {period} failed here ({}); it is not run again",
                    f.message
                );
                last_code = f.code;
            }
            Ok(RunOutcome::AlreadyDone { .. }) | Ok(RunOutcome::Abandoned { .. }) => {}
            Ok(RunOutcome::Busy) => {}
            Err(e) => {
                if let Some(p) = ctx.children.running() {
                    eprintln!(
                        "coordctl: {path}: the run lock was lost during period {period} ({e}); the command was sent SIGTERM"
                    );
                    p.wait().await;
                } else {
                    eprintln!("coordctl: {what}: {e}");
                }
                failures += 1;
                // Back off before trying again (a new session if it ended).
                let pause = Duration::from_millis(200 << failures.min(5));
                tokio::time::sleep(pause).await;
                continue;
            }
        }
        tokio::time::sleep(until_next(period, a.every)).await;
    }
}

/// How long until period `period + 1` starts (at least 1 ms).
fn until_next(period: u64, every: Duration) -> Duration {
    let next_ns = u128::from(period + 1) * every.as_nanos();
    let now_ns = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let wait = next_ns.saturating_sub(now_ns);
    Duration::from_nanos(u64::try_from(wait).unwrap_or(u64::MAX)).max(Duration::from_millis(1))
}

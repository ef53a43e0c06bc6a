//! `coordctl run-once JOB --every D [--on-crash skip|retry] -- CMD…`: the
//! 9-pods/6-hourly job problem's job, from the shell.
//!
//! A period is recorded done (the job's `last`) only when CMD exits 0.
//! `--on-crash skip` (the default, [`OnCrash::Skip`]): the period is marked
//! started before CMD runs, so a period whose CMD failed or whose coordctl
//! died is never started again, here or elsewhere. `--on-crash retry`
//! ([`OnCrash::Retry`]): such a period stays to be done: an instance
//! waiting for the job's lock runs it (after a dead runner's session has
//! expired, when the runner died), and this instance, if alive, tries it
//! again itself after a pause, until a run succeeds or the period ends.

use std::time::{Duration, SystemTime};

use coordination::{period_index, OnCrash, PeriodicJob, RunOutcome, Session};

use crate::child::TermOnDrop;
use crate::cli::{OnCrashArg, RunOnceArgs};
use crate::ctx::Ctx;
use crate::exit::{self, Failure};
use crate::logging::say;

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
    // Failed runs of one period in a row, under --on-crash retry.
    let mut retries = (0u64, 0u32);
    let on_crash = match a.on_crash {
        OnCrashArg::Skip => OnCrash::Skip,
        OnCrashArg::Retry => OnCrash::Retry,
    };
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
        let job = PeriodicJob::new(&s, &path)
            .map_err(|e| Failure::coord(&what, e))?
            .on_crash(on_crash);
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
                say(format_args!(
                    "{path}: period {period} ran here (exit {code})"
                ));
                last_code = code;
                failures = 0;
            }
            Ok(RunOutcome::Failed(f)) => {
                if f.code == exit::NOT_FOUND || f.code == exit::CANNOT_EXECUTE {
                    return Err(f);
                }
                last_code = f.code;
                if on_crash == OnCrash::Retry {
                    retries = match retries {
                        (p, n) if p == period => (p, n + 1),
                        _ => (period, 1),
                    };
                    let pause = retry_pause(retries.1).min(until_next(period, a.every));
                    say(format_args!(
                        "{path}: period {period} failed here ({}); it is run again \
                         (--on-crash retry), here in {pause:?} unless another instance does",
                        f.message
                    ));
                    tokio::time::sleep(pause).await;
                    continue;
                }
                say(format_args!(
                    "{path}: period {period} failed here ({}); it is not run again \
                     (--on-crash skip)",
                    f.message
                ));
            }
            Ok(RunOutcome::Abandoned { started }) => {
                say(format_args!(
                    "{path}: period {started} was started by an instance whose run failed \
                     or died; it is not run again (--on-crash skip)"
                ));
            }
            // Nothing ran here (done elsewhere, busy, or an outcome this
            // build does not know): wait for the next period.
            Ok(_) => {}
            Err(e) => {
                if let Some(p) = ctx.children.running() {
                    say(format_args!(
                        "{path}: the run lock was lost during period {period} ({e}); the command was sent SIGTERM"
                    ));
                    p.wait().await;
                } else {
                    say(format_args!("{what}: {e}"));
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

/// How long to wait before running a failed period again (the `n`th
/// failure in a row, from 1): the shared backoff, from 1 s doubling to a
/// minute, with jitter (so instances that failed together do not retry
/// together).
fn retry_pause(n: u32) -> Duration {
    coord_core::backend::Backoff::new(Duration::from_secs(1), Duration::from_secs(60))
        .delay(n.saturating_sub(1))
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

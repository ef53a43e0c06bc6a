//! A job run at most once per period across many instances: [`PeriodicJob`],
//! its outcomes and [`period_index`].

// The problem it solves ("9 pods, one SQL query every 6 hours"): the usual
// fix keeps a persistent `0/1` "locked" flag, and when the pod holding it
// dies the flag stays `1` and the job never runs again. Here the run is
// guarded by an ephemeral lock instead, and only success is recorded.

use std::future::Future;
use std::time::{Duration, SystemTime};

use crate::backend::node::{Fence, Node, Op};
use crate::error::{Error, Result};
use crate::layout;
use crate::path;
use crate::recipes::lock::exclusive::Lock;
use crate::recipes::lock::guard::LockGuard;
use crate::session::Session;
use crate::telemetry;

/// The index of the period of length `period` that `now` falls in:
/// whole periods since the Unix epoch (6-hour periods start at 00:00,
/// 06:00, 12:00 and 18:00 UTC).
///
/// Clock-skew assumption: instances' clocks agree to well within a period.
/// Near a boundary, skewed instances may disagree on the index for a
/// moment; that cannot make a period run twice (the record only moves
/// forward, under the lock), but an instance whose clock runs behind may
/// find its period already done, and one that runs ahead may run the next
/// period early. A `period` of zero is treated as one nanosecond.
pub fn period_index(now: SystemTime, period: Duration) -> u64 {
    let since = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let p = period.as_nanos().max(1);
    u64::try_from(since / p).unwrap_or(u64::MAX)
}

/// What to do with a period whose runner died (or whose job failed)
/// before recording it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnCrash {
    /// Another instance that asks for the same period runs it again.
    #[default]
    Retry,
    /// The period is skipped: each period is started at most once.
    Skip,
}

/// What [`PeriodicJob::run`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunOutcome<T, E> {
    /// This instance ran the job and recorded the period.
    Ran(T),
    /// This instance ran the job, which failed; the period is not recorded.
    Failed(E),
    /// The period (or a later one) was already recorded: not run.
    AlreadyDone {
        /// The last recorded period.
        last: u64,
    },
    /// [`OnCrash::Skip`]: the period was started by a runner that did not
    /// record it (it died or failed): not run again.
    Abandoned {
        /// The last started period.
        started: u64,
    },
    /// [`PeriodicJob::try_run`] only: another instance holds the run now.
    Busy,
}

/// What a running job knows: its period and its fence.
#[derive(Debug, Clone)]
pub struct RunContext {
    period: u64,
    fence: Fence,
}

impl RunContext {
    /// The period being run.
    pub fn period(&self) -> u64 {
        self.period
    }

    /// The runner's fencing token: strictly larger for every later runner.
    pub fn fencing_token(&self) -> u64 {
        self.fence.stamp
    }

    /// The fence for guarded writes the job makes ([`Session::guarded`]).
    pub fn fence(&self) -> &Fence {
        &self.fence
    }
}

/// A job run at most once per period by whichever instance gets to it,
/// made by [`PeriodicJob::new`]`(session, path)`. Every instance calls
/// [`PeriodicJob::run`] (or [`PeriodicJob::try_run`], which does not wait
/// for a running instance) with the period's number, its own or from the
/// wall clock ([`period_index`]); one runs the job, the others find it done
/// ([`RunOutcome`]).
///
/// On the server, under `path`:
/// - `lock/`: a [`Lock`] guards the run. Its nodes are ephemeral, so a
///   runner that dies takes its hold with it: a crash never blocks the job;
/// - `last`: the last *successful* period, recorded with a compare-and-set
///   made only while the runner's lock still holds (a guarded write under
///   its fence), so two runners never both record a period and a runner
///   that lost its lock records nothing. The record only moves forward.
/// - `started`: with [`OnCrash::Skip`], the last period started, also a
///   fenced compare-and-set, written before running.
///
/// What happens when a runner dies mid-run is chosen by [`OnCrash`]
/// ([`PeriodicJob::on_crash`]):
/// [`OnCrash::Retry`] (the default) lets the next instance waiting for the
/// period run it again; [`OnCrash::Skip`] marks the period started before
/// running, so it is never started twice and a crashed period is skipped.
///
/// Runs never overlap while the runners' sessions are live: a runner whose
/// lock is lost (its session expired) has its job future dropped at its next
/// await. A runner cut off from the server may not learn of that at once,
/// so a job that writes elsewhere should pass [`RunContext::fencing_token`]
/// along and have the resource refuse older tokens.
///
/// ```
/// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
/// use std::time::{Duration, SystemTime};
/// use coord_core::recipes::{period_index, PeriodicJob, RunOutcome};
/// let job = PeriodicJob::new(&session, "/jobs/revenue-report")?;
/// let period = period_index(SystemTime::now(), Duration::from_secs(6 * 3600));
/// match job.run(period, |_ctx| async { Ok::<_, String>("report done") }).await? {
///     RunOutcome::Ran(r) => println!("{r}"),
///     other => println!("not run here: {other:?}"),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PeriodicJob {
    session: Session,
    lock: Lock,
    last: String,
    started: String,
    on_crash: OnCrash,
}

fn parse_period(node: &Node) -> Option<u64> {
    std::str::from_utf8(&node.data).ok()?.trim().parse().ok()
}

impl PeriodicJob {
    /// A job at `path` (a directory: `lock/`, `last`, `started`).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or `/`.
    pub fn new(session: &Session, path: &str) -> Result<Self> {
        path::validate_non_root(path)?;
        Ok(PeriodicJob {
            session: session.clone(),
            lock: Lock::new(session, &path::join(path, layout::JOB_LOCK))?,
            last: path::join(path, layout::JOB_LAST),
            started: path::join(path, layout::JOB_STARTED),
            on_crash: OnCrash::default(),
        })
    }

    /// Choose what happens to a period whose runner died; see [`OnCrash`].
    pub fn on_crash(mut self, on_crash: OnCrash) -> Self {
        self.on_crash = on_crash;
        self
    }

    /// The last period recorded as run, if any.
    ///
    /// # Errors
    /// Session errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn last_run(&self) -> Result<Option<u64>> {
        Ok(self
            .session
            .get(&self.last)
            .await?
            .and_then(|n| parse_period(&n)))
    }

    /// Run `job` for `period` unless that period (or a later one) is done:
    /// wait for the instance running it now, if any, then check the record
    /// and run. Meant to be called by every instance at every period.
    ///
    /// # Errors
    /// [`Error::LockLost`], [`Error::SessionExpired`] or
    /// [`Error::SessionClosed`] when the lock was lost during the run (the
    /// job's future is dropped; nothing is recorded); session and backend
    /// errors.
    ///
    /// # Cancel safety
    /// Cancel safe while waiting (nothing is left queued). Dropped during
    /// the job, the job's future is dropped and the lock released in the
    /// background, as if the runner had crashed (see [`OnCrash`]); dropped
    /// while recording, the record may or may not have been made.
    pub async fn run<F, Fut, T, E>(&self, period: u64, job: F) -> Result<RunOutcome<T, E>>
    where
        F: FnOnce(RunContext) -> Fut,
        Fut: Future<Output = std::result::Result<T, E>>,
    {
        let run = async {
            if let Some(last) = self.last_run().await? {
                if last >= period {
                    return Ok(RunOutcome::AlreadyDone { last });
                }
            }
            let guard = self.lock.acquire().await?;
            self.run_held(guard, period, job).await
        };
        let dir = path::parent(&self.last);
        telemetry::period(&self.session, dir, period, run, outcome_name).await
    }

    /// [`PeriodicJob::run`] without waiting: [`RunOutcome::Busy`] when
    /// another instance holds the run now.
    ///
    /// # Errors
    /// As [`PeriodicJob::run`].
    ///
    /// # Cancel safety
    /// As [`PeriodicJob::run`].
    pub async fn try_run<F, Fut, T, E>(&self, period: u64, job: F) -> Result<RunOutcome<T, E>>
    where
        F: FnOnce(RunContext) -> Fut,
        Fut: Future<Output = std::result::Result<T, E>>,
    {
        let run = async {
            if let Some(last) = self.last_run().await? {
                if last >= period {
                    return Ok(RunOutcome::AlreadyDone { last });
                }
            }
            match self.lock.try_acquire().await? {
                Some(guard) => self.run_held(guard, period, job).await,
                None => Ok(RunOutcome::Busy),
            }
        };
        let dir = path::parent(&self.last);
        telemetry::period(&self.session, dir, period, run, outcome_name).await
    }

    async fn run_held<F, Fut, T, E>(
        &self,
        guard: LockGuard,
        period: u64,
        job: F,
    ) -> Result<RunOutcome<T, E>>
    where
        F: FnOnce(RunContext) -> Fut,
        Fut: Future<Output = std::result::Result<T, E>>,
    {
        // Under the lock, the record is stable: read it fresh.
        let last = self.session.get(&self.last).await?;
        if let Some(done) = last.as_ref().and_then(parse_period) {
            if done >= period {
                guard.release().await?;
                return Ok(RunOutcome::AlreadyDone { last: done });
            }
        }
        if self.on_crash == OnCrash::Skip {
            let started = self.session.get(&self.started).await?;
            if let Some(s) = started.as_ref().and_then(parse_period) {
                if s >= period {
                    guard.release().await?;
                    return Ok(RunOutcome::Abandoned { started: s });
                }
            }
            self.record(&guard, &self.started, started.as_ref(), period)
                .await?;
        }
        let ctx = RunContext {
            period,
            fence: guard.fence(),
        };
        let outcome = {
            let run = job(ctx);
            tokio::select! {
                r = run => r,
                e = guard.lost() => {
                    tracing::warn!(target: crate::telemetry::TARGET, period, error = %e, "lock lost during the run; the job was stopped");
                    return Err(e);
                }
            }
        };
        match outcome {
            Ok(t) => {
                self.record(&guard, &self.last, last.as_ref(), period)
                    .await?;
                guard.release().await?;
                Ok(RunOutcome::Ran(t))
            }
            Err(e) => {
                guard.release().await?;
                Ok(RunOutcome::Failed(e))
            }
        }
    }

    /// Write `period` at `node` with a compare-and-set against `seen`, only
    /// while `guard` holds.
    async fn record(
        &self,
        guard: &LockGuard,
        node: &str,
        seen: Option<&Node>,
        period: u64,
    ) -> Result<()> {
        let data = period.to_string().into_bytes();
        let op = match seen {
            Some(n) => Op::Set {
                path: node.to_owned(),
                data,
                version: Some(n.stat.version),
            },
            None => Op::Create {
                path: node.to_owned(),
                data,
                mode: crate::backend::node::CreateMode::Persistent,
            },
        };
        match guard.write(op).await {
            Ok(_) => Ok(()),
            Err(e @ (Error::VersionMismatch { .. } | Error::AlreadyExists { .. })) => {
                // Someone wrote the record while we held the lock: only a
                // runner without the lock could, so refuse to overwrite.
                tracing::error!(target: crate::telemetry::TARGET, period, node, error = %e, "run record changed under the lock");
                Err(e)
            }
            Err(e) => Err(e),
        }
    }
}

/// The `outcome` field of a period's telemetry event.
fn outcome_name<T, E>(outcome: &RunOutcome<T, E>) -> &'static str {
    match outcome {
        RunOutcome::Ran(_) => "ran",
        RunOutcome::Failed(_) => "failed",
        RunOutcome::AlreadyDone { .. } => "already_done",
        RunOutcome::Abandoned { .. } => "abandoned",
        RunOutcome::Busy => "busy",
    }
}

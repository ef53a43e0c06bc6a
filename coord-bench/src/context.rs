//! What every workload is given: the server, the sessions the workloads
//! share, the run's settings, and the report it adds its rows to.

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

use coordination::Session;

use crate::config::Config;
use crate::error::BenchResult;
use crate::report::Report;
use crate::target::Target;

/// One run in progress. Each workload works under its own directory
/// ([`Ctx::dir`]) and records a failure ([`Ctx::fail`]) rather than
/// ending the run.
pub(crate) struct Ctx<'a> {
    /// The server under test.
    pub target: &'a Target,
    /// How much of each workload to run.
    pub cfg: &'a Config,
    /// The rows, targets and failures so far.
    pub rep: Report,
    /// Sessions opened once and shared by the workloads.
    pub pool: Pool<'a>,
    /// The raw create + delete p50 (ms), once the raw workload measured it:
    /// the yardstick of the workloads without a baseline of their own.
    pub rtt_ms: Option<f64>,
    /// This run's directory: a fresh one, so runs never meet.
    root: String,
}

impl<'a> Ctx<'a> {
    /// A run against `target` (reached at `url`), with one session open.
    ///
    /// # Errors
    /// The server is unreachable.
    pub async fn new(target: &'a Target, url: &str, cfg: &'a Config) -> BenchResult<Self> {
        let root = format!(
            "/coord-bench/{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let rep = Report {
            backend: target.backend().to_owned(),
            url: crate::target::redact(url),
            config: cfg.describe(),
            ..Report::default()
        };
        let mut pool = Pool {
            target,
            sessions: Vec::new(),
        };
        pool.get(1).await?;
        Ok(Ctx {
            target,
            cfg,
            rep,
            pool,
            rtt_ms: None,
            root,
        })
    }

    /// The directory `name` under this run's root.
    pub fn dir(&self, name: &str) -> String {
        format!("{}/{name}", self.root)
    }

    /// How long one workload may take.
    pub fn limit(&self) -> Duration {
        self.cfg.workload_timeout
    }

    /// The first `n` shared sessions, opening more if needed.
    ///
    /// # Errors
    /// A session that cannot be opened.
    pub async fn sessions(&mut self, n: usize) -> BenchResult<Vec<Session>> {
        Ok(self.pool.get(n).await?.to_vec())
    }

    /// Record that `workload` failed with `error`; the run goes on.
    pub fn fail(&mut self, workload: impl Into<String>, error: impl Display) {
        self.rep.failures.push((workload.into(), error.to_string()));
    }

    /// The raw round trip as a baseline, once measured.
    pub fn rtt(&self) -> Option<(&'static str, f64)> {
        self.rtt_ms.map(|v| ("raw create+delete p50", v))
    }

    /// Close the shared sessions and hand back the report.
    pub async fn finish(self) -> Report {
        for s in self.pool.sessions {
            let _ = s.close().await;
        }
        self.rep
    }
}

/// Sessions opened once and shared by the workloads (each workload uses
/// its own paths).
pub(crate) struct Pool<'a> {
    target: &'a Target,
    sessions: Vec<Session>,
}

impl Pool<'_> {
    /// The first `n` sessions, opening more if needed.
    ///
    /// # Errors
    /// A session that cannot be opened.
    pub async fn get(&mut self, n: usize) -> BenchResult<&[Session]> {
        if self.sessions.len() < n {
            let more = self.target.open_many(n - self.sessions.len()).await?;
            self.sessions.extend(more);
        }
        Ok(&self.sessions[..n])
    }
}

/// `f`, or an error naming `what` if it takes longer than `limit`.
///
/// # Errors
/// `f`'s, or the time running out.
pub(crate) async fn timed<T>(
    limit: Duration,
    what: &str,
    f: impl Future<Output = BenchResult<T>>,
) -> BenchResult<T> {
    match tokio::time::timeout(limit, f).await {
        Ok(r) => r,
        Err(_) => Err(format!("{what} did not finish within {limit:?}").into()),
    }
}

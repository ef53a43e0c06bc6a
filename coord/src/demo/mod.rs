//! The coord demo — what `coordctl demo` runs — on any backend:
//!
//! 1. The 9-pods/6-hourly job problem, done right: 9 instances share a
//!    "6-hourly" job (time scaled down: one hour is 40 ms in memory, 250 ms
//!    on a server); the instance running period 1 crashes mid-run (its
//!    session is ended under it) and another instance runs the period
//!    again. Each period is recorded exactly once.
//! 2. A leader election with two failovers: the leader's session ends, then
//!    the next leader resigns; an observer sees every leader in order.
//! 3. A queue drained by several consumers: every item exactly once.
//!
//! It prints a timeline to stdout and checks its own invariants; [`run`]
//! returns the ones that broke. On a server it works under a fresh
//! directory (`/coord-demo/<uuid>`) and deletes it at the end.
//!
//! A crash is simulated by ending the instance's session from outside: in
//! memory the store expires it ([`crate::mem::MemStore::expire`]); on a
//! server the session is closed, which the server treats as an expiry
//! would (its ephemeral nodes go at once) — a real crashed process would
//! lose them only after its session timeout.

mod election;
mod job;
mod queue;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use coord_core::Session;
use tokio::time::Instant;

use crate::backend::Backend;
use crate::connect::{default_mem_store, Connector};
use crate::error::ConnectError;

/// What [`run`] found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The invariants that broke, in the order checked; empty when all held.
    pub broken: Vec<String>,
    /// How many invariants were checked.
    pub checked: usize,
}

impl Report {
    /// Whether every invariant held.
    pub fn ok(&self) -> bool {
        self.broken.is_empty()
    }
}

/// A timeline printer and the record of invariants checked.
#[derive(Clone)]
pub(crate) struct Log {
    t0: Instant,
    report: Arc<Mutex<Report>>,
}

impl Log {
    pub(crate) fn say(&self, what: impl AsRef<str>) {
        let t = self.t0.elapsed().as_secs_f64();
        println!("[{t:7.3}s] {}", what.as_ref());
    }

    pub(crate) fn check(&self, ok: bool, what: impl AsRef<str>) {
        if ok {
            println!("            ok: {}", what.as_ref());
        } else {
            println!("        BROKEN: {}", what.as_ref());
        }
        if let Ok(mut r) = self.report.lock() {
            r.checked += 1;
            if !ok {
                r.broken.push(what.as_ref().to_owned());
            }
        }
    }
}

/// Where the demo runs: opens sessions, ends them as a crash would, and
/// scales time to the backend.
pub(crate) struct Cluster {
    connector: Connector,
    root: String,
    /// One demo "hour".
    pub(crate) hour: Duration,
    sessions: Mutex<Vec<Session>>,
}

impl Cluster {
    /// A fresh session (kept, to be closed at the end).
    pub(crate) async fn open(&self) -> Result<Session, ConnectError> {
        let s = self.connector.connect().await?;
        if let Ok(mut all) = self.sessions.lock() {
            all.push(s.clone());
        }
        Ok(s)
    }

    /// The demo's path for `rel` (which starts with `/`).
    pub(crate) fn path(&self, rel: &str) -> String {
        format!("{}{rel}", self.root)
    }

    /// End `session` as the server would end a crashed client's.
    pub(crate) async fn crash(&self, session: &Session) {
        if self.connector.backend() == Backend::Mem {
            default_mem_store().expire(&session.id());
        } else if let Err(e) = session.close().await {
            tracing::warn!(error = %e, "demo: closing a crashed session failed");
        }
    }

    async fn close_all(&self) {
        let all = self
            .sessions
            .lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default();
        for s in all {
            let _ = tokio::time::timeout(Duration::from_secs(5), s.close()).await;
        }
    }
}

/// Run the demo on the backend `connector` names, printing its timeline to
/// stdout. Returns which invariants held.
///
/// # Errors
/// [`ConnectError`] when the first session cannot be opened; later
/// failures count as broken invariants.
///
/// # Cancel safety
/// Not cancel safe: dropped midway, the demo's sessions end with their
/// handles (in memory) or their timeouts (on a server), and its directory
/// is left behind.
pub async fn run(connector: &Connector) -> Result<Report, ConnectError> {
    let mem = connector.backend() == Backend::Mem;
    let cluster = Cluster {
        connector: connector.clone(),
        root: format!("/coord-demo/{}", uuid::Uuid::new_v4().simple()),
        hour: if mem {
            Duration::from_millis(40)
        } else {
            Duration::from_millis(250)
        },
        sessions: Mutex::new(Vec::new()),
    };
    let admin = cluster.open().await?;
    let log = Log {
        t0: Instant::now(),
        report: Arc::new(Mutex::new(Report::default())),
    };
    log.say(format!(
        "coord demo on {} (under {})",
        connector.url(),
        cluster.root
    ));
    let deadline = if mem {
        Duration::from_secs(10)
    } else {
        Duration::from_secs(60)
    };
    let all = async {
        job::periodic_job(&cluster, &log).await;
        election::election(&cluster, &log).await;
        queue::queue(&cluster, &log).await;
    };
    if tokio::time::timeout(deadline, all).await.is_err() {
        log.check(false, format!("the demo finished within {deadline:?}"));
    }
    if let Err(e) = delete_tree(&admin, &cluster.root).await {
        log.say(format!("could not delete {}: {e}", cluster.root));
    }
    // The parent, if we were its last user; someone else's run keeps it.
    let _ = admin.delete("/coord-demo", None).await;
    cluster.close_all().await;
    let report = log.report.lock().map(|r| r.clone()).unwrap_or_default();
    if report.ok() {
        println!("all {} invariants held", report.checked);
    } else {
        println!(
            "{} of {} invariants broken: {:?}",
            report.broken.len(),
            report.checked,
            report.broken
        );
    }
    Ok(report)
}

/// Delete `path` and everything under it.
async fn delete_tree(session: &Session, path: &str) -> coord_core::Result<()> {
    let mut stack = vec![(path.to_owned(), false)];
    while let Some((node, expanded)) = stack.pop() {
        if expanded {
            match session.delete(&node, None).await {
                Ok(()) | Err(coord_core::Error::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
            continue;
        }
        let children = match session.children(&node).await {
            Ok(c) => c,
            Err(coord_core::Error::NotFound { .. }) => continue,
            Err(e) => return Err(e),
        };
        stack.push((node.clone(), true));
        for c in children {
            stack.push((coord_core::path::join(&node, &c.name), false));
        }
    }
    Ok(())
}

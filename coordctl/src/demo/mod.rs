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
//! memory the store expires it ([`coordination::mem::MemStore::expire`]); on a
//! server the session is closed, which the server treats as an expiry
//! would (its ephemeral nodes go at once) — a real crashed process would
//! lose them only after its session timeout.

mod cluster;
mod election;
mod job;
mod log;
mod queue;

use std::time::Duration;

use coordination::{Backend, ConnectError, Connector, Session};

use self::cluster::Cluster;
use self::log::{Log, Report};

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
    let cluster = Cluster::new(connector);
    let admin = cluster.open().await?;
    let log = Log::new();
    log.say(format!(
        "coord demo on {} (under {})",
        connector.url(),
        cluster.root()
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
    if let Err(e) = delete_tree(&admin, cluster.root()).await {
        log.say(format!("could not delete {}: {e}", cluster.root()));
    }
    // The parent, if we were its last user; someone else's run keeps it.
    let _ = admin.delete("/coord-demo", None).await;
    cluster.close_all().await;
    let report = log.report();
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
async fn delete_tree(session: &Session, path: &str) -> coordination::Result<()> {
    let mut stack = vec![(path.to_owned(), false)];
    while let Some((node, expanded)) = stack.pop() {
        if expanded {
            match session.delete(&node, None).await {
                Ok(()) | Err(coordination::Error::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
            continue;
        }
        let children = match session.children(&node).await {
            Ok(c) => c,
            Err(coordination::Error::NotFound { .. }) => continue,
            Err(e) => return Err(e),
        };
        stack.push((node.clone(), true));
        for c in children {
            stack.push((coordination::path::join(&node, &c.name), false));
        }
    }
    Ok(())
}

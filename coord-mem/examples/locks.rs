//! Eight contenders on one lock, in memory, no server needed:
//!
//! ```text
//! cargo run -p coord-mem --example locks
//! ```
//!
//! Each contender takes the lock three times. The timeline shows who held
//! it, with which fencing token, and how many wake-ups the handoffs cost.
//! The same workload then runs on the paper's simple lock, whose herd
//! effect wakes every waiter at every release. The example checks its own
//! invariants (one holder at a time, tokens strictly increasing, at most
//! one wake-up per handoff) and exits non-zero if one breaks.

use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coord_core::recipes::{Lock, LockGuard, SimpleLock, Stats};
use coord_core::Result;
use coord_mem::MemStore;
use tokio::sync::mpsc;

const CONTENDERS: usize = 8;
const ROUNDS: usize = 3;

struct Grant {
    who: usize,
    token: u64,
    wakeups: u64,
}

/// Run the workload with `acquire` and return the grants in holding order,
/// or the first invariant broken.
async fn run<F, Fut>(store: &MemStore, stats: &Stats, acquire: F) -> Result<Vec<Grant>, String>
where
    F: Fn(coord_core::Session) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Result<LockGuard>> + Send,
{
    let inside = Arc::new(AtomicUsize::new(0));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut tasks = Vec::new();
    for who in 0..CONTENDERS {
        let (session, acquire, inside, tx, stats) = (
            store.open(),
            acquire.clone(),
            inside.clone(),
            tx.clone(),
            stats.clone(),
        );
        tasks.push(tokio::spawn(async move {
            for _ in 0..ROUNDS {
                let guard = acquire(session.clone()).await.map_err(|e| e.to_string())?;
                if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                    return Err("two holders at once".to_string());
                }
                let _ = tx.send(Grant {
                    who,
                    token: guard.fencing_token(),
                    wakeups: stats.wakeups(),
                });
                tokio::time::sleep(Duration::from_millis(2)).await; // the work
                inside.fetch_sub(1, Ordering::SeqCst);
                guard.release().await.map_err(|e| e.to_string())?;
            }
            session.close().await.map_err(|e| e.to_string())
        }));
    }
    drop(tx);
    let mut grants = Vec::new();
    while let Some(g) = rx.recv().await {
        grants.push(g);
    }
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    if !grants.windows(2).all(|w| w[0].token < w[1].token) {
        return Err("fencing tokens did not strictly increase".into());
    }
    Ok(grants)
}

#[tokio::main]
async fn main() -> ExitCode {
    let store = MemStore::new();

    println!(
        "== Lock (queue, each waiter watches its predecessor): {CONTENDERS} contenders x {ROUNDS}"
    );
    let queue_stats = Stats::new();
    let st = queue_stats.clone();
    let grants = match run(&store, &queue_stats, move |s| {
        let st = st.clone();
        async move { Lock::new(&s, "/demo/lock")?.with_stats(st).acquire().await }
    })
    .await
    {
        Ok(g) => g,
        Err(e) => {
            eprintln!("invariant broken: {e}");
            return ExitCode::FAILURE;
        }
    };
    for g in &grants {
        println!(
            "  contender {} holds  fencing token {:>3}  wake-ups so far {:>3}",
            g.who, g.token, g.wakeups
        );
    }
    let handoffs = grants.len() as u64 - 1;
    let queue_wakeups = queue_stats.wakeups();
    println!(
        "  {} grants, {handoffs} handoffs, {queue_wakeups} wake-ups",
        grants.len()
    );

    println!("== SimpleLock (the paper's lock file: the herd): same workload");
    let herd_stats = Stats::new();
    let st = herd_stats.clone();
    let herd = match run(&store, &herd_stats, move |s| {
        let st = st.clone();
        async move {
            SimpleLock::new(&s, "/demo/simple")?
                .with_stats(st)
                .acquire()
                .await
        }
    })
    .await
    {
        Ok(g) => g,
        Err(e) => {
            eprintln!("invariant broken: {e}");
            return ExitCode::FAILURE;
        }
    };
    let herd_wakeups = herd_stats.wakeups();
    println!("  {} grants, {herd_wakeups} wake-ups", herd.len());
    println!(
        "== wake-ups per handoff: Lock {:.2}, SimpleLock {:.2}",
        queue_wakeups as f64 / handoffs as f64,
        herd_wakeups as f64 / handoffs as f64
    );
    if queue_wakeups > handoffs {
        eprintln!("invariant broken: the queue lock woke more than one waiter per handoff");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

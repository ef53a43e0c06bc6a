//! Part 3: 3 producers, 3 consumers, every item exactly once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coordination::Queue;
use tokio::task::JoinSet;

use super::cluster::Cluster;
use super::log::Log;

const PER_PRODUCER: usize = 100;

/// What a queue task reports: a consumer's number, its items and its
/// listings; producers report `None`.
type Done = Option<(usize, Vec<String>, u64)>;

pub async fn queue(cluster: &Cluster, log: &Log) {
    log.say(format!(
        "== queue: 3 producers x {PER_PRODUCER} items, 3 consumers"
    ));
    let dir = cluster.path("/queues/reports");
    let total = 3 * PER_PRODUCER;
    let received = Arc::new(AtomicUsize::new(0));
    let mut tasks: JoinSet<Done> = JoinSet::new();
    let mut handles = Vec::new();
    for _ in 0..6 {
        let session = match cluster.open().await {
            Ok(s) => s,
            Err(e) => return log.check(false, format!("queue session: {e}")),
        };
        match Queue::new(&session, &dir) {
            Ok(q) => handles.push(q),
            Err(e) => return log.check(false, format!("queue handle: {e}")),
        }
    }
    let consumers = handles.split_off(3);
    for (p, q) in handles.into_iter().enumerate() {
        let log = log.clone();
        tasks.spawn(async move {
            for k in 0..PER_PRODUCER {
                if let Err(e) = q.offer(format!("{p}:{k}").as_bytes()).await {
                    log.say(format!("producer {p} failed: {e}"));
                    break;
                }
            }
            None
        });
    }
    for (c, q) in consumers.into_iter().enumerate() {
        let received = received.clone();
        tasks.spawn(async move {
            let mut mine = Vec::new();
            while received.load(Ordering::SeqCst) < total {
                if let Ok(item) = q.take_timeout(Duration::from_millis(50)).await {
                    received.fetch_add(1, Ordering::SeqCst);
                    mine.push(String::from_utf8_lossy(&item).into_owned());
                }
            }
            Some((c, mine, q.stats().listings()))
        });
    }
    let mut all = Vec::new();
    while let Some(r) = tasks.join_next().await {
        match r {
            Ok(Some((c, mine, listings))) => {
                log.say(format!(
                    "consumer {c} took {} items with {listings} listings",
                    mine.len()
                ));
                all.extend(mine);
            }
            Ok(None) => {}
            Err(_) => return log.check(false, "a queue task ended cleanly"),
        }
    }
    let n = all.len();
    all.sort();
    all.dedup();
    log.check(
        n == total && all.len() == total,
        format!(
            "{total} items delivered exactly once ({n} deliveries, {} distinct)",
            all.len()
        ),
    );
}

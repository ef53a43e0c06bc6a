//! W5 election failover, W6 queue, W7 double barrier, W8 membership.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use coord::{DoubleBarrier, Election, Group, Leadership, Queue, Session};

use crate::target::{Expirer, Target};
use crate::BenchResult;

/// W5's failover times.
#[derive(Debug, Clone, Default)]
pub struct Failovers {
    /// From the leader's `resign()` call to the next leader's elected.
    pub after_resign: Vec<Duration>,
    /// From the call that expires the leader's session on the server to
    /// the next leader's elected (includes the expiry hook itself: on
    /// ZooKeeper a session takeover and close).
    pub after_expiry: Vec<Duration>,
    /// From the moment the server had ended the leader's session (the
    /// expiry hook returned) to the next leader's elected.
    pub after_session_end: Vec<Duration>,
}

type Elected = (usize, BenchResult<Leadership>, Instant);

fn campaign(
    i: usize,
    s: Session,
    dir: String,
    tx: tokio::sync::mpsc::UnboundedSender<Elected>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let r = match Election::new(&s, &dir) {
            Ok(e) => e.campaign(format!("p{i}").as_bytes()).await,
            Err(e) => Err(e),
        };
        let at = Instant::now();
        let _ = tx.send((i, r.map_err(Into::into), at));
    })
}

/// Run W5 with `participants` sessions: `resigns` failovers after a
/// resignation, then `expiries` after the leader's session is expired.
///
/// # Errors
/// Server errors.
pub async fn election(
    target: &Target,
    dir: &str,
    participants: usize,
    resigns: usize,
    expiries: usize,
) -> BenchResult<Failovers> {
    let mut slots: Vec<(Session, Expirer)> = Vec::new();
    for _ in 0..participants.max(2) {
        slots.push(target.open_expirable().await?);
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Elected>();
    let mut tasks = Vec::new();
    for (i, (s, _)) in slots.iter().enumerate() {
        tasks.push(campaign(i, s.clone(), dir.to_owned(), tx.clone()));
    }
    let (mut leader_i, first, _) = rx.recv().await.ok_or("election tasks ended")?;
    let mut leadership = first?;
    let mut out = Failovers::default();
    for round in 0..resigns + expiries {
        let t0 = Instant::now();
        let mut ended = None;
        if round < resigns {
            leadership.resign().await?;
            let s = slots[leader_i].0.clone();
            tasks.push(campaign(leader_i, s, dir.to_owned(), tx.clone()));
        } else {
            target.expire(&slots[leader_i].1).await?;
            ended = Some(Instant::now());
            drop(leadership);
            let fresh = target.open_expirable().await?;
            let s = fresh.0.clone();
            let old = std::mem::replace(&mut slots[leader_i], fresh);
            drop(old);
            tasks.push(campaign(leader_i, s, dir.to_owned(), tx.clone()));
        }
        let (i, next, at) = rx.recv().await.ok_or("election tasks ended")?;
        leadership = next?;
        leader_i = i;
        let d = at.saturating_duration_since(t0);
        if round < resigns {
            out.after_resign.push(d);
        } else {
            out.after_expiry.push(d);
            if let Some(e) = ended {
                out.after_session_end.push(at.saturating_duration_since(e));
            }
        }
    }
    let _ = leadership.resign().await;
    for t in tasks {
        t.abort();
    }
    for (s, _) in slots {
        let _ = s.close().await;
    }
    Ok(out)
}

/// W6's results.
#[derive(Debug, Clone, Copy, Default)]
pub struct QueueRun {
    /// Items per second, producer and consumers running together.
    pub items_per_s: f64,
    /// Time to drain the prefilled queue with the consumers.
    pub drain: Duration,
    /// Directory listings the consumers made while draining.
    pub listings: u64,
}

/// W6a: one producer offers `n` items while `consumers` take them.
///
/// # Errors
/// Server errors.
pub async fn queue_concurrent(
    producer: &Session,
    consumers: &[Session],
    dir: &str,
    n: usize,
) -> BenchResult<QueueRun> {
    let taken = Arc::new(AtomicUsize::new(0));
    let (done_tx, done_rx) = tokio::sync::watch::channel(false);
    let done_tx = Arc::new(done_tx);
    let mut set = tokio::task::JoinSet::new();
    for s in consumers {
        let q = Queue::new(s, dir)?;
        let taken = taken.clone();
        let done_tx = done_tx.clone();
        let mut done_rx = done_rx.clone();
        set.spawn(async move {
            loop {
                if *done_rx.borrow() {
                    break;
                }
                tokio::select! {
                    r = q.take() => {
                        r?;
                        if taken.fetch_add(1, Ordering::SeqCst) + 1 >= n {
                            let _ = done_tx.send(true);
                            break;
                        }
                    }
                    _ = done_rx.changed() => {}
                }
            }
            Ok::<u64, crate::BenchError>(q.stats().listings())
        });
    }
    let q = Queue::new(producer, dir)?;
    let start = Instant::now();
    for i in 0..n {
        q.offer(format!("item {i}").as_bytes()).await?;
    }
    let mut listings = 0;
    while let Some(r) = set.join_next().await {
        listings += r??;
    }
    Ok(QueueRun {
        items_per_s: n as f64 / start.elapsed().as_secs_f64(),
        drain: Duration::ZERO,
        listings,
    })
}

/// W6b: prefill `n` items (several offers in flight), then time the
/// consumers draining them with `poll` until empty.
///
/// # Errors
/// Server errors.
pub async fn queue_drain(
    fillers: &[Session],
    consumers: &[Session],
    dir: &str,
    n: usize,
) -> BenchResult<QueueRun> {
    let next = Arc::new(AtomicUsize::new(0));
    let mut set = tokio::task::JoinSet::new();
    for s in fillers.iter().cycle().take(fillers.len() * 4) {
        let q = Queue::new(s, dir)?;
        let next = next.clone();
        set.spawn(async move {
            while next.fetch_add(1, Ordering::SeqCst) < n {
                q.offer(b"item").await?;
            }
            Ok::<(), crate::BenchError>(())
        });
    }
    while let Some(r) = set.join_next().await {
        r??;
    }
    let taken = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(tokio::sync::Barrier::new(consumers.len() + 1));
    let mut set = tokio::task::JoinSet::new();
    for s in consumers {
        let q = Queue::new(s, dir)?;
        let taken = taken.clone();
        let gate = gate.clone();
        set.spawn(async move {
            gate.wait().await;
            while q.poll().await?.is_some() {
                taken.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<u64, crate::BenchError>(q.stats().listings())
        });
    }
    // Timed from before the gate opens: a fast run may finish before
    // this task is polled again.
    let start = Instant::now();
    gate.wait().await;
    let mut listings = 0;
    while let Some(r) = set.join_next().await {
        listings += r??;
    }
    let drain = start.elapsed();
    let got = taken.load(Ordering::Relaxed);
    if got != n {
        return Err(format!("drained {got} items of {n}").into());
    }
    Ok(QueueRun {
        items_per_s: n as f64 / drain.as_secs_f64(),
        drain,
        listings,
    })
}

/// W7: `sessions.len()` participants enter and leave a fresh double
/// barrier `rounds` times; returns the whole time.
///
/// # Errors
/// Server errors.
pub async fn double_barrier(
    sessions: &[Session],
    dir: &str,
    rounds: usize,
) -> BenchResult<Duration> {
    let n = sessions.len();
    let gate = Arc::new(tokio::sync::Barrier::new(n + 1));
    let mut set = tokio::task::JoinSet::new();
    for s in sessions {
        let s = s.clone();
        let dir = dir.to_owned();
        let gate = gate.clone();
        set.spawn(async move {
            gate.wait().await;
            for r in 0..rounds {
                // A fresh barrier each round: the recipe's `ready` node stays.
                let b = DoubleBarrier::new(&s, &format!("{dir}/r{r}"), n)?;
                let inside = b.enter().await?;
                inside.leave().await?;
            }
            Ok::<(), crate::BenchError>(())
        });
    }
    // Timed from before the gate opens: a fast run may finish before
    // this task is polled again.
    let start = Instant::now();
    gate.wait().await;
    while let Some(r) = set.join_next().await {
        r??;
    }
    Ok(start.elapsed())
}

/// W8: `joiners` each join the group at once; returns, per watcher, the
/// time from the first join until it saw every member.
///
/// # Errors
/// Server errors.
pub async fn membership(
    watchers: &[Session],
    joiners: &[Session],
    dir: &str,
) -> BenchResult<Vec<Duration>> {
    let n = joiners.len();
    let ready = Arc::new(tokio::sync::Barrier::new(watchers.len() + 1));
    let (go_tx, go_rx) = tokio::sync::watch::channel::<Option<Instant>>(None);
    let mut set = tokio::task::JoinSet::new();
    for s in watchers {
        let g = Group::new(s, dir)?;
        let ready = ready.clone();
        let mut go_rx = go_rx.clone();
        set.spawn(async move {
            let mut w = g.watch();
            w.next().await?;
            ready.wait().await;
            loop {
                let change = w.next().await?;
                if change.members.len() >= n {
                    break;
                }
            }
            let seen = Instant::now();
            let t0 = match *go_rx.borrow_and_update() {
                Some(t) => t,
                None => return Err("saw members before the joins started".into()),
            };
            Ok::<Duration, crate::BenchError>(seen.saturating_duration_since(t0))
        });
    }
    ready.wait().await;
    let t0 = Instant::now();
    let _ = go_tx.send(Some(t0));
    let mut joins = tokio::task::JoinSet::new();
    for (i, s) in joiners.iter().enumerate() {
        let g = Group::new(s, dir)?;
        joins.spawn(async move { g.join(format!("member {i}").as_bytes()).await });
    }
    let mut members = Vec::new();
    while let Some(r) = joins.join_next().await {
        members.push(r??);
    }
    let mut seen = Vec::new();
    while let Some(r) = set.join_next().await {
        seen.push(r??);
    }
    for m in members {
        let _ = m.leave().await;
    }
    Ok(seen)
}

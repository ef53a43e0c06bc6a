//! `queue-drain --url zk://HOST:PORT --path /q --items N [--consumers 4]
//! [--prefill] [--drain]`: coord's side of `scripts/bench-peers-queue`,
//! which drains the same number of items with coord's `Queue`, kazoo's
//! `Queue` and Curator's `SimpleDistributedQueue` side by side.
//!
//! `--prefill` offers `item-0` .. `item-<N-1>` with `Queue::offer` (four
//! offers in flight on one session; not timed). `--drain` opens
//! `--consumers` sessions, one `Queue` each, then times them polling
//! concurrently until each finds the queue empty, and checks that every
//! item was taken exactly once. Prints one JSON line:
//! `{"items":N,"seconds":S,...}` (`seconds` only with `--drain`: until
//! every consumer found the queue empty; `last_take_seconds`: until the
//! last item was taken; `listings` and `names_listed`: the consumers'
//! listings and the names those read); exits 1
//! if the check fails or a session errs.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use coordination::{Queue, Session};

/// Prefill and/or drain one queue with coord's `Queue`.
#[derive(Debug, Parser)]
#[command(name = "queue-drain")]
struct Args {
    /// The server, e.g. zk://127.0.0.1:2181.
    #[arg(long)]
    url: String,
    /// The queue's directory.
    #[arg(long)]
    path: String,
    /// Items to offer, and to expect when draining.
    #[arg(long, default_value_t = 2000)]
    items: usize,
    /// Consumers draining at once, each on its own session.
    #[arg(long, default_value_t = 4)]
    consumers: usize,
    /// Offer the items first (not timed).
    #[arg(long)]
    prefill: bool,
    /// Time the consumers draining the queue until empty.
    #[arg(long)]
    drain: bool,
}

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

async fn prefill(url: &str, path: &str, n: usize) -> Res<()> {
    let session = coordination::connect(url).await?;
    let next = Arc::new(AtomicUsize::new(0));
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let q = Queue::new(&session, path)?;
        let next = next.clone();
        set.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= n {
                    return Ok::<(), coordination::Error>(());
                }
                q.offer(format!("item-{i}").as_bytes()).await?;
            }
        });
    }
    while let Some(r) = set.join_next().await {
        r??;
    }
    session.close().await?;
    Ok(())
}

/// What the consumers took, and how long they took.
struct Drained {
    seconds: f64,
    last_take_seconds: f64,
    taken: Vec<Vec<u8>>,
    per_consumer: Vec<usize>,
    listings: u64,
    names_listed: u64,
}

async fn drain(url: &str, path: &str, consumers: usize) -> Res<Drained> {
    // Sessions open before the clock starts, as the peers' do.
    let mut sessions: Vec<Session> = Vec::with_capacity(consumers);
    for _ in 0..consumers {
        sessions.push(coordination::connect(url).await?);
    }
    let gate = Arc::new(tokio::sync::Barrier::new(consumers + 1));
    let mut set = tokio::task::JoinSet::new();
    for s in &sessions {
        let q = Queue::new(s, path)?;
        let gate = gate.clone();
        set.spawn(async move {
            gate.wait().await;
            let mut got = Vec::new();
            let mut last = None;
            while let Some(item) = q.poll().await? {
                got.push(item);
                last = Some(Instant::now());
            }
            let stats = q.stats();
            let listed = (stats.listings(), stats.names_listed());
            Ok::<_, coordination::Error>((got, listed, Instant::now(), last))
        });
    }
    let start = Instant::now();
    gate.wait().await;
    let mut taken = Vec::new();
    let mut per_consumer = Vec::new();
    let (mut listings, mut names_listed) = (0, 0);
    let mut end = start;
    let mut last_take = start;
    while let Some(r) = set.join_next().await {
        let (got, (l, n), at, last) = r??;
        per_consumer.push(got.len());
        taken.extend(got);
        listings += l;
        names_listed += n;
        end = end.max(at);
        last_take = last_take.max(last.unwrap_or(start));
    }
    let seconds = end.duration_since(start).as_secs_f64();
    let last_take_seconds = last_take.duration_since(start).as_secs_f64();
    for s in &sessions {
        let _ = s.close().await;
    }
    Ok(Drained {
        seconds,
        last_take_seconds,
        taken,
        per_consumer,
        listings,
        names_listed,
    })
}

async fn run(a: &Args) -> Res<bool> {
    if a.prefill {
        prefill(&a.url, &a.path, a.items).await?;
    }
    let mut out = serde_json::json!({ "impl": "coord", "items": a.items });
    let mut ok = true;
    if a.drain {
        let d = drain(&a.url, &a.path, a.consumers).await?;
        // Exactly once: every expected item taken once, nothing else.
        let mut seen: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
        for t in &d.taken {
            *seen.entry(t.clone()).or_default() += 1;
        }
        let duplicates: usize = seen.values().map(|c| c - 1).sum();
        let missing = (0..a.items)
            .filter(|i| !seen.contains_key(format!("item-{i}").as_bytes()))
            .count();
        let unexpected = seen.len() + missing - a.items;
        ok = d.taken.len() == a.items && duplicates == 0 && missing == 0 && unexpected == 0;
        out["seconds"] = d.seconds.into();
        out["last_take_seconds"] = d.last_take_seconds.into();
        out["taken"] = d.taken.len().into();
        out["duplicates"] = duplicates.into();
        out["missing"] = missing.into();
        out["unexpected"] = unexpected.into();
        out["per_consumer"] = d.per_consumer.into();
        out["listings"] = d.listings.into();
        out["names_listed"] = d.names_listed.into();
        out["ok"] = ok.into();
    }
    println!("{out}");
    Ok(ok)
}

#[tokio::main]
async fn main() -> ExitCode {
    let a = Args::parse();
    if !a.prefill && !a.drain {
        eprintln!("queue-drain: give --prefill, --drain or both");
        return ExitCode::from(2);
    }
    match run(&a).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("queue-drain: {e}");
            ExitCode::FAILURE
        }
    }
}

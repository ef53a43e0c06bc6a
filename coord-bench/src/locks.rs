//! The contender loop W1 and W2 share: coord's locks and the native
//! baselines behind one interface, run uncontended (W1) or contended (W2).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use coord_core::recipes::Stats;
use coordination::SimpleLock;
use coordination::{Lock, Session};

use crate::error::{BenchError, BenchResult};
use crate::stats::{percentiles, Percentiles};
use crate::target::Target;

/// Which lock a contender takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    /// coord's `Lock` (no herd), released with `release().await`.
    Lock,
    /// coord's `Lock`, released by dropping the guard (in the background,
    /// as zookeeper-client's lock guard does).
    LockDrop,
    /// coord's `SimpleLock` (the herd baseline).
    Simple,
    /// zookeeper-client's Curator-compatible `Client::lock`.
    ZkNative,
    /// etcd's server-side lock RPC (`Lock` / `Unlock`).
    EtcdNative,
    /// PostgreSQL's session advisory lock: `pg_advisory_lock` /
    /// `pg_advisory_unlock`, one round trip each, on one connection per
    /// contender (the native floor: no fencing, no session of its own).
    PgAdvisory,
    /// `tokio::sync::Mutex`, in process: the floor.
    Tokio,
}

impl LockKind {
    /// A short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            LockKind::Lock => "Lock",
            LockKind::LockDrop => "Lock, guard dropped",
            LockKind::Simple => "SimpleLock",
            LockKind::ZkNative => "zookeeper-client lock",
            LockKind::EtcdNative => "etcd lock RPC",
            LockKind::PgAdvisory => "pg_advisory_lock",
            LockKind::Tokio => "tokio Mutex",
        }
    }

    /// The native lock W1 and W2 compare with on `backend` (a short
    /// name, as [`Target::backend`]): none on Redis.
    pub fn native(backend: &str) -> Option<LockKind> {
        match backend {
            "zk" => Some(LockKind::ZkNative),
            "etcd" => Some(LockKind::EtcdNative),
            "pg" => Some(LockKind::PgAdvisory),
            "mem" => Some(LockKind::Tokio),
            _ => None,
        }
    }
}

/// One contender: its own session or native client.
enum Contender {
    Recipe(Lock),
    RecipeDrop(Lock),
    Simple(SimpleLock),
    Zk(zookeeper_client::Client, String),
    Etcd(Box<etcd_client::Client>, i64, String),
    Pg(Box<PgAdvisory>),
    Tokio(Arc<tokio::sync::Mutex<()>>),
}

impl Contender {
    /// Acquire, call `inside(true)` (synchronously, once held), then
    /// `inside(false)` just before the release starts: between the two
    /// calls this contender holds the lock, so a check that no two
    /// contenders are between them at once checks mutual exclusion.
    /// With `pause`, the holder also yields to the runtime while it holds
    /// until another contender waits ([`Overlap::hold`]).
    async fn hold_once(
        &mut self,
        inside: &mut (dyn FnMut(bool) + Send),
        pause: Option<&Overlap>,
    ) -> BenchResult<()> {
        let pause = || async {
            if let Some(o) = pause {
                o.hold().await;
            }
        };
        match self {
            Contender::Recipe(l) => {
                let g = l.acquire().await?;
                inside(true);
                pause().await;
                inside(false);
                g.release().await?;
            }
            Contender::RecipeDrop(l) => {
                let g = l.acquire().await?;
                inside(true);
                pause().await;
                inside(false);
                // Released in the background; the session's next request
                // queues behind the delete.
                drop(g);
            }
            Contender::Simple(l) => {
                let g = l.acquire().await?;
                inside(true);
                pause().await;
                inside(false);
                g.release().await?;
            }
            Contender::Zk(client, dir) => {
                let prefix = zookeeper_client::LockPrefix::new_curator(dir, "lock-")?;
                let options =
                    zookeeper_client::LockOptions::new(zookeeper_client::Acls::anyone_all())
                        .with_ancestor_options(
                            zookeeper_client::CreateMode::Persistent
                                .with_acls(zookeeper_client::Acls::anyone_all()),
                        )?;
                let g = client.lock(prefix, b"", options).await?;
                inside(true);
                pause().await;
                inside(false);
                // The crate's release: dropping the guard deletes the node
                // in the background; the session's next request queues
                // behind that delete (FIFO), so a loop pays for it.
                drop(g);
            }
            Contender::Etcd(client, lease, name) => {
                let r = client
                    .lock(
                        name.as_bytes(),
                        Some(etcd_client::LockOptions::new().with_lease(*lease)),
                    )
                    .await?;
                let key = r.key().to_vec();
                inside(true);
                pause().await;
                inside(false);
                client.unlock(key).await?;
            }
            Contender::Pg(pg) => {
                pg.client.execute(&pg.lock, &[&pg.key]).await?;
                inside(true);
                pause().await;
                inside(false);
                pg.client.execute(&pg.unlock, &[&pg.key]).await?;
            }
            Contender::Tokio(m) => {
                let g = m.lock().await;
                inside(true);
                pause().await;
                inside(false);
                drop(g);
            }
        }
        Ok(())
    }

    async fn finish(self) {
        if let Contender::Etcd(mut client, lease, _) = self {
            let _ = client.lease_revoke(lease).await;
        }
    }
}

/// A contender on PostgreSQL's advisory lock: its own connection, the two
/// statements prepared, the lock's key.
pub(crate) struct PgAdvisory {
    client: tokio_postgres::Client,
    lock: tokio_postgres::Statement,
    unlock: tokio_postgres::Statement,
    key: i64,
}

impl PgAdvisory {
    /// A connection to `url` (plain, as the benchmark's server is), its
    /// driver task spawned, for the advisory lock named by `name`.
    ///
    /// # Errors
    /// The server is unreachable.
    async fn connect(url: &str, name: &str) -> BenchResult<Self> {
        let client = pg_connect(url).await?;
        let lock = client.prepare("select pg_advisory_lock($1)").await?;
        let unlock = client.prepare("select pg_advisory_unlock($1)").await?;
        Ok(PgAdvisory {
            client,
            lock,
            unlock,
            key: advisory_key(name),
        })
    }
}

/// A plain tokio-postgres connection to `url`, its driver task spawned (it
/// ends when the client is dropped).
///
/// # Errors
/// The server is unreachable or refuses the login.
pub(crate) async fn pg_connect(url: &str) -> BenchResult<tokio_postgres::Client> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}

/// The advisory lock key of the lock at `name`: a hash, the same for every
/// contender of the run.
fn advisory_key(name: &str) -> i64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    h.finish() as i64
}

/// What W2's holder waits for while it holds: another contender waiting
/// for the lock, so that every grant but the first is a handoff. On mem a
/// whole acquire and release completes without yielding, and with two
/// worker threads a holder that yielded once often let go before any
/// other contender had queued: W2 then measured tasks re-taking a free
/// lock (the smoke test once saw 0 wake-ups in a whole run). Against a
/// server the others are queued already, and the first look says so.
struct Overlap {
    /// Contenders that asked for the lock and were not granted yet: the
    /// only sign a native client gives.
    asking: AtomicUsize,
    /// The recipes' counters: a waiter counts as waiting once its watch
    /// is armed, so a release is sure to wake it.
    stats: Option<Stats>,
    /// Contenders still looping; a holder alone waits for no one.
    running: AtomicUsize,
}

impl Overlap {
    fn someone_waits(&self) -> bool {
        match &self.stats {
            Some(st) => st.waiting() > 0,
            None => self.asking.load(Ordering::SeqCst) > 0,
        }
    }

    /// Yield to the runtime, and again until another contender waits or
    /// no other still runs. Ends: a contender that does not wait either
    /// asks for the lock (and comes to wait) or leaves its loop.
    async fn hold(&self) {
        loop {
            tokio::task::yield_now().await;
            if self.someone_waits() || self.running.load(Ordering::SeqCst) <= 1 {
                return;
            }
        }
    }
}

/// Counts a W2 contender out of [`Overlap::running`] when its task ends,
/// however it ends.
struct Running(Arc<Overlap>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Make `k` contenders of `kind` on the lock at `dir`, counting into `stats`.
async fn contenders(
    target: &Target,
    sessions: &[Session],
    kind: LockKind,
    k: usize,
    dir: &str,
    stats: &Stats,
) -> BenchResult<Vec<Contender>> {
    let mut out = Vec::with_capacity(k);
    let tokio_mutex = Arc::new(tokio::sync::Mutex::new(()));
    for i in 0..k {
        let c = match kind {
            LockKind::Lock | LockKind::LockDrop | LockKind::Simple => {
                let s = sessions.get(i).ok_or("not enough sessions in the pool")?;
                if kind == LockKind::Lock {
                    Contender::Recipe(Lock::new(s, dir)?.with_stats(stats.clone()))
                } else if kind == LockKind::LockDrop {
                    Contender::RecipeDrop(Lock::new(s, dir)?.with_stats(stats.clone()))
                } else {
                    Contender::Simple(SimpleLock::new(s, dir)?.with_stats(stats.clone()))
                }
            }
            LockKind::ZkNative => {
                let hosts = target.zk_hosts().ok_or("not a ZooKeeper target")?;
                let client = zookeeper_client::Client::connect(&hosts).await?;
                Contender::Zk(client, dir.to_owned())
            }
            LockKind::EtcdNative => {
                let endpoints = target.etcd_endpoints().ok_or("not an etcd target")?;
                let mut client = etcd_client::Client::connect(endpoints, None).await?;
                let lease = client.lease_grant(60, None).await?.id();
                Contender::Etcd(Box::new(client), lease, dir.to_owned())
            }
            LockKind::PgAdvisory => {
                let url = target.pg_url().ok_or("not a PostgreSQL target")?;
                Contender::Pg(Box::new(PgAdvisory::connect(url, dir).await?))
            }
            LockKind::Tokio => Contender::Tokio(tokio_mutex.clone()),
        };
        out.push(c);
    }
    Ok(out)
}

/// W1: one session, `cycles` acquire + release in a row.
#[derive(Debug, Clone)]
pub struct Cycles {
    /// Cycles per second.
    pub per_s: f64,
    /// Cycles per second of each block, when run in blocks.
    pub blocks: Vec<f64>,
    /// Latency of one cycle (acquire start to the next acquire start).
    pub latency: Percentiles,
}

/// Run W1 for each of `kinds` on its own lock (`<dir>/<index>`), in
/// `blocks` alternating blocks of `cycles / blocks` cycles, so that every
/// kind sees the same machine conditions (a shared machine drifts: run one
/// after the other, two equal locks differ by ±30 %).
///
/// # Errors
/// Server errors.
pub async fn uncontended(
    target: &Target,
    sessions: &[Session],
    kinds: &[LockKind],
    dir: &str,
    cycles: usize,
    blocks: usize,
) -> BenchResult<Vec<Cycles>> {
    let mut cs = Vec::new();
    for (i, &kind) in kinds.iter().enumerate() {
        let mut one = contenders(
            target,
            sessions,
            kind,
            1,
            &format!("{dir}/{i}"),
            &Stats::new(),
        )
        .await?;
        let mut c = one.pop().ok_or("no contender")?;
        // Warm up (directory creation, connection).
        for _ in 0..cycles.clamp(1, 20) {
            c.hold_once(&mut |_| {}, None).await?;
        }
        cs.push(c);
    }
    let blocks = blocks.clamp(1, cycles.max(1));
    let per_block = cycles / blocks;
    let mut lat: Vec<Vec<Duration>> = vec![Vec::with_capacity(cycles); kinds.len()];
    let mut busy = vec![Duration::ZERO; kinds.len()];
    let mut block_per_s: Vec<Vec<f64>> = vec![Vec::with_capacity(blocks); kinds.len()];
    for b in 0..blocks {
        for j in 0..cs.len() {
            // Alternate which kind goes first.
            let i = if b % 2 == 0 { j } else { cs.len() - 1 - j };
            let start = Instant::now();
            let mut last = start;
            for _ in 0..per_block {
                cs[i].hold_once(&mut |_| {}, None).await?;
                let now = Instant::now();
                lat[i].push(now - last);
                last = now;
            }
            let took = start.elapsed();
            busy[i] += took;
            block_per_s[i].push(per_block as f64 / took.as_secs_f64());
        }
    }
    for c in cs {
        c.finish().await;
    }
    Ok(lat
        .iter_mut()
        .zip(busy)
        .zip(block_per_s)
        .map(|((l, t), blocks)| Cycles {
            per_s: l.len() as f64 / t.as_secs_f64(),
            blocks,
            latency: percentiles(l),
        })
        .collect())
}

/// W2's result for one lock and one number of sessions.
#[derive(Debug, Clone, Copy)]
pub struct Handoffs {
    /// Acquisitions per second, over the whole block: from the gate, so
    /// the K contenders' first arrivals are in it.
    pub per_s: f64,
    /// Acquisitions per second once every contender has had its turn to
    /// arrive: from the K-th acquisition to the last (the hand-off rate
    /// with K waiting, which a short block's arrivals would dilute).
    pub steady_per_s: f64,
    /// From a holder's release to the next holder's acquire.
    pub latency: Percentiles,
    /// Wake-ups per release (recipes only; `None` for native locks).
    pub wakeups_per_release: Option<f64>,
    /// Times two contenders held at once (must be 0).
    pub violations: usize,
    /// Acquisitions counted in the shared tally (at least the number
    /// asked for: contenders already waiting when it was reached still
    /// get the lock once).
    pub acquisitions: usize,
    /// The contenders' own counts of their acquisitions, summed: equal to
    /// `acquisitions` when every hand-off was counted once.
    pub tallied: usize,
}

#[derive(Default)]
struct Shared {
    last_release: Option<Instant>,
    handoffs: Vec<Duration>,
    count: usize,
    /// The K-th acquisition: the steady rate's start.
    steady: Option<Instant>,
    end: Option<Instant>,
}

/// Run W2: `k` contenders loop acquire → release until `total`
/// acquisitions.
///
/// # Errors
/// Server errors.
pub async fn contended(
    target: &Target,
    sessions: &[Session],
    kind: LockKind,
    k: usize,
    dir: &str,
    total: usize,
) -> BenchResult<Handoffs> {
    let stats = Stats::new();
    let cs = contenders(target, sessions, kind, k, dir, &stats).await?;
    let overlap = Arc::new(Overlap {
        asking: AtomicUsize::new(0),
        stats: matches!(kind, LockKind::Lock | LockKind::LockDrop | LockKind::Simple)
            .then(|| stats.clone()),
        running: AtomicUsize::new(k),
    });
    let shared = Arc::new(Mutex::new(Shared::default()));
    let inside_now = Arc::new(AtomicBool::new(false));
    let violations = Arc::new(AtomicUsize::new(0));
    let start_gate = Arc::new(tokio::sync::Barrier::new(k + 1));
    let mut set = tokio::task::JoinSet::new();
    for mut c in cs {
        let shared = shared.clone();
        let inside_now = inside_now.clone();
        let violations = violations.clone();
        let gate = start_gate.clone();
        let overlap = overlap.clone();
        set.spawn(async move {
            let _running = Running(overlap.clone());
            // This contender's own count of its acquisitions.
            let mut mine = 0usize;
            gate.wait().await;
            loop {
                if lock(&shared).count >= total {
                    break;
                }
                let mut stop = false;
                let mut inside = |entering: bool| {
                    if !entering {
                        // Leaving: stamped before the release starts.
                        inside_now.store(false, Ordering::SeqCst);
                        lock(&shared).last_release = Some(Instant::now());
                        return;
                    }
                    overlap.asking.fetch_sub(1, Ordering::SeqCst);
                    if inside_now.swap(true, Ordering::SeqCst) {
                        violations.fetch_add(1, Ordering::Relaxed);
                    }
                    mine += 1;
                    let mut sh = lock(&shared);
                    let now = Instant::now();
                    if let Some(r) = sh.last_release.take() {
                        sh.handoffs.push(now - r);
                    }
                    sh.count += 1;
                    if sh.count == k {
                        sh.steady = Some(now);
                    }
                    if sh.count == total {
                        sh.end = Some(now);
                    }
                    stop = sh.count >= total;
                };
                overlap.asking.fetch_add(1, Ordering::SeqCst);
                let r = c.hold_once(&mut inside, Some(&overlap)).await;
                if let Err(e) = r {
                    c.finish().await;
                    return Err(e);
                }
                if stop {
                    break;
                }
            }
            c.finish().await;
            Ok::<usize, BenchError>(mine)
        });
    }
    // Timed from before the gate opens: a fast run may finish before
    // this task is polled again.
    let start = Instant::now();
    start_gate.wait().await;
    let mut first_err = None;
    let mut tallied = 0;
    while let Some(r) = set.join_next().await {
        match r {
            Ok(Ok(n)) => tallied += n,
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(e) => {
                first_err.get_or_insert(e.into());
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    let mut sh = lock(&shared);
    let end = sh.end.unwrap_or_else(Instant::now);
    let acquisitions = sh.count;
    let latency = percentiles(&mut sh.handoffs);
    let per_s = total as f64 / (end - start).as_secs_f64();
    let steady_per_s = match sh.steady {
        Some(from) if total > k && end > from => (total - k) as f64 / (end - from).as_secs_f64(),
        _ => per_s,
    };
    let wakeups_per_release = match kind {
        LockKind::Lock | LockKind::LockDrop | LockKind::Simple => {
            Some(stats.wakeups() as f64 / (acquisitions.saturating_sub(1).max(1)) as f64)
        }
        _ => None,
    };
    Ok(Handoffs {
        per_s,
        steady_per_s,
        latency,
        wakeups_per_release,
        violations: violations.load(Ordering::Relaxed),
        acquisitions,
        tallied,
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

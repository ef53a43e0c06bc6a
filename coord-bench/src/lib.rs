//! # coord-bench
//!
//! Benchmarks of coord's recipes against one server: workloads W1–W8 with
//! K concurrent sessions, each its own connection, and in the
//! same run the baselines — the herd [`SimpleLock`](coord::core::recipes::SimpleLock),
//! zookeeper-client's own Curator-compatible lock on ZooKeeper, etcd's
//! server-side lock RPC on etcd, `tokio::sync::Mutex` in memory, and each
//! server's raw create + delete round trip. Every figure is reported with
//! its ratio to its baseline ([`report::Report`]), as markdown and JSON.
//!
//! It starts no server: `coord-bench --url zk://127.0.0.1:2181`;
//! `scripts/bench` runs the whole matrix.
#![warn(missing_docs)]

pub mod locks;
pub mod others;
pub mod report;
pub mod target;
pub mod trips;

use std::future::Future;
use std::time::{Duration, Instant};

use locks::{LockKind, MixKind};
use report::{percentiles, Better, Report, TargetCheck};
use target::Target;

/// Any error of a benchmark run.
pub type BenchError = Box<dyn std::error::Error + Send + Sync>;
/// A benchmark result.
pub type BenchResult<T> = Result<T, BenchError>;

/// How much of each workload to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// W1: acquire + release cycles (and the raw round trips).
    pub cycles: usize,
    /// W1: the cycles run in this many blocks, alternating between the
    /// recipe and the baseline.
    pub w1_blocks: usize,
    /// W2: acquisitions per case.
    pub handoffs: usize,
    /// W2: the native lock's and `Lock`'s acquisitions run in this many
    /// interleaved blocks.
    pub w2_blocks: usize,
    /// W2: numbers of sessions.
    pub sessions: Vec<usize>,
    /// W3 / W4: sessions.
    pub mixed_sessions: usize,
    /// W3 / W4: operations per session.
    pub mixed_ops: usize,
    /// W5: participants.
    pub participants: usize,
    /// W5: failovers after a resignation.
    pub resigns: usize,
    /// W5: failovers after an expiry.
    pub expiries: usize,
    /// W6: items (the drain check runs with this and twice this).
    pub queue_items: usize,
    /// W6: consumers.
    pub consumers: usize,
    /// W7: participant counts.
    pub barrier_sizes: Vec<usize>,
    /// W7: rounds per size.
    pub barrier_rounds: usize,
    /// W8: joins.
    pub joins: usize,
    /// W8: watchers.
    pub watchers: usize,
    /// Give up on one workload after this long.
    pub workload_timeout: Duration,
}

impl Config {
    /// The full sizes of docs/benchmarks.md (W6 10k items, W7 10/20/50 × 50
    /// rounds, W8 50 joins), with iteration counts kept short for a shared
    /// machine.
    pub fn full() -> Self {
        Config {
            cycles: 1000,
            w1_blocks: 10,
            handoffs: 1000,
            w2_blocks: 3,
            sessions: vec![2, 8, 32],
            mixed_sessions: 16,
            mixed_ops: 40,
            participants: 3,
            resigns: 5,
            expiries: 3,
            queue_items: 10_000,
            consumers: 4,
            barrier_sizes: vec![10, 20, 50],
            barrier_rounds: 50,
            joins: 50,
            watchers: 4,
            workload_timeout: Duration::from_secs(240),
        }
    }

    /// A few operations of every workload: the test suite's smoke run.
    pub fn smoke() -> Self {
        Config {
            cycles: 20,
            w1_blocks: 2,
            handoffs: 30,
            w2_blocks: 3,
            sessions: vec![2, 8],
            mixed_sessions: 4,
            mixed_ops: 5,
            participants: 3,
            resigns: 2,
            expiries: 2,
            queue_items: 50,
            consumers: 4,
            barrier_sizes: vec![3],
            barrier_rounds: 3,
            joins: 5,
            watchers: 2,
            workload_timeout: Duration::from_secs(30),
        }
    }

    fn describe(&self) -> Vec<(String, String)> {
        let list = |v: &[usize]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join("/")
        };
        vec![
            ("w1_cycles".into(), self.cycles.to_string()),
            ("w2_handoffs".into(), self.handoffs.to_string()),
            ("w2_sessions".into(), list(&self.sessions)),
            (
                "w3_w4".into(),
                format!("{}x{}", self.mixed_sessions, self.mixed_ops),
            ),
            (
                "w5".into(),
                format!(
                    "{} participants, {} resigns, {} expiries",
                    self.participants, self.resigns, self.expiries
                ),
            ),
            ("w6_items".into(), self.queue_items.to_string()),
            (
                "w7".into(),
                format!(
                    "{} x {} rounds",
                    list(&self.barrier_sizes),
                    self.barrier_rounds
                ),
            ),
            (
                "w8".into(),
                format!("{} joins, {} watchers", self.joins, self.watchers),
            ),
        ]
    }
}

/// Sessions opened once and shared by the workloads (each workload uses
/// its own paths).
struct Pool<'a> {
    target: &'a Target,
    sessions: Vec<coord::Session>,
}

impl Pool<'_> {
    async fn get(&mut self, n: usize) -> BenchResult<&[coord::Session]> {
        if self.sessions.len() < n {
            let more = self.target.open_many(n - self.sessions.len()).await?;
            self.sessions.extend(more);
        }
        Ok(&self.sessions[..n])
    }
}

/// A W2 row: key suffix, metric, the figure of a block, unit, which way
/// is better.
type HandoffRow = (
    &'static str,
    &'static str,
    fn(&locks::Handoffs) -> f64,
    &'static str,
    Better,
);

/// A W3 latency row: key, metric, the figure of a block.
type MixedRow = (&'static str, &'static str, fn(&locks::Mixed) -> f64);

/// Requests every one of `sessions` has sent so far (0 for a backend
/// that does not count them).
fn requests_of(sessions: &[coord::Session]) -> u64 {
    sessions.iter().filter_map(|s| s.requests_sent()).sum()
}

async fn timed<T>(
    limit: Duration,
    what: &str,
    f: impl Future<Output = BenchResult<T>>,
) -> BenchResult<T> {
    match tokio::time::timeout(limit, f).await {
        Ok(r) => r,
        Err(_) => Err(format!("{what} did not finish within {limit:?}").into()),
    }
}

/// Run every workload against `url`; a workload that fails is recorded in
/// [`Report::failures`] and the run goes on.
///
/// # Errors
/// A malformed URL or an unreachable server.
pub async fn run(url: &str, cfg: &Config) -> BenchResult<Report> {
    let target = Target::new(url)?;
    let started = Instant::now();
    let root = format!(
        "/coord-bench/{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let mut rep = Report {
        backend: target.backend().to_owned(),
        url: url.to_owned(),
        config: cfg.describe(),
        ..Report::default()
    };
    let mut pool = Pool {
        target: &target,
        sessions: Vec::new(),
    };
    pool.get(1).await?;
    let limit = cfg.workload_timeout;
    let be = target.backend();

    // The raw round trip: every other workload's yardstick.
    let mut rtt_ms = None;
    match timed(limit, "raw", async {
        let s = pool.get(1).await?;
        locks::raw_round_trip(&s[0], &format!("{root}/raw"), cfg.cycles).await
    })
    .await
    {
        Ok(c) => {
            rtt_ms = Some(c.latency.p50);
            rep.add(
                "raw.p50_ms",
                "base",
                "create + delete, 1 session",
                "latency p50",
                c.latency.p50,
                "ms",
                Better::Lower,
                None,
            );
            rep.add(
                "raw.per_s",
                "base",
                "create + delete, 1 session",
                "round trips",
                c.per_s,
                "/s",
                Better::Higher,
                None,
            );
        }
        Err(e) => rep.failures.push(("raw".into(), e.to_string())),
    }
    let rtt = rtt_ms.map(|v| ("raw create+delete p50", v));

    // RT: requests per operation, the deterministic figure.
    match timed(limit, "RT", async {
        let s = pool.get(5).await?;
        trips::round_trips(s, &format!("{root}/rt"), cfg.cycles.clamp(1, 200)).await
    })
    .await
    {
        Ok(t) => {
            for trip in &t.trips {
                rep.add(
                    &trip.key,
                    "RT",
                    &trip.case,
                    "requests per operation",
                    trip.per_op,
                    "req",
                    Better::Lower,
                    None,
                );
            }
            let (lock_p50, sem_p50) = t.acquire_p50;
            rep.add(
                "rt.semaphore.acquire_p50_ms",
                "RT",
                "Semaphore acquire (1 of 2), uncontended, in turn with Lock's",
                "latency p50",
                sem_p50,
                "ms",
                Better::Lower,
                Some(("Lock acquire p50", lock_p50)),
            );
        }
        Err(e) => rep.failures.push(("RT".into(), e.to_string())),
    }

    // W1.
    let native = match be {
        "zk" => Some(LockKind::ZkNative),
        "etcd" => Some(LockKind::EtcdNative),
        "mem" => Some(LockKind::Tokio),
        _ => None,
    };
    let mut w1_base: Option<(String, locks::Cycles)> = None;
    let mut w1_ours = None;
    let mut w1_drop = None;
    {
        let kinds: Vec<LockKind> = native
            .into_iter()
            .chain([LockKind::LockDrop, LockKind::Lock])
            .collect();
        let s = pool.get(1).await?.to_vec();
        match timed(
            limit,
            "W1",
            locks::uncontended(
                &target,
                &s,
                &kinds,
                &format!("{root}/w1"),
                cfg.cycles,
                cfg.w1_blocks,
            ),
        )
        .await
        {
            Ok(mut got) => {
                w1_ours = got.pop();
                w1_drop = got.pop();
                if let (Some(kind), Some(c)) = (native, got.pop()) {
                    let case = format!("{} (baseline)", kind.name());
                    rep.add(
                        "w1.native.per_s",
                        "W1",
                        &case,
                        "cycles",
                        c.per_s,
                        "/s",
                        Better::Higher,
                        None,
                    );
                    rep.add(
                        "w1.native.p50_ms",
                        "W1",
                        &case,
                        "latency p50",
                        c.latency.p50,
                        "ms",
                        Better::Lower,
                        None,
                    );
                    rep.add(
                        "w1.native.p99_ms",
                        "W1",
                        &case,
                        "latency p99",
                        c.latency.p99,
                        "ms",
                        Better::Lower,
                        None,
                    );
                    w1_base = Some((kind.name().to_owned(), c));
                }
            }
            Err(e) => rep.failures.push(("W1".into(), e.to_string())),
        }
    }
    if let Some(c) = w1_ours {
        let (bn, per_s, p50, p99) = match &w1_base {
            Some((n, b)) => (n.clone(), b.per_s, b.latency.p50, b.latency.p99),
            None => match &rtt {
                Some((n, v)) => (n.to_string(), 1e3 / v, *v, *v),
                None => (String::new(), 0.0, 0.0, 0.0),
            },
        };
        let b = |v: f64| {
            if bn.is_empty() {
                None
            } else {
                Some((bn.as_str(), v))
            }
        };
        match &w1_base {
            Some((n, base)) if !base.blocks.is_empty() => rep.add_blocks(
                "w1.lock.per_s",
                "W1",
                "Lock, 1 session",
                "cycles",
                &c.blocks,
                "/s",
                Better::Higher,
                (n, &base.blocks),
            ),
            _ => rep.add(
                "w1.lock.per_s",
                "W1",
                "Lock, 1 session",
                "cycles",
                c.per_s,
                "/s",
                Better::Higher,
                b(per_s),
            ),
        }
        rep.add(
            "w1.lock.p50_ms",
            "W1",
            "Lock, 1 session",
            "latency p50",
            c.latency.p50,
            "ms",
            Better::Lower,
            b(p50),
        );
        rep.add(
            "w1.lock.p99_ms",
            "W1",
            "Lock, 1 session",
            "latency p99",
            c.latency.p99,
            "ms",
            Better::Lower,
            b(p99),
        );
        if let Some(d) = w1_drop {
            let case = "Lock, guard dropped (background release), 1 session";
            match &w1_base {
                Some((n, base)) if !base.blocks.is_empty() => rep.add_blocks(
                    "w1.lockdrop.per_s",
                    "W1",
                    case,
                    "cycles",
                    &d.blocks,
                    "/s",
                    Better::Higher,
                    (n, &base.blocks),
                ),
                _ => rep.add(
                    "w1.lockdrop.per_s",
                    "W1",
                    case,
                    "cycles",
                    d.per_s,
                    "/s",
                    Better::Higher,
                    b(per_s),
                ),
            }
            rep.add(
                "w1.lockdrop.p50_ms",
                "W1",
                case,
                "latency p50",
                d.latency.p50,
                "ms",
                Better::Lower,
                b(p50),
            );
        }
    }

    // W2: SimpleLock once (the herd baseline), then the native lock (zk,
    // etcd, mem) and Lock in `w2_blocks` interleaved blocks, each block a
    // fresh lock, which goes first alternating: every ratio to the native
    // lock is the median of the per-block ratios.
    for &k in &cfg.sessions {
        let sessions = pool.get(k).await?.to_vec();
        let case = |n: &str| format!("{n}, {k} sessions");
        let simple = match timed(
            limit,
            "W2 SimpleLock",
            locks::contended(
                &target,
                &sessions,
                LockKind::Simple,
                k,
                &format!("{root}/w2s{k}"),
                cfg.handoffs,
            ),
        )
        .await
        {
            Ok(h) => Some(h),
            Err(e) => {
                rep.failures
                    .push((format!("W2 SimpleLock k={k}"), e.to_string()));
                None
            }
        };
        let blocks = cfg.w2_blocks.max(1);
        let per_block = (cfg.handoffs / blocks).max(2);
        let mut nat: Vec<locks::Handoffs> = Vec::new();
        let mut ours: Vec<locks::Handoffs> = Vec::new();
        let mut our_requests = 0u64;
        'blocks: for b in 0..blocks {
            let native_first = b % 2 == 0;
            for native_turn in [native_first, !native_first] {
                let (kind, dir) = match (native_turn, native) {
                    (true, Some(kind)) => (kind, format!("{root}/w2n{k}b{b}")),
                    (true, None) => continue,
                    (false, _) => (LockKind::Lock, format!("{root}/w2{k}b{b}")),
                };
                let before = requests_of(&sessions);
                let run = timed(
                    limit,
                    "W2",
                    locks::contended(&target, &sessions, kind, k, &dir, per_block),
                )
                .await;
                match run {
                    Ok(h) if native_turn => nat.push(h),
                    Ok(h) => {
                        our_requests += requests_of(&sessions).saturating_sub(before);
                        ours.push(h);
                    }
                    Err(e) => {
                        rep.failures
                            .push((format!("W2 {} k={k}", kind.name()), e.to_string()));
                        break 'blocks;
                    }
                }
            }
        }
        let med = |hs: &[locks::Handoffs], f: fn(&locks::Handoffs) -> f64| {
            hs.iter().map(f).collect::<Vec<f64>>()
        };
        let per_s = |h: &locks::Handoffs| h.per_s;
        let p50 = |h: &locks::Handoffs| h.latency.p50;
        let p99 = |h: &locks::Handoffs| h.latency.p99;
        if let (Some(kind), false) = (native, nat.is_empty()) {
            let c = case(&format!("{} (baseline)", kind.name()));
            let rows: [HandoffRow; 3] = [
                ("per_s", "handoffs", per_s, "/s", Better::Higher),
                ("p50_ms", "release→acquire p50", p50, "ms", Better::Lower),
                ("p99_ms", "release→acquire p99", p99, "ms", Better::Lower),
            ];
            for (key, metric, f, unit, better) in rows {
                rep.add(
                    &format!("w2.native.k{k}.{key}"),
                    "W2",
                    &c,
                    metric,
                    report::median(&med(&nat, f)),
                    unit,
                    better,
                    None,
                );
            }
        }
        let nat_name = native.map(|kind| kind.name());
        if let Some(h) = &simple {
            let base = |f: fn(&locks::Handoffs) -> f64| {
                nat_name
                    .filter(|_| !nat.is_empty())
                    .map(|n| (n, report::median(&med(&nat, f))))
            };
            let c = case("SimpleLock (herd baseline)");
            rep.add(
                &format!("w2.simple.k{k}.per_s"),
                "W2",
                &c,
                "handoffs",
                h.per_s,
                "/s",
                Better::Higher,
                base(per_s),
            );
            rep.add(
                &format!("w2.simple.k{k}.p50_ms"),
                "W2",
                &c,
                "release→acquire p50",
                h.latency.p50,
                "ms",
                Better::Lower,
                base(p50),
            );
            rep.add(
                &format!("w2.simple.k{k}.p99_ms"),
                "W2",
                &c,
                "release→acquire p99",
                h.latency.p99,
                "ms",
                Better::Lower,
                base(p99),
            );
            rep.add(
                &format!("w2.simple.k{k}.wakeups"),
                "W2",
                &c,
                "wake-ups per release",
                h.wakeups_per_release.unwrap_or(0.0),
                "",
                Better::Lower,
                None,
            );
        }
        if !ours.is_empty() {
            let c = case("Lock");
            let rows: [HandoffRow; 3] = [
                ("per_s", "handoffs", per_s, "/s", Better::Higher),
                ("p50_ms", "release→acquire p50", p50, "ms", Better::Lower),
                ("p99_ms", "release→acquire p99", p99, "ms", Better::Lower),
            ];
            for (key, metric, f, unit, better) in rows {
                let key = format!("w2.lock.k{k}.{key}");
                let our = med(&ours, f);
                match nat_name {
                    Some(n) if nat.len() == ours.len() => {
                        rep.add_blocks(
                            &key,
                            "W2",
                            &c,
                            metric,
                            &our,
                            unit,
                            better,
                            (n, &med(&nat, f)),
                        );
                    }
                    _ => {
                        let base = simple.as_ref().map(|h| ("SimpleLock", f(h)));
                        rep.add(
                            &key,
                            "W2",
                            &c,
                            metric,
                            report::median(&our),
                            unit,
                            better,
                            base,
                        );
                    }
                }
            }
            let wakeups: Vec<f64> = ours.iter().filter_map(|h| h.wakeups_per_release).collect();
            rep.add(
                &format!("w2.lock.k{k}.wakeups"),
                "W2",
                &c,
                "wake-ups per release",
                wakeups.iter().sum::<f64>() / wakeups.len().max(1) as f64,
                "",
                Better::Lower,
                simple
                    .and_then(|s| s.wakeups_per_release)
                    .map(|w| ("SimpleLock", w)),
            );
            rep.add(
                &format!("rt.w2.k{k}.requests"),
                "RT",
                &c,
                "requests per acquisition (all sessions)",
                our_requests as f64 / (ours.len() * per_block) as f64,
                "req",
                Better::Lower,
                None,
            );
        }
        let violations: usize = ours
            .iter()
            .chain(&nat)
            .chain(&simple)
            .map(|h| h.violations)
            .sum();
        if violations > 0 {
            rep.failures.push((
                format!("W2 k={k}"),
                format!("{violations} mutual exclusion violations"),
            ));
        }
    }

    // W3 and W4, with the exclusive Lock under the same load as baseline:
    // the three run in `w2_blocks` interleaved blocks (the order rotates),
    // and each ratio to the Lock is the median of the blocks' ratios.
    let m = cfg.mixed_sessions;
    let sessions = pool.get(m).await?.to_vec();
    let kinds = [
        MixKind::Exclusive,
        MixKind::ReadWrite,
        MixKind::Semaphore(4),
    ];
    let names = ["W3/W4 baseline", "W3", "W4"];
    let blocks = cfg.w2_blocks.max(1);
    let ops = (cfg.mixed_ops / blocks).max(1);
    let mut runs: [Vec<locks::Mixed>; 3] = Default::default();
    'w34: for b in 0..blocks {
        for j in 0..kinds.len() {
            let i = (j + b) % kinds.len();
            match timed(
                limit,
                names[i],
                locks::mixed(&sessions, kinds[i], &format!("{root}/w34k{i}b{b}"), ops),
            )
            .await
            {
                Ok(x) => runs[i].push(x),
                Err(e) => {
                    rep.failures.push((names[i].into(), e.to_string()));
                    break 'w34;
                }
            }
        }
    }
    let [excl, rw, sem] = runs;
    let per_s = |xs: &[locks::Mixed]| xs.iter().map(|x| x.per_s).collect::<Vec<f64>>();
    let med = |xs: &[locks::Mixed], f: fn(&locks::Mixed) -> f64| {
        report::median(&xs.iter().map(f).collect::<Vec<f64>>())
    };
    if !excl.is_empty() {
        rep.add(
            "w34.exclusive.per_s",
            "W3/W4",
            &format!("Lock (baseline), {m} sessions"),
            "ops",
            report::median(&per_s(&excl)),
            "/s",
            Better::Higher,
            None,
        );
    }
    let complete = |xs: &[locks::Mixed]| !xs.is_empty() && xs.len() == excl.len();
    if complete(&rw) {
        let case = format!("RwLock 90% reads, {m} sessions");
        rep.add_blocks(
            "w3.per_s",
            "W3",
            &case,
            "ops",
            &per_s(&rw),
            "/s",
            Better::Higher,
            ("Lock, same load", &per_s(&excl)),
        );
        let rows: [MixedRow; 4] = [
            ("w3.read_p50_ms", "read acquire p50", |x| x.read.p50),
            ("w3.read_p99_ms", "read acquire p99", |x| x.read.p99),
            ("w3.write_p50_ms", "write acquire p50", |x| x.write.p50),
            ("w3.write_p99_ms", "write acquire p99", |x| x.write.p99),
        ];
        for (key, metric, f) in rows {
            rep.add(
                key,
                "W3",
                &case,
                metric,
                med(&rw, f),
                "ms",
                Better::Lower,
                rtt,
            );
        }
    }
    if complete(&sem) {
        let case = format!("Semaphore 4 leases, {m} sessions");
        rep.add_blocks(
            "w4.per_s",
            "W4",
            &case,
            "ops",
            &per_s(&sem),
            "/s",
            Better::Higher,
            ("Lock, same load", &per_s(&excl)),
        );
        rep.add(
            "w4.p50_ms",
            "W4",
            &case,
            "acquire p50",
            med(&sem, |x| x.read.p50),
            "ms",
            Better::Lower,
            rtt,
        );
        rep.add(
            "w4.p99_ms",
            "W4",
            &case,
            "acquire p99",
            med(&sem, |x| x.read.p99),
            "ms",
            Better::Lower,
            rtt,
        );
        let most = sem.iter().map(|x| x.max_inside).max().unwrap_or(0);
        rep.add(
            "w4.max_inside",
            "W4",
            &case,
            "most holders at once",
            most as f64,
            "",
            Better::Lower,
            Some(("leases", 4.0)),
        );
        if most > 4 {
            rep.failures
                .push(("W4".into(), format!("{most} holders at once over 4 leases")));
        }
    }

    // W5.
    match timed(
        limit,
        "W5",
        others::election(
            &target,
            &format!("{root}/w5"),
            cfg.participants,
            cfg.resigns,
            cfg.expiries,
        ),
    )
    .await
    {
        Ok(mut f) => {
            let case = format!("Election, {} participants", cfg.participants);
            let r = percentiles(&mut f.after_resign);
            let x = percentiles(&mut f.after_expiry);
            rep.add(
                "w5.resign_p50_ms",
                "W5",
                &case,
                "failover after resign p50",
                r.p50,
                "ms",
                Better::Lower,
                rtt,
            );
            rep.add(
                "w5.resign_max_ms",
                "W5",
                &case,
                "failover after resign max",
                f.after_resign.last().map_or(0.0, |d| d.as_secs_f64() * 1e3),
                "ms",
                Better::Lower,
                rtt,
            );
            rep.add(
                "w5.expiry_p50_ms",
                "W5",
                &case,
                "failover after expiry p50",
                x.p50,
                "ms",
                Better::Lower,
                rtt,
            );
            rep.add(
                "w5.expiry_max_ms",
                "W5",
                &case,
                "failover after expiry max",
                f.after_expiry.last().map_or(0.0, |d| d.as_secs_f64() * 1e3),
                "ms",
                Better::Lower,
                rtt,
            );
            let e = percentiles(&mut f.after_session_end);
            rep.add(
                "w5.ended_p50_ms",
                "W5",
                &case,
                "failover after the server ended the session p50",
                e.p50,
                "ms",
                Better::Lower,
                rtt,
            );
        }
        Err(e) => rep.failures.push(("W5".into(), e.to_string())),
    }

    // W6.
    let c = cfg.consumers;
    let sessions = pool.get(c + 1).await?.to_vec();
    let n = cfg.queue_items;
    match timed(
        limit,
        "W6",
        others::queue_concurrent(&sessions[0], &sessions[1..], &format!("{root}/w6a"), n),
    )
    .await
    {
        Ok(q) => {
            rep.add(
                "w6.items_per_s",
                "W6",
                &format!("Queue, 1 producer + {c} consumers, {n} items"),
                "items",
                q.items_per_s,
                "/s",
                Better::Higher,
                rtt_ms.map(|v| ("raw create+delete", 1e3 / v)),
            );
            rep.add(
                "w6.listings",
                "W6",
                &format!("Queue, 1 producer + {c} consumers, {n} items"),
                "listings",
                q.listings as f64,
                "",
                Better::Lower,
                Some(("items", n as f64)),
            );
        }
        Err(e) => rep.failures.push(("W6".into(), e.to_string())),
    }
    let mut drains = Vec::new();
    for (i, items) in [n, 2 * n].into_iter().enumerate() {
        match timed(
            limit,
            "W6 drain",
            others::queue_drain(
                &sessions[..1],
                &sessions[1..],
                &format!("{root}/w6d{i}"),
                items,
            ),
        )
        .await
        {
            Ok(q) => drains.push((items, q)),
            Err(e) => rep
                .failures
                .push((format!("W6 drain {items}"), e.to_string())),
        }
    }
    if let [(n1, a), (n2, b)] = drains.as_slice() {
        rep.add(
            "w6.drain1_s",
            "W6",
            &format!("drain {n1}, {c} consumers"),
            "time",
            a.drain.as_secs_f64(),
            "s",
            Better::Lower,
            None,
        );
        rep.add(
            "w6.drain1_listings",
            "W6",
            &format!("drain {n1}, {c} consumers"),
            "listings",
            a.listings as f64,
            "",
            Better::Lower,
            Some(("items", *n1 as f64)),
        );
        rep.add(
            "w6.drain2_s",
            "W6",
            &format!("drain {n2}, {c} consumers"),
            "time",
            b.drain.as_secs_f64(),
            "s",
            Better::Lower,
            Some((&format!("drain {n1}"), a.drain.as_secs_f64())),
        );
        rep.add(
            "w6.drain2_listings",
            "W6",
            &format!("drain {n2}, {c} consumers"),
            "listings",
            b.listings as f64,
            "",
            Better::Lower,
            Some(("items", *n2 as f64)),
        );
    }

    // W6c: one consumer against all of them, draining the same number of
    // prefilled items in interleaved blocks (which goes first alternates).
    {
        let items = (n / 5).max(10);
        let (mut one, mut all) = (Vec::new(), Vec::new());
        'blocks: for b in 0..cfg.w2_blocks.max(1) {
            let one_first = b % 2 == 0;
            for one_turn in [one_first, !one_first] {
                let consumers = if one_turn {
                    &sessions[1..2]
                } else {
                    &sessions[1..]
                };
                let dir = format!("{root}/w6c{b}{}", if one_turn { "one" } else { "all" });
                match timed(
                    limit,
                    "W6 consumers",
                    others::queue_drain(&sessions[..1], consumers, &dir, items),
                )
                .await
                {
                    Ok(q) if one_turn => one.push(q.items_per_s),
                    Ok(q) => all.push(q.items_per_s),
                    Err(e) => {
                        rep.failures.push(("W6 consumers".into(), e.to_string()));
                        break 'blocks;
                    }
                }
            }
        }
        if !all.is_empty() && all.len() == one.len() {
            rep.add_blocks(
                "w6.four_vs_one.per_s",
                "W6",
                &format!("drain {items}, {c} consumers"),
                "items",
                &all,
                "/s",
                Better::Higher,
                ("1 consumer", &one),
            );
        }
    }

    // W7.
    for &size in &cfg.barrier_sizes {
        let sessions = pool.get(size).await?.to_vec();
        match timed(
            limit,
            "W7",
            others::double_barrier(&sessions, &format!("{root}/w7n{size}"), cfg.barrier_rounds),
        )
        .await
        {
            Ok(d) => {
                let round = d.as_secs_f64() * 1e3 / cfg.barrier_rounds as f64;
                let case = format!(
                    "DoubleBarrier, {size} participants × {} rounds",
                    cfg.barrier_rounds
                );
                rep.add(
                    &format!("w7.n{size}.round_ms"),
                    "W7",
                    &case,
                    "time per round",
                    round,
                    "ms",
                    Better::Lower,
                    rtt,
                );
                rep.add(
                    &format!("w7.n{size}.per_participant_ms"),
                    "W7",
                    &case,
                    "time per participant per round",
                    round / size as f64,
                    "ms",
                    Better::Lower,
                    Some(("ZooKeeper paper, upper", 0.51)),
                );
            }
            Err(e) => rep.failures.push((format!("W7 n={size}"), e.to_string())),
        }
    }

    // W8.
    let w = cfg.watchers;
    let sessions = pool.get(w + cfg.joins).await?.to_vec();
    match timed(
        limit,
        "W8",
        others::membership(&sessions[..w], &sessions[w..], &format!("{root}/w8")),
    )
    .await
    {
        Ok(mut seen) => {
            let case = format!("Group, {} joins, {w} watchers", cfg.joins);
            let max = seen.iter().max().copied().unwrap_or_default();
            let p = percentiles(&mut seen);
            rep.add(
                "w8.full_view_ms",
                "W8",
                &case,
                "until every watcher sees all",
                max.as_secs_f64() * 1e3,
                "ms",
                Better::Lower,
                rtt,
            );
            rep.add(
                "w8.mean_ms",
                "W8",
                &case,
                "until a watcher sees all (mean)",
                p.mean,
                "ms",
                Better::Lower,
                rtt,
            );
        }
        Err(e) => rep.failures.push(("W8".into(), e.to_string())),
    }

    for s in pool.sessions {
        let _ = s.close().await;
    }
    rep.elapsed = started.elapsed();
    check_targets(&mut rep, cfg);
    Ok(rep)
}

/// The performance targets (issue 15; docs/benchmarks.md) that apply to
/// this backend. Ratios to a native client are medians of interleaved
/// blocks where the workload runs in blocks.
fn check_targets(rep: &mut Report, cfg: &Config) {
    let mut t = Vec::new();
    // A row without a ratio (a side had no sample) is a target missed,
    // reported as "no sample", not one left out.
    let ratio = |rep: &Report, key: &str| rep.get(key).map(|r| r.ratio().unwrap_or(f64::NAN));
    let at_least = |t: &mut Vec<TargetCheck>, rep: &Report, key: &str, what: String, min: f64| {
        if let Some(x) = ratio(rep, key) {
            t.push(TargetCheck {
                what,
                measured: x,
                met: x >= min,
            });
        }
    };
    match rep.backend.as_str() {
        "zk" => {
            let base = "zookeeper-client's lock";
            // Like for like: zookeeper-client's guard deletes its node in
            // the background when dropped; so does a dropped `Lock` guard.
            // `release().await` deletes before it returns (its promise):
            // one more write in the cycle; reported, not the target.
            at_least(
                &mut t,
                rep,
                "w1.lockdrop.per_s",
                format!("ZooKeeper W1 cycles/s, guard dropped, ≥ 1.1× {base} (guard dropped)"),
                1.1,
            );
            for k in [8, 32] {
                at_least(
                    &mut t,
                    rep,
                    &format!("w2.lock.k{k}.per_s"),
                    format!("ZooKeeper W2 handoffs/s at {k} sessions ≥ 1.1× {base}"),
                    1.1,
                );
            }
        }
        "etcd" => {
            at_least(
                &mut t,
                rep,
                "w1.lock.per_s",
                "etcd W1 cycles/s ≥ 1.0× the lock RPC".into(),
                1.0,
            );
            for (k, min) in [(8, 3.0), (32, 1.5)] {
                at_least(
                    &mut t,
                    rep,
                    &format!("w2.lock.k{k}.per_s"),
                    format!("etcd W2 handoffs/s at {k} sessions ≥ {min}× the lock RPC"),
                    min,
                );
            }
            at_least(
                &mut t,
                rep,
                "w6.four_vs_one.per_s",
                "etcd W6: 4 consumers drain ≥ 2.5× as fast as 1".into(),
                2.5,
            );
        }
        "mem" => {
            // tokio cycles/s ÷ Lock cycles/s: the inverse of the row's ratio.
            if let Some(x) = ratio(rep, "w1.lock.per_s") {
                let x = 1.0 / x;
                t.push(TargetCheck {
                    what: "in-memory W1 within 50× of tokio::sync::Mutex (tokio cycles/s ÷ Lock cycles/s ≤ 50)".into(),
                    measured: x,
                    met: x <= 50.0,
                });
            }
        }
        _ => {}
    }
    if let Some(x) = rep.value("rt.semaphore.acquire") {
        t.push(TargetCheck {
            what: "Semaphore uncontended acquire ≤ 3 round trips".into(),
            measured: x,
            met: x <= 3.0,
        });
    }
    if let Some(x) = ratio(rep, "rt.semaphore.acquire_p50_ms") {
        t.push(TargetCheck {
            what: "Semaphore uncontended acquire p50 ≤ 2× Lock's".into(),
            measured: x,
            met: x <= 2.0,
        });
    }
    if let Some(x) = rep.value("rt.queue.take4.deletes") {
        t.push(TargetCheck {
            what: "Queue take by one of 4 consumers ≤ 1.2 deletes per item".into(),
            measured: x,
            met: x <= 1.2,
        });
    }
    let kmax = cfg.sessions.iter().copied().max().unwrap_or(0);
    if let Some(w) = rep.value(&format!("w2.lock.k{kmax}.wakeups")) {
        t.push(TargetCheck {
            what: format!("≤ 1.05 wake-ups per release at {kmax} sessions"),
            measured: w,
            met: w <= 1.05,
        });
    }
    if let (Some(a), Some(b)) = (rep.value("w6.drain1_s"), rep.value("w6.drain2_s")) {
        let x = b / a;
        t.push(TargetCheck {
            what: "W6 linear: draining 2N ≤ 2.2× draining N".into(),
            measured: x,
            met: x <= 2.2,
        });
    }
    rep.targets = t;
}

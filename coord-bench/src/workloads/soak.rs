//! S: the soak — a few sessions looping acquire → release on one `Lock`
//! for a given time, the process's resident memory sampled as it goes:
//! the memory at the end should be within 10 % of the memory after the
//! warm-up. Not part of the normal run: `coord-bench --soak 30m`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use coordination::{Lock, Session};

use crate::error::{BenchError, BenchResult};
use crate::report::TargetCheck;
use crate::row::{Row, Unit};
use crate::workloads::memory::rss_bytes;

/// How long to soak, and how it is sampled.
#[derive(Debug, Clone, Copy)]
pub struct Soak {
    /// The whole run.
    pub duration: Duration,
    /// The memory after this long is the one the end is compared with.
    pub warmup: Duration,
    /// Time between samples.
    pub every: Duration,
    /// Sessions looping on the lock.
    pub sessions: usize,
}

impl Soak {
    /// A soak of `duration`: 4 sessions, a sample every 10 s, the
    /// warm-up the first 60 s (a quarter of a shorter run).
    pub fn new(duration: Duration) -> Self {
        Soak {
            duration,
            warmup: Duration::from_secs(60).min(duration / 4),
            every: Duration::from_secs(10)
                .min(duration / 8)
                .max(Duration::from_millis(10)),
            sessions: 4,
        }
    }
}

/// `30m`, `90s`, `2h`, or plain seconds, as a duration.
///
/// # Errors
/// Anything else.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("not a duration: {s:?} (e.g. 30m, 90s, 2h)"))?;
    let secs = match unit {
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => return Err(format!("not a duration: {s:?} (e.g. 30m, 90s, 2h)")),
    };
    Ok(Duration::from_secs(secs))
}

/// What [`soak`] saw.
#[derive(Debug, Clone, Default)]
pub struct Soaked {
    /// (seconds since the start, resident bytes), one per sample.
    pub samples: Vec<(f64, u64)>,
    /// Acquire → release cycles completed.
    pub cycles: u64,
}

impl Soaked {
    /// The first sample at or after `warmup`, and the last.
    pub fn warm_and_end(&self, warmup: Duration) -> Option<(u64, u64)> {
        let w = warmup.as_secs_f64();
        let warm = self.samples.iter().find(|(t, _)| *t >= w)?.1;
        Some((warm, self.samples.last()?.1))
    }
}

/// Loop acquire → release on the lock at `dir` from every one of
/// `sessions` for `cfg.duration`, sampling the resident memory every
/// `cfg.every` (and once at the end).
///
/// # Errors
/// Server errors.
pub async fn soak(sessions: &[Session], dir: &str, cfg: &Soak) -> BenchResult<Soaked> {
    let stop = Arc::new(AtomicBool::new(false));
    let cycles = Arc::new(AtomicU64::new(0));
    let mut set = tokio::task::JoinSet::new();
    for s in sessions {
        let lock = Lock::new(s, dir)?;
        let (stop, cycles) = (stop.clone(), cycles.clone());
        set.spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                lock.acquire().await?.release().await?;
                cycles.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<(), BenchError>(())
        });
    }
    let start = Instant::now();
    let mut out = Soaked::default();
    let mut tick = tokio::time::interval(cfg.every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            // A loop that failed ends the soak.
            Some(r) = set.join_next() => {
                stop.store(true, Ordering::Relaxed);
                r??;
                return Err("a lock loop ended early".into());
            }
        }
        let t = start.elapsed();
        out.samples
            .push((t.as_secs_f64(), rss_bytes().unwrap_or(0)));
        if t >= cfg.duration {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    while let Some(r) = set.join_next().await {
        r??;
    }
    out.cycles = cycles.load(Ordering::Relaxed);
    Ok(out)
}

/// Run the soak against `url` and report it: the samples, the memory
/// after the warm-up and at the end, and the target (end within 10 %).
///
/// # Errors
/// A malformed URL or an unreachable server; a failed soak is recorded in
/// the report.
pub async fn run(url: &str, cfg: &Soak) -> BenchResult<crate::report::Report> {
    let target = crate::target::Target::new(url)?;
    let started = Instant::now();
    let mut rep = crate::report::Report {
        backend: target.backend().to_owned(),
        url: target.url(),
        config: vec![
            ("soak".into(), format!("{:?}", cfg.duration)),
            ("warmup".into(), format!("{:?}", cfg.warmup)),
            ("sample_every".into(), format!("{:?}", cfg.every)),
            ("sessions".into(), cfg.sessions.to_string()),
        ],
        ..Default::default()
    };
    let sessions = target.open_many(cfg.sessions.max(1)).await?;
    let dir = format!(
        "/coord-bench/{}/soak",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    match soak(&sessions, &dir, cfg).await {
        Ok(s) => {
            let case = format!("Lock loop, {} sessions, {:?}", cfg.sessions, cfg.duration);
            for (t, rss) in &s.samples {
                rep.push(
                    Row::new(format!("soak.rss.t{t:.0}"), "S", &case)
                        .metric(&format!("resident MiB at {t:.0} s"), Unit::Count)
                        .value(*rss as f64 / 1048576.0),
                );
            }
            rep.push(
                Row::new("soak.per_s", "S", &case)
                    .metric("acquire → release cycles", Unit::PerSec)
                    .value(s.cycles as f64 / started.elapsed().as_secs_f64()),
            );
            if let Some((warm, end)) = s.warm_and_end(cfg.warmup) {
                let mib = |b: u64| b as f64 / 1048576.0;
                rep.push(
                    Row::new("soak.end_mib", "S", &case)
                        .metric("resident MiB at the end", Unit::Count)
                        .value(mib(end))
                        .ratio_to(("after the warm-up", mib(warm))),
                );
                let r = end as f64 / warm.max(1) as f64;
                rep.targets.push(TargetCheck {
                    what: "soak: resident memory at the end within 10 % of after the warm-up"
                        .into(),
                    measured: r,
                    met: r <= 1.1,
                });
            }
        }
        Err(e) => rep.failures.push(("soak".into(), e.to_string())),
    }
    for s in sessions {
        let _ = s.close().await;
    }
    rep.elapsed = started.elapsed();
    Ok(rep)
}

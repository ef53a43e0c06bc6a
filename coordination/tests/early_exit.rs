//! A process that ends early while it holds a lock must not leave the lock
//! blocked: real child processes acquire a `Lock` and then return an error
//! from `main`, panic, or drop the guard and call `std::process::exit`,
//! without closing their session; the next acquirer (this process) must get
//! the lock within a second, every time, on ZooKeeper, etcd, Redis and
//! PostgreSQL.
//!
//! One binary plays both parts (`harness = false`): run with
//! `COORD_EARLY_EXIT_CHILD` set, it is the child; otherwise it is the test,
//! which needs `COORD_TEST_ZK`, `COORD_TEST_ETCD`, `COORD_TEST_REDIS` and
//! `COORD_TEST_PG` and fails (never skips) without them. Run it with
//! `cargo test -p coordination --features full --test early_exit`.

use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use coordination::Lock;

/// The child's part is chosen by this variable: `MODE FLAVOR URL PATH`.
const CHILD: &str = "COORD_EARLY_EXIT_CHILD";

/// Runs per backend, exit mode and runtime flavour
/// (`COORD_EARLY_EXIT_RUNS` to change it, for a measurement).
const RUNS: usize = 20;

/// The longest the next acquirer may wait.
const BOUND: Duration = Duration::from_secs(1);

/// How an early exit leaves `main` (return an error, panic, or drop the
/// guard and `std::process::exit`), under which runtime (`#[tokio::main]`'s
/// multi-thread one, or its current-thread flavour): every case the
/// `Session` docs promise.
const CASES: [(&str, &str); 5] = [
    ("return-err", "multi-thread"),
    ("panic", "multi-thread"),
    ("drop-exit", "multi-thread"),
    ("return-err", "current-thread"),
    ("panic", "current-thread"),
];

/// Measured on request only (`COORD_EARLY_EXIT_UNPROMISED=1`): a
/// current-thread runtime cannot send the dropped guard's delete before
/// `std::process::exit` (nothing runs the runtime again, and `exit` runs no
/// destructor), as the `Session` docs say.
const UNPROMISED: [(&str, &str); 1] = [("drop-exit", "current-thread")];

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() -> ExitCode {
    if let Ok(spec) = std::env::var(CHILD) {
        let parts: Vec<String> = spec.split(' ').map(str::to_owned).collect();
        let [mode, flavor, url, path] = parts.as_slice() else {
            eprintln!("bad {CHILD}: {spec}");
            return ExitCode::from(2);
        };
        let result = match flavor.as_str() {
            "current-thread" => child_current_thread(mode, url, path),
            _ => child_multi_thread(mode, url, path),
        };
        // As `fn main() -> Result` does: print the error, exit 1.
        return match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("Error: {e}");
                ExitCode::FAILURE
            }
        };
    }
    match parent() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("early_exit FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

#[tokio::main]
async fn child_multi_thread(mode: &str, url: &str, path: &str) -> Result {
    child(mode, url, path).await
}

#[tokio::main(flavor = "current_thread")]
async fn child_current_thread(mode: &str, url: &str, path: &str) -> Result {
    child(mode, url, path).await
}

/// What a newcomer's `main` does: connect, acquire, and leave early,
/// without `release` or `close`.
async fn child(mode: &str, url: &str, path: &str) -> Result {
    let session = coordination::connect(url).await?;
    let lock = Lock::new(&session, path)?;
    let guard = lock.acquire().await?;
    println!("acquired {path} with token {}", guard.fencing_token());
    match mode {
        "return-err" => Err("the job failed".into()),
        "panic" => panic!("the job panicked"),
        "drop-exit" => {
            drop(guard);
            std::process::exit(3);
        }
        other => Err(format!("unknown mode {other}").into()),
    }
}

/// The URL of a backend's test server in the facade's form.
fn url(var: &str, scheme: &str) -> Result<String> {
    let raw =
        std::env::var(var).map_err(|_| format!("{var} is not set: this test needs the server"))?;
    let hosts = raw
        .split("://")
        .last()
        .unwrap_or(&raw)
        .trim_end_matches('/')
        .to_owned();
    Ok(format!("{scheme}://{hosts}"))
}

/// COORD_TEST_PG as it is: `postgres://user:password@host:port/db`.
fn pg_url() -> Result<String> {
    Ok(std::env::var("COORD_TEST_PG")
        .map_err(|_| "COORD_TEST_PG is not set: this test needs the server")?)
}

fn parent() -> Result {
    let backends = [
        ("zk", url("COORD_TEST_ZK", "zk")?),
        ("etcd", url("COORD_TEST_ETCD", "etcd")?),
        ("redis", url("COORD_TEST_REDIS", "redis")?),
        // A whole postgres:// URL, with the role, its password and the
        // database.
        ("pg", pg_url()?),
    ];
    // Only some backends: `COORD_EARLY_EXIT_ONLY=zk,redis,pg`.
    let only: Vec<String> = std::env::var("COORD_EARLY_EXIT_ONLY")
        .map(|s| s.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    let picked = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    let patience: Duration = std::env::var("COORD_EARLY_EXIT_PATIENCE")
        .ok()
        .and_then(|s| s.parse().ok())
        .map(Duration::from_secs)
        .unwrap_or(BOUND * 3);
    let runs_each: usize = std::env::var("COORD_EARLY_EXIT_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(RUNS);
    let rt = tokio::runtime::Runtime::new()?;
    let mut failures = Vec::new();
    for (backend, url) in &backends {
        if !picked(backend) {
            continue;
        }
        let session = rt.block_on(coordination::connect(url))?;
        let unpromised = if std::env::var_os("COORD_EARLY_EXIT_UNPROMISED").is_some() {
            &UNPROMISED[..]
        } else {
            &[]
        };
        for &(mode, flavor) in CASES.iter().chain(unpromised) {
            let times = rt.block_on(runs(&session, url, mode, flavor, runs_each, patience))?;
            let mut sorted = times.clone();
            sorted.sort();
            let slow = times.iter().filter(|t| **t > BOUND).count();
            println!(
                "{backend:5} {mode:10} {flavor:14} next acquire min {:?} median {:?} max {:?}; over {BOUND:?}: {slow}/{runs_each}",
                sorted[0],
                sorted[sorted.len() / 2],
                sorted[sorted.len() - 1],
            );
            if slow > 0 && !UNPROMISED.contains(&(mode, flavor)) {
                failures.push(format!(
                    "{backend} {mode} {flavor}: {slow} of {runs_each} over {BOUND:?}"
                ));
            }
        }
        rt.block_on(session.close())?;
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; ").into())
    }
}

/// `count` children in a row, each on a fresh lock path; the time the next
/// acquire took after each child had exited.
async fn runs(
    session: &coordination::Session,
    url: &str,
    mode: &str,
    flavor: &str,
    count: usize,
    patience: Duration,
) -> Result<Vec<Duration>> {
    let mut times = Vec::with_capacity(count);
    for _ in 0..count {
        let path = format!("/coord-test/early-exit/{}/lock", uuid::Uuid::new_v4());
        let out = Command::new(std::env::current_exe()?)
            .env(CHILD, format!("{mode} {flavor} {url} {path}"))
            .env("RUST_BACKTRACE", "0")
            .output()?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !stdout.contains("acquired") || out.status.success() {
            return Err(format!(
                "child ({mode}, {flavor}) did not acquire then fail: {}\nstdout: {stdout}\nstderr: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )
            .into());
        }
        let lock = Lock::new(session, &path)?;
        let started = Instant::now();
        match tokio::time::timeout(patience, lock.acquire()).await {
            Ok(guard) => {
                times.push(started.elapsed());
                guard?.release().await?;
            }
            Err(_) => times.push(started.elapsed()),
        }
    }
    Ok(times)
}

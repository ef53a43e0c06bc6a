//! Curator's `InterProcessMutex` as a peer of the scale workload on
//! ZooKeeper: `scripts/peers/LockScale.java`, compiled by
//! `scripts/bench-scale` against Debian's Curator jars, run once per block
//! in its own JVM. It prints one JSON line, read here into the same
//! [`Handoffs`] coord's contenders give.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde::Deserialize;

use crate::error::BenchResult;
use crate::locks::Handoffs;
use crate::stats::percentiles;

/// How to run the Java peer.
#[derive(Debug, Clone)]
pub struct Curator {
    /// The `java` launcher.
    pub java: String,
    /// The class path: `LockScale.class`'s directory and Curator's jars.
    pub class_path: String,
}

/// `LockScale`'s JSON line.
#[derive(Debug, Deserialize)]
struct Line {
    per_s: f64,
    steady_per_s: f64,
    acquisitions: usize,
    tallied: usize,
    violations: usize,
}

impl Curator {
    /// `java` from the path, with `class_path`.
    pub fn new(class_path: impl Into<String>) -> Self {
        Curator {
            java: "java".into(),
            class_path: class_path.into(),
        }
    }

    /// One block: `k` CuratorFramework clients (each its own ZooKeeper
    /// session, connected before the clock starts) loop acquire → release
    /// on `InterProcessMutex(path)` until `total` hand-offs. The JVM ends
    /// itself after `limit`.
    ///
    /// # Errors
    /// The JVM cannot start, fails, or prints no result.
    ///
    /// # Cancel safety
    /// Cancelling leaves the JVM running until it ends itself (`limit`).
    pub async fn run(
        &self,
        hosts: &str,
        path: &str,
        k: usize,
        total: usize,
        limit: Duration,
    ) -> BenchResult<Handoffs> {
        let mut cmd = Command::new(&self.java);
        cmd.args(["-Xss256k", "-Xmx1g", "-XX:+UseSerialGC", "-cp"])
            .arg(&self.class_path)
            .arg("LockScale")
            .args([
                hosts.to_owned(),
                path.to_owned(),
                k.to_string(),
                total.to_string(),
                limit.as_secs().max(1).to_string(),
            ])
            .stdin(Stdio::null());
        let out = tokio::task::spawn_blocking(move || cmd.output()).await??;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout.lines().rev().find(|l| l.starts_with('{'));
        if !out.status.success() || line.is_none() {
            let err = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = err.lines().rev().take(5).collect();
            return Err(format!(
                "LockScale exited with {}: {}",
                out.status,
                tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
            )
            .into());
        }
        let l: Line = serde_json::from_str(line.unwrap_or_default())?;
        Ok(Handoffs {
            per_s: l.per_s,
            steady_per_s: l.steady_per_s,
            latency: percentiles(&mut []),
            wakeups_per_release: None,
            violations: l.violations,
            acquisitions: l.acquisitions,
            tallied: l.tallied,
        })
    }
}

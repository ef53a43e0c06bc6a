//! The demo's timeline printer and its record of the invariants checked.

use std::sync::{Arc, Mutex};

use tokio::time::Instant;

/// What the demo found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The invariants that broke, in the order checked; empty when all held.
    pub broken: Vec<String>,
    /// How many invariants were checked.
    pub checked: usize,
}

impl Report {
    /// Whether every invariant held.
    pub fn ok(&self) -> bool {
        self.broken.is_empty()
    }
}

/// A timeline printer and the record of invariants checked. Clones share
/// the clock and the record.
#[derive(Clone)]
pub struct Log {
    t0: Instant,
    report: Arc<Mutex<Report>>,
}

impl Log {
    /// A timeline starting now, with nothing checked yet.
    pub fn new() -> Self {
        Log {
            t0: Instant::now(),
            report: Arc::new(Mutex::new(Report::default())),
        }
    }

    /// Print `what` on the timeline, stamped with the time since the start.
    pub fn say(&self, what: impl AsRef<str>) {
        let t = self.t0.elapsed().as_secs_f64();
        println!("[{t:7.3}s] {}", what.as_ref());
    }

    /// Print and record the invariant `what`, which held if `ok`.
    pub fn check(&self, ok: bool, what: impl AsRef<str>) {
        if ok {
            println!("            ok: {}", what.as_ref());
        } else {
            println!("        BROKEN: {}", what.as_ref());
        }
        if let Ok(mut r) = self.report.lock() {
            r.checked += 1;
            if !ok {
                r.broken.push(what.as_ref().to_owned());
            }
        }
    }

    /// What has been checked so far.
    pub fn report(&self) -> Report {
        self.report.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

//! How much of each workload a run does: the full sizes and the smoke
//! run's.

use std::time::Duration;

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

    /// The settings as `name = value` pairs, for the report.
    pub(crate) fn describe(&self) -> Vec<(String, String)> {
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

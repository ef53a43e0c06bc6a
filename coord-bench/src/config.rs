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
    /// The growth run ([`crate::run_growth`]); not part of [`crate::run`].
    pub growth: Growth,
}

/// The sizes of the growth run (issue 35): group, queue, primitive cycle
/// and memory at scale.
#[derive(Debug, Clone)]
pub struct Growth {
    /// Group scale: the member counts compared (the ratio is the last's
    /// time ÷ the first's).
    pub group_sizes: Vec<usize>,
    /// Group scale: interleaved blocks.
    pub group_blocks: usize,
    /// Queue scale: the items of the big drain and of the small one it is
    /// compared with.
    pub queue_sizes: (usize, usize),
    /// Primitive cycle: cycles per block.
    pub cycle_ops: usize,
    /// Primitive cycle: interleaved blocks.
    pub cycle_blocks: usize,
    /// Memory: locks held, and nodes watched, by one session.
    pub holds: usize,
    /// Give up on one growth workload after this long.
    pub timeout: Duration,
    /// The parts to run: `cycle`, `memory`, `group`, `queue` (all when
    /// empty).
    pub parts: Vec<String>,
}

impl Growth {
    /// Issue 35's sizes: 100 and 1,000 members, 100,000 items beside
    /// 10,000, 10,000 holds and watches.
    pub fn full() -> Self {
        Growth {
            group_sizes: vec![100, 1000],
            group_blocks: 3,
            queue_sizes: (100_000, 10_000),
            cycle_ops: 300,
            cycle_blocks: 6,
            holds: 10_000,
            timeout: Duration::from_secs(900),
            parts: Vec::new(),
        }
    }

    /// Whether the part `name` runs.
    pub fn runs(&self, name: &str) -> bool {
        self.parts.is_empty() || self.parts.iter().any(|p| p == name)
    }

    /// The settings as `name = value` pairs, for the report.
    pub(crate) fn describe(&self) -> Vec<(String, String)> {
        let sizes: Vec<String> = self.group_sizes.iter().map(|n| n.to_string()).collect();
        vec![
            ("group_members".into(), sizes.join("/")),
            ("group_blocks".into(), self.group_blocks.to_string()),
            (
                "queue_items".into(),
                format!("{}/{}", self.queue_sizes.0, self.queue_sizes.1),
            ),
            (
                "cycle".into(),
                format!("{} x {} blocks", self.cycle_ops, self.cycle_blocks),
            ),
            ("holds".into(), self.holds.to_string()),
        ]
    }

    /// A few operations of each: the smoke test's.
    pub fn smoke() -> Self {
        Growth {
            group_sizes: vec![3, 9],
            group_blocks: 2,
            queue_sizes: (200, 50),
            cycle_ops: 20,
            cycle_blocks: 2,
            holds: 50,
            timeout: Duration::from_secs(60),
            parts: Vec::new(),
        }
    }
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
            growth: Growth::full(),
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
            growth: Growth::smoke(),
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

//! What the checker reports: the kinds of violation, the counts, the
//! throughput around each fault, and how it all prints.

use std::collections::BTreeMap;
use std::fmt;

use super::services_report::ServicesSummary;

/// The kinds of violation the checker reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ViolationKind {
    /// An acknowledged counter increment is missing (or the counter is
    /// beyond what the writes explain).
    LostUpdate,
    /// A write was accepted under a token older than one already accepted.
    StaleWrite,
    /// A grant while another process still believed it held the lock.
    Overlap,
    /// A fencing token was granted to two holds.
    TokenRepeated,
    /// A queue item offered (acknowledged) was never acknowledged by a
    /// consumer, or is still queued at the end.
    QueueLost,
    /// A queue item was acknowledged by two consumers.
    QueueDuplicate,
    /// A queue item consumed that no producer offered.
    QueuePhantom,
    /// Two processes led the election at once: a term began while another
    /// process's term was still believed, and that process was not paused.
    LeaderOverlap,
    /// Terms out of order: a token taken by two processes' terms, a term
    /// with a smaller token than a term that had ended before it began, or
    /// a term begun before the same process's last term was reported over.
    LeaderTerms,
    /// A fenced leader write accepted under a token older than one already
    /// accepted (or read back after a newer one's).
    LeaderStaleWrite,
    /// A member process alive at the end was not in the group (or with
    /// other data) once things settled.
    MemberMissing,
    /// A member in the group at the end that no live process holds.
    MemberStale,
    /// A cache's view differed from the server's tree once things settled
    /// (or the cache did not say what it held).
    CacheDiverged,
    /// The history lacks what the check needs (no final read).
    Incomplete,
}

impl ViolationKind {
    /// A short name, as printed.
    pub fn name(self) -> &'static str {
        match self {
            ViolationKind::LostUpdate => "lost-update",
            ViolationKind::StaleWrite => "stale-write",
            ViolationKind::Overlap => "overlap",
            ViolationKind::TokenRepeated => "token-repeated",
            ViolationKind::QueueLost => "queue-lost",
            ViolationKind::QueueDuplicate => "queue-duplicate",
            ViolationKind::QueuePhantom => "queue-phantom",
            ViolationKind::LeaderOverlap => "leader-overlap",
            ViolationKind::LeaderTerms => "leader-terms",
            ViolationKind::LeaderStaleWrite => "leader-stale-write",
            ViolationKind::MemberMissing => "member-missing",
            ViolationKind::MemberStale => "member-stale",
            ViolationKind::CacheDiverged => "cache-diverged",
            ViolationKind::Incomplete => "incomplete",
        }
    }

    /// Whether it is a rule of the long-lived services (the latch, the
    /// members, the caches), which the unfenced control does not touch.
    pub fn is_service(self) -> bool {
        matches!(
            self,
            ViolationKind::LeaderOverlap
                | ViolationKind::LeaderTerms
                | ViolationKind::LeaderStaleWrite
                | ViolationKind::MemberMissing
                | ViolationKind::MemberStale
                | ViolationKind::CacheDiverged
        )
    }
}

/// One violation, with what shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Which rule broke.
    pub kind: ViolationKind,
    /// The evidence, with times in seconds from the history's start.
    pub detail: String,
}

/// Counts over the whole history.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Events read.
    pub events: usize,
    /// Processes that logged.
    pub processes: usize,
    /// Seconds from the first event to the last.
    pub seconds: f64,
    /// Lock grants.
    pub grants: usize,
    /// Holds the holder was told it lost.
    pub told_lost: usize,
    /// Counter writes acknowledged.
    pub writes_ok: usize,
    /// Counter writes refused (certainly without effect).
    pub writes_failed: usize,
    /// Counter writes that may or may not have happened.
    pub writes_maybe: usize,
    /// The final counter value and its writer's token, if read.
    pub final_counter: Option<(u64, u64)>,
    /// Lost updates found (at least this many).
    pub lost_updates: u64,
    /// Queue offers acknowledged.
    pub offered: usize,
    /// Queue offers that may or may not have happened.
    pub offered_maybe: usize,
    /// Deliveries (takes).
    pub delivered: usize,
    /// Items delivered more than once (a lease lost before the ack).
    pub redelivered: usize,
    /// Consumer acks acknowledged.
    pub acked: usize,
    /// Items left in the queue at the end, if read.
    pub queue_left: Option<u64>,
    /// Faults injected.
    pub faults: usize,
}

/// Throughput around one fault.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultWindow {
    /// `kill`, `stop`, `partition`, `cut`, `member`.
    pub fault: String,
    /// Its target.
    pub target: String,
    /// Seconds from the history's start.
    pub start: f64,
    /// How long it lasted, in seconds.
    pub seconds: f64,
    /// Counter writes per second before, during, after.
    pub writes: [f64; 3],
    /// Queue acks per second before, during, after.
    pub acks: [f64; 3],
    /// The longest time without an acknowledged counter write that
    /// overlaps the fault, in seconds.
    pub longest_stall: f64,
}

/// What [`check`](super::check) found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Every violation (empty: the run is clean).
    pub violations: Vec<Violation>,
    /// Counts.
    pub summary: Summary,
    /// Throughput around each fault, in time order.
    pub faults: Vec<FaultWindow>,
    /// Counter writes per second and queue acks per second over the run.
    pub overall: (f64, f64),
    /// The long-lived services' counts.
    pub services: ServicesSummary,
}

impl Report {
    /// Whether a violation of `kind` was found.
    pub fn has(&self, kind: ViolationKind) -> bool {
        self.violations.iter().any(|v| v.kind == kind)
    }

    /// Violations per kind.
    pub fn counts(&self) -> BTreeMap<ViolationKind, usize> {
        let mut m = BTreeMap::new();
        for v in &self.violations {
            *m.entry(v.kind).or_insert(0) += 1;
        }
        m
    }
}

/// Seconds before and after a fault that count as "before" and "after".
pub const WINDOW_SECONDS: f64 = 5.0;

impl fmt::Display for Report {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.summary;
        writeln!(
            out,
            "history: {} events from {} processes over {:.1} s",
            s.events, s.processes, s.seconds
        )?;
        let fin = match s.final_counter {
            Some((v, t)) => format!("final counter {v} (written under token {t})"),
            None => "no final read".into(),
        };
        writeln!(
            out,
            "counter: {} writes acknowledged, {} indeterminate, {} refused; {fin}; \
             lost updates: {}",
            s.writes_ok, s.writes_maybe, s.writes_failed, s.lost_updates
        )?;
        writeln!(
            out,
            "lock: {} grants; {} holds told they were lost",
            s.grants, s.told_lost
        )?;
        let left = s
            .queue_left
            .map_or_else(|| "not read".into(), |n| n.to_string());
        writeln!(
            out,
            "queue: {} offers acknowledged ({} indeterminate), {} deliveries ({} items \
             redelivered), {} acks; left at the end: {left}",
            s.offered, s.offered_maybe, s.delivered, s.redelivered, s.acked
        )?;
        writeln!(
            out,
            "throughput over the run: {:.1} counter writes/s, {:.1} queue acks/s",
            self.overall.0, self.overall.1
        )?;
        write!(out, "{}", self.services)?;
        if !self.faults.is_empty() {
            writeln!(
                out,
                "faults ({}; writes/s and acks/s {WINDOW_SECONDS:.0} s before | during | \
                 {WINDOW_SECONDS:.0} s after; longest stall without a counter write):",
                s.faults
            )?;
            for f in &self.faults {
                writeln!(
                    out,
                    "  +{:6.1} s {:9} {:10} {:5.1} s   writes {:5.1} | {:5.1} | {:5.1}   \
                     acks {:5.1} | {:5.1} | {:5.1}   stall {:.2} s",
                    f.start,
                    f.fault,
                    f.target,
                    f.seconds,
                    f.writes[0],
                    f.writes[1],
                    f.writes[2],
                    f.acks[0],
                    f.acks[1],
                    f.acks[2],
                    f.longest_stall
                )?;
            }
        }
        if self.violations.is_empty() {
            writeln!(out, "violations: 0")?;
        } else {
            let counts: Vec<String> = self
                .counts()
                .iter()
                .map(|(k, n)| format!("{} {n}", k.name()))
                .collect();
            writeln!(
                out,
                "violations: {} ({})",
                self.violations.len(),
                counts.join(", ")
            )?;
            for v in &self.violations {
                writeln!(out, "  [{}] {}", v.kind.name(), v.detail)?;
            }
        }
        Ok(())
    }
}

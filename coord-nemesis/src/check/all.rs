//! [`check`]: every rule over one merged history.

use std::collections::HashSet;

use super::calls::{fault_intervals, Clock};
use super::counter::counter;
use super::finale::finale;
use super::holds::holds;
use super::leader::leader;
use super::queue::queue;
use super::report::{Report, Violation, ViolationKind};
use super::throughput::throughput;
use crate::history::Event;

/// Check a merged history (sorted by time, as [`crate::history::read_dir`]
/// returns it).
pub fn check(events: &[Event]) -> Report {
    let mut r = Report::default();
    let Some(first) = events.first() else {
        r.violations.push(Violation {
            kind: ViolationKind::Incomplete,
            detail: "the history is empty".into(),
        });
        return r;
    };
    let clock = Clock(first.t);
    let last_t = events.iter().map(|e| e.t).max().unwrap_or(first.t);
    let procs: HashSet<&str> = events.iter().map(|e| e.p.as_str()).collect();
    r.summary.events = events.len();
    r.summary.processes = procs.len();
    r.summary.seconds = clock.s(last_t);

    let faults = fault_intervals(events);
    r.summary.faults = faults.len();

    counter(events, &clock, &mut r);
    holds(events, &clock, &faults, &mut r);
    queue(events, &mut r);
    throughput(events, &clock, &faults, &mut r);
    leader(events, &clock, &faults, &mut r);
    finale(events, &mut r);
    r
}

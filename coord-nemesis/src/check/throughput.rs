//! Throughput around each fault: information, not a verdict.

use super::calls::{Clock, Fault};
use super::report::{FaultWindow, Report, WINDOW_SECONDS};
use crate::history::{Event, Kind};

pub(super) fn throughput(events: &[Event], clock: &Clock, faults: &[Fault], r: &mut Report) {
    let times = |f: &str| -> Vec<u64> {
        let mut v: Vec<u64> = events
            .iter()
            .filter(|e| e.kind == Kind::Ok && e.f == f)
            .map(|e| e.t)
            .collect();
        v.sort_unstable();
        v
    };
    let writes = times("write");
    let acks = times("ack");
    let count = |v: &[u64], a: u64, b: u64| {
        v.partition_point(|t| *t < b)
            .saturating_sub(v.partition_point(|t| *t < a))
    };
    let first = clock.0;
    let last = events.iter().map(|e| e.t).max().unwrap_or(first);
    let rate = |v: &[u64], a: u64, b: u64| {
        let (a, b) = (a.max(first), b.min(last));
        if b <= a {
            return 0.0;
        }
        count(v, a, b) as f64 / ((b - a) as f64 / 1e9)
    };
    let w = (WINDOW_SECONDS * 1e9) as u64;
    for f in faults {
        let end = f.end.min(last);
        let windows = [
            (f.start.saturating_sub(w), f.start),
            (f.start, end),
            (end, end.saturating_add(w)),
        ];
        // The longest gap between acknowledged writes (or the fault's
        // edges) that overlaps the fault.
        let lo = writes.partition_point(|t| *t < f.start);
        let prev = if lo > 0 { writes[lo - 1] } else { first };
        let mut stall = 0u64;
        let mut at = prev;
        for &t in writes[lo..].iter() {
            stall = stall.max(t - at);
            at = t;
            if t > end {
                break;
            }
        }
        if at <= end {
            stall = stall.max(last - at);
        }
        r.faults.push(FaultWindow {
            fault: f.f.clone(),
            target: f.target.clone(),
            start: clock.s(f.start),
            seconds: (end.saturating_sub(f.start)) as f64 / 1e9,
            writes: windows.map(|(a, b)| rate(&writes, a, b)),
            acks: windows.map(|(a, b)| rate(&acks, a, b)),
            longest_stall: stall as f64 / 1e9,
        });
    }
    let span = |v: &[u64]| match (v.first(), v.last()) {
        (Some(a), Some(b)) if b > a => v.len() as f64 / ((b - a) as f64 / 1e9),
        _ => 0.0,
    };
    r.overall = (span(&writes), span(&acks));
}

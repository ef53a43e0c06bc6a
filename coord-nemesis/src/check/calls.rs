//! The pieces every rule reads the history through: calls paired from
//! their invoke to their answer, the faults as intervals, the clock that
//! prints times from the history's start, and a sweep over acknowledged
//! writes.

use std::collections::HashMap;

use crate::history::{Event, Kind};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    Ok,
    Fail,
    /// Info, or no answer before the history ended.
    Maybe,
}

fn outcome(kind: Kind) -> Option<Outcome> {
    match kind {
        Kind::Ok => Some(Outcome::Ok),
        Kind::Fail => Some(Outcome::Fail),
        Kind::Info => Some(Outcome::Maybe),
        _ => None,
    }
}

/// A call from its invoke to its answer.
#[derive(Debug, Clone)]
pub(super) struct Call {
    pub(super) p: String,
    pub(super) invoke: u64,
    pub(super) done: Option<u64>,
    pub(super) outcome: Outcome,
    /// The invoke's event (the write's token and value; the item offered).
    pub(super) inv: Event,
    /// The answer's event (the value read).
    pub(super) ans: Option<Event>,
}

/// Pair each process's invokes with their answers, per operation.
pub(super) fn pair(events: &[Event], f: &str) -> Vec<Call> {
    let mut open: HashMap<&str, usize> = HashMap::new();
    let mut calls: Vec<Call> = Vec::new();
    for e in events.iter().filter(|e| e.f == f) {
        match e.kind {
            Kind::Invoke => {
                calls.push(Call {
                    p: e.p.clone(),
                    invoke: e.t,
                    done: None,
                    outcome: Outcome::Maybe,
                    inv: e.clone(),
                    ans: None,
                });
                open.insert(&e.p, calls.len() - 1);
            }
            k => {
                let Some(o) = outcome(k) else { continue };
                match open.remove(e.p.as_str()) {
                    Some(i) => {
                        calls[i].done = Some(e.t);
                        calls[i].outcome = o;
                        calls[i].ans = Some(e.clone());
                    }
                    // An answer without its invoke (a hand-written
                    // history): take the answer for both.
                    None => calls.push(Call {
                        p: e.p.clone(),
                        invoke: e.t,
                        done: Some(e.t),
                        outcome: o,
                        inv: e.clone(),
                        ans: Some(e.clone()),
                    }),
                }
            }
        }
    }
    calls
}

pub(super) struct Clock(pub(super) u64);

impl Clock {
    pub(super) fn s(&self, t: u64) -> f64 {
        t.saturating_sub(self.0) as f64 / 1e9
    }
}

/// One fault: kind, target, start, end (`u64::MAX` when it never ended).
pub(super) struct Fault {
    pub(super) f: String,
    pub(super) target: String,
    pub(super) start: u64,
    pub(super) end: u64,
}

pub(super) fn fault_intervals(events: &[Event]) -> Vec<Fault> {
    let mut open: HashMap<(String, String), usize> = HashMap::new();
    let mut out: Vec<Fault> = Vec::new();
    for e in events {
        let target = e.target.clone().unwrap_or_default();
        match e.kind {
            Kind::Start => {
                out.push(Fault {
                    f: e.f.clone(),
                    target: target.clone(),
                    start: e.t,
                    end: u64::MAX,
                });
                open.insert((e.f.clone(), target), out.len() - 1);
            }
            Kind::End => {
                if let Some(i) = open.remove(&(e.f.clone(), target)) {
                    out[i].end = e.t;
                }
            }
            _ => {}
        }
    }
    out
}

/// Acknowledged writes in answer order, consumed up to a moment: the
/// largest value and the largest token acknowledged before it.
pub(super) struct Sweep<'a> {
    pub(super) acked: &'a [&'a Call],
    pub(super) i: usize,
    pub(super) max_value: Option<&'a Call>,
    pub(super) max_token: Option<&'a Call>,
}

impl<'a> Sweep<'a> {
    pub(super) fn new(acked: &'a [&'a Call]) -> Self {
        Sweep {
            acked,
            i: 0,
            max_value: None,
            max_token: None,
        }
    }

    /// Take in every write acknowledged strictly before `t`.
    pub(super) fn advance(&mut self, t: u64) {
        let v = |c: &Call| c.inv.value.unwrap_or(0);
        let k = |c: &Call| c.inv.token.unwrap_or(0);
        while let Some(w) = self.acked.get(self.i).copied() {
            if w.done.unwrap_or(w.invoke) >= t {
                break;
            }
            if self.max_value.is_none_or(|m| v(m) < v(w)) {
                self.max_value = Some(w);
            }
            if self.max_token.is_none_or(|m| k(m) < k(w)) {
                self.max_token = Some(w);
            }
            self.i += 1;
        }
    }
}

//! The history checker: what the merged history of a nemesis run says
//! about lost updates, stale fenced writes, overlapping holds and the
//! queue, and the throughput around each fault.
//!
//! # What is checked, precisely
//!
//! Times are the processes' CLOCK_MONOTONIC readings. An `invoke` is logged
//! before a call is made and its `ok` after the answer came, so an
//! operation took effect somewhere inside `[invoke, ok]`.
//!
//! The counter node holds `"<value> <token>"`: the value and the fencing
//! token of the hold it was written under. Every worker writes
//! `value read + 1`.
//!
//! - **Lost update** — an acknowledged increment missing from the end
//!   state: (a) two acknowledged writes wrote the same value (both read
//!   the same value: one overwrote the other); (b) a read invoked after a
//!   write of `v` was acknowledged returned less than `v` (the counter went
//!   back); (c) the final counter is below the number of acknowledged
//!   writes. Also reported: a final counter above what the acknowledged and
//!   indeterminate writes can explain.
//! - **Stale fenced write** — a write accepted under a token lower than one
//!   already accepted: (a) a write acknowledged after being invoked when a
//!   write with a larger token had already been acknowledged; (b) a read
//!   (workers' reads and the final read) that returned a value written
//!   under token `t` although a write under a larger token had been
//!   acknowledged before the read was invoked: the smaller token's write
//!   landed after the larger one's (or the read was stale; either breaks
//!   the lock's promise). (b) is what catches a holder paused after it
//!   logged its `invoke`.
//! - **Overlapping holds** — a process *believes* it holds the lock from
//!   its `ok acquire` until the first of: it invokes `release`; it is told
//!   the hold is gone (`event lost`: `lost()` resolved, or an operation
//!   failed with lock-lost or session-end); it starts a new session or a
//!   new acquire; it exits; the nemesis killed it (`start kill`, logged
//!   once the process is reaped); its history ends. An overlap is a grant
//!   (`ok acquire`) to another process inside that interval — except when
//!   the holder was paused (SIGSTOP) at any moment between its grant and
//!   the other grant: a paused process cannot be told anything, which is
//!   exactly the case the fencing token and the guarded write exist for
//!   (and the stale-write check covers). A fencing token granted twice is
//!   reported too.
//! - **Queue** — an item whose offer was acknowledged is *lost* when no
//!   consumer's ack of it succeeded nor may have succeeded (an ack cut
//!   short by a kill or a lost answer counts as maybe) by the end, and
//!   *acknowledged twice* when two acks of it succeeded. Items left in the
//!   queue at the end, and items consumed that were never offered, are
//!   reported too.
//!
//! Throughput (counter writes and queue acks per second) is reported for
//! the window before, during and after each fault; it is information, not
//! a verdict.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

use crate::history::{Event, Kind};

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
            ViolationKind::Incomplete => "incomplete",
        }
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

/// What [`check`] found.
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

/// How many examples of one kind of violation are spelled out.
const EXAMPLES: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
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
struct Call {
    p: String,
    invoke: u64,
    done: Option<u64>,
    outcome: Outcome,
    /// The invoke's event (the write's token and value; the item offered).
    inv: Event,
    /// The answer's event (the value read).
    ans: Option<Event>,
}

/// Pair each process's invokes with their answers, per operation.
fn pair(events: &[Event], f: &str) -> Vec<Call> {
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

struct Clock(u64);

impl Clock {
    fn s(&self, t: u64) -> f64 {
        t.saturating_sub(self.0) as f64 / 1e9
    }
}

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
    r
}

/// One fault: kind, target, start, end (`u64::MAX` when it never ended).
struct Fault {
    f: String,
    target: String,
    start: u64,
    end: u64,
}

fn fault_intervals(events: &[Event]) -> Vec<Fault> {
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

fn push(r: &mut Report, kind: ViolationKind, detail: String) {
    r.violations.push(Violation { kind, detail });
}

/// Report up to [`EXAMPLES`] findings of one kind, then how many more.
fn push_examples(r: &mut Report, kind: ViolationKind, found: Vec<String>) {
    let n = found.len();
    for d in found.into_iter().take(EXAMPLES) {
        push(r, kind, d);
    }
    if n > EXAMPLES {
        push(r, kind, format!("… and {} more like these", n - EXAMPLES));
    }
}

fn counter(events: &[Event], clock: &Clock, r: &mut Report) {
    let writes = pair(events, "write");
    let mut reads = pair(events, "read");
    reads.retain(|c| c.outcome == Outcome::Ok);
    let finals: Vec<Call> = pair(events, "final")
        .into_iter()
        .filter(|c| c.outcome == Outcome::Ok)
        .collect();

    let ok: Vec<&Call> = writes.iter().filter(|w| w.outcome == Outcome::Ok).collect();
    r.summary.writes_ok = ok.len();
    r.summary.writes_failed = writes.iter().filter(|w| w.outcome == Outcome::Fail).count();
    r.summary.writes_maybe = writes
        .iter()
        .filter(|w| w.outcome == Outcome::Maybe)
        .count();
    let value_of = |c: &Call| c.inv.value.unwrap_or(0);
    let token_of = |c: &Call| c.inv.token.unwrap_or(0);
    let w_desc = |c: &Call| {
        format!(
            "{} wrote {} under token {} (invoked +{:.3} s, acknowledged +{:.3} s)",
            c.p,
            value_of(c),
            token_of(c),
            clock.s(c.invoke),
            clock.s(c.done.unwrap_or(c.invoke))
        )
    };

    // (a) one value acknowledged to several writers.
    let mut by_value: BTreeMap<u64, Vec<&Call>> = BTreeMap::new();
    for w in &ok {
        by_value.entry(value_of(w)).or_default().push(w);
    }
    let mut dup_lost = 0u64;
    let mut dups = Vec::new();
    for (v, ws) in &by_value {
        if ws.len() > 1 {
            dup_lost += ws.len() as u64 - 1;
            let who: Vec<String> = ws.iter().map(|w| w_desc(w)).collect();
            dups.push(format!(
                "value {v} acknowledged to {} writers (each read {}): {}",
                ws.len(),
                v.saturating_sub(1),
                who.join("; ")
            ));
        }
    }
    push_examples(r, ViolationKind::LostUpdate, dups);

    // Reads (the workers' and the final one) in invoke order, and
    // acknowledged writes in answer order, swept together: (b) of lost
    // updates and both stale-write rules.
    let mut observations: Vec<(u64, &Call, bool)> = reads
        .iter()
        .map(|c| (c.invoke, c, false))
        .chain(finals.iter().map(|c| (c.invoke, c, true)))
        .collect();
    observations.sort_by_key(|o| o.0);
    let mut acked: Vec<&Call> = ok.clone();
    acked.sort_by_key(|c| c.done.unwrap_or(c.invoke));
    let mut writes_by_invoke: Vec<&Call> = ok.clone();
    writes_by_invoke.sort_by_key(|c| c.invoke);

    let mut sweep = Sweep::new(&acked);
    let mut went_back = Vec::new();
    let mut stale_seen = Vec::new();
    let mut backwards_writes: HashSet<(String, u64)> = HashSet::new();
    for (t, rd, is_final) in &observations {
        sweep.advance(*t);
        let ans = rd.ans.as_ref();
        let seen_v = ans.and_then(|a| a.value).unwrap_or(0);
        let seen_t = ans.and_then(|a| a.rtoken).unwrap_or(0);
        let what = if *is_final {
            "the final read"
        } else {
            "a read"
        };
        if let Some(m) = sweep.max_value {
            if value_of(m) > seen_v && backwards_writes.insert((m.p.clone(), token_of(m))) {
                went_back.push(format!(
                    "{what} by {} invoked +{:.3} s returned {seen_v} (token {seen_t}), \
                     but {} before it",
                    rd.p,
                    clock.s(*t),
                    w_desc(m)
                ));
            }
        }
        if let Some(m) = sweep.max_token {
            if token_of(m) > seen_t {
                stale_seen.push(format!(
                    "{what} by {} invoked +{:.3} s returned {seen_v} written under token \
                     {seen_t}, but {} before it: the older token's write was accepted after \
                     the newer one's (or the read was stale)",
                    rd.p,
                    clock.s(*t),
                    w_desc(m)
                ));
            }
        }
    }
    push_examples(r, ViolationKind::LostUpdate, went_back);

    // Stale (a): a write acknowledged although, when it was invoked, a
    // write under a larger token had been acknowledged already.
    let mut sweep = Sweep::new(&acked);
    let mut stale_direct = Vec::new();
    for w in &writes_by_invoke {
        sweep.advance(w.invoke);
        if let Some(m) = sweep.max_token {
            if token_of(m) > token_of(w) {
                stale_direct.push(format!(
                    "{}, although {} before it was invoked",
                    w_desc(w),
                    w_desc(m)
                ));
            }
        }
    }
    push_examples(r, ViolationKind::StaleWrite, stale_direct);
    push_examples(r, ViolationKind::StaleWrite, stale_seen);

    // (c) and the upper bound, against the final read.
    let mut lost = dup_lost;
    match finals.last() {
        None => push(
            r,
            ViolationKind::Incomplete,
            "no final read of the counter: lost updates cannot be counted".into(),
        ),
        Some(f) => {
            let ans = f.ans.as_ref();
            let fv = ans.and_then(|a| a.value).unwrap_or(0);
            let ft = ans.and_then(|a| a.rtoken).unwrap_or(0);
            r.summary.final_counter = Some((fv, ft));
            let n_ok = ok.len() as u64;
            if fv < n_ok {
                lost = lost.max(n_ok - fv);
                push(
                    r,
                    ViolationKind::LostUpdate,
                    format!(
                        "{n_ok} increments were acknowledged but the final counter is {fv}: \
                         at least {} lost",
                        n_ok - fv
                    ),
                );
            }
            let most = n_ok + r.summary.writes_maybe as u64;
            if fv > most {
                push(
                    r,
                    ViolationKind::LostUpdate,
                    format!(
                        "the final counter {fv} exceeds the {n_ok} acknowledged and {} \
                         indeterminate writes: a write nobody made",
                        r.summary.writes_maybe
                    ),
                );
            }
        }
    }
    r.summary.lost_updates = lost;
}

/// Acknowledged writes in answer order, consumed up to a moment: the
/// largest value and the largest token acknowledged before it.
struct Sweep<'a> {
    acked: &'a [&'a Call],
    i: usize,
    max_value: Option<&'a Call>,
    max_token: Option<&'a Call>,
}

impl<'a> Sweep<'a> {
    fn new(acked: &'a [&'a Call]) -> Self {
        Sweep {
            acked,
            i: 0,
            max_value: None,
            max_token: None,
        }
    }

    /// Take in every write acknowledged strictly before `t`.
    fn advance(&mut self, t: u64) {
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

/// A hold as its holder believed it: granted at `g`, believed until `e`.
#[derive(Debug)]
struct Hold {
    p: String,
    token: u64,
    g: u64,
    e: u64,
    why: &'static str,
}

fn holds(events: &[Event], clock: &Clock, faults: &[Fault], r: &mut Report) {
    let mut open: HashMap<&str, Hold> = HashMap::new();
    let mut done: Vec<Hold> = Vec::new();
    let mut last: HashMap<&str, u64> = HashMap::new();
    let end = |open: &mut HashMap<&str, Hold>, done: &mut Vec<Hold>, p: &str, t, why| {
        if let Some(mut h) = open.remove(p) {
            h.e = t;
            h.why = why;
            done.push(h);
        }
    };
    for e in events {
        last.insert(&e.p, e.t);
        match (e.kind, e.f.as_str()) {
            (Kind::Ok, "acquire") => {
                r.summary.grants += 1;
                end(&mut open, &mut done, &e.p, e.t, "a new grant");
                open.insert(
                    &e.p,
                    Hold {
                        p: e.p.clone(),
                        token: e.token.unwrap_or(0),
                        g: e.t,
                        e: u64::MAX,
                        why: "",
                    },
                );
            }
            (Kind::Invoke, "release") => end(&mut open, &mut done, &e.p, e.t, "release"),
            (Kind::Event, "lost") => {
                if open.contains_key(e.p.as_str()) {
                    r.summary.told_lost += 1;
                }
                end(&mut open, &mut done, &e.p, e.t, "told lost")
            }
            (Kind::Invoke, "acquire") => end(&mut open, &mut done, &e.p, e.t, "a new acquire"),
            (Kind::Ok, "session") => end(&mut open, &mut done, &e.p, e.t, "a new session"),
            (Kind::Event, "exit") => end(&mut open, &mut done, &e.p, e.t, "exit"),
            // A kill by the nemesis, or at the end of the run (logged once
            // the process is reaped).
            (Kind::Start | Kind::Event, "kill") => {
                if let Some(target) = &e.target {
                    if let Some((&p, _)) = open.get_key_value(target.as_str()) {
                        end(&mut open, &mut done, p, e.t, "killed");
                    }
                }
            }
            _ => {}
        }
    }
    for (p, mut h) in open {
        h.e = last.get(p).copied().unwrap_or(h.g);
        h.why = "its history ended";
        done.push(h);
    }
    done.sort_by_key(|h| h.g);

    let paused = |p: &str, a: u64, b: u64| {
        faults
            .iter()
            .any(|f| f.f == "stop" && f.target == p && f.start <= b && f.end >= a)
    };

    // Tokens granted twice.
    let mut by_token: HashMap<u64, Vec<&Hold>> = HashMap::new();
    for h in &done {
        by_token.entry(h.token).or_default().push(h);
    }
    let mut repeated: Vec<String> = by_token
        .iter()
        .filter(|(_, hs)| hs.len() > 1)
        .map(|(t, hs)| {
            let who: Vec<String> = hs
                .iter()
                .map(|h| format!("{} at +{:.3} s", h.p, clock.s(h.g)))
                .collect();
            format!("token {t} granted {} times: {}", hs.len(), who.join(", "))
        })
        .collect();
    repeated.sort();
    push_examples(r, ViolationKind::TokenRepeated, repeated);

    // Overlaps: for each grant, the holds of other processes still
    // believed at that moment (sorted by grant, so a sweep over an active
    // list suffices).
    let mut found = Vec::new();
    let mut active: Vec<&Hold> = Vec::new();
    for h2 in &done {
        active.retain(|h1| h1.e > h2.g);
        for h1 in &active {
            if h1.p != h2.p && h1.g < h2.g && !paused(&h1.p, h1.g, h2.g) {
                found.push(format!(
                    "{} was granted token {} at +{:.3} s while {} still held token {} \
                     (granted +{:.3} s, believed until +{:.3} s: {}); no pause of {} in between",
                    h2.p,
                    h2.token,
                    clock.s(h2.g),
                    h1.p,
                    h1.token,
                    clock.s(h1.g),
                    clock.s(h1.e),
                    h1.why,
                    h1.p
                ));
            }
        }
        active.push(h2);
    }
    push_examples(r, ViolationKind::Overlap, found);
}

fn queue(events: &[Event], r: &mut Report) {
    let offers = pair(events, "offer");
    let acks = pair(events, "ack");
    let item = |c: &Call| c.inv.item.clone().unwrap_or_default();

    let mut offered: BTreeMap<String, Outcome> = BTreeMap::new();
    for o in &offers {
        offered.insert(item(o), o.outcome);
    }
    r.summary.offered = offered.values().filter(|o| **o == Outcome::Ok).count();
    r.summary.offered_maybe = offered.values().filter(|o| **o == Outcome::Maybe).count();

    let mut taken: HashMap<String, usize> = HashMap::new();
    let mut phantoms = Vec::new();
    for e in events
        .iter()
        .filter(|e| e.kind == Kind::Ok && e.f == "take")
    {
        let it = e.item.clone().unwrap_or_default();
        r.summary.delivered += 1;
        let n = taken.entry(it.clone()).or_insert(0);
        *n += 1;
        if *n == 1 && !offered.contains_key(&it) {
            phantoms.push(format!(
                "{} consumed {it:?}, which no producer offered",
                e.p
            ));
        }
    }
    r.summary.redelivered = taken.values().filter(|n| **n > 1).count();
    push_examples(r, ViolationKind::QueuePhantom, phantoms);

    let mut acked: BTreeMap<String, Vec<&Call>> = BTreeMap::new();
    for a in &acks {
        acked.entry(item(a)).or_default().push(a);
    }
    r.summary.acked = acks.iter().filter(|a| a.outcome == Outcome::Ok).count();

    let mut dups = Vec::new();
    for (it, calls) in &acked {
        let oks: Vec<&&Call> = calls.iter().filter(|c| c.outcome == Outcome::Ok).collect();
        if oks.len() > 1 {
            let who: Vec<&str> = oks.iter().map(|c| c.p.as_str()).collect();
            dups.push(format!(
                "item {it:?} acknowledged {} times, by {}",
                oks.len(),
                who.join(", ")
            ));
        }
    }
    push_examples(r, ViolationKind::QueueDuplicate, dups);

    let mut lost = Vec::new();
    for (it, o) in &offered {
        if *o != Outcome::Ok {
            continue;
        }
        let settled = acked
            .get(it)
            .is_some_and(|cs| cs.iter().any(|c| c.outcome != Outcome::Fail));
        if !settled {
            let times = taken.get(it).copied().unwrap_or(0);
            lost.push(format!(
                "item {it:?} was offered (acknowledged) but never acknowledged by a consumer \
                 (delivered {times} times)"
            ));
        }
    }
    push_examples(r, ViolationKind::QueueLost, lost);

    if let Some(e) = events
        .iter()
        .rev()
        .find(|e| e.kind == Kind::Ok && e.f == "queue-final")
    {
        r.summary.queue_left = e.n;
        if let Some(n) = e.n.filter(|n| *n > 0) {
            push(
                r,
                ViolationKind::QueueLost,
                format!("{n} items were still in the queue at the end (not drained)"),
            );
        }
    }
}

fn throughput(events: &[Event], clock: &Clock, faults: &[Fault], r: &mut Report) {
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

//! The election rules: at most one leader at any instant, by terms (what
//! the latch processes believed), by tokens (the order terms took), and by
//! fenced writes (what the server accepted). See the module docs of
//! [`check`](super) for why the last is the one that holds under SIGSTOP.

use std::collections::HashSet;

use super::beliefs::{overlaps, paused, repeated_tokens, Belief, Beliefs, Words};
use super::calls::{pair, Call, Clock, Fault, Outcome, Sweep};
use super::findings::{push, push_examples};
use super::report::{Report, ViolationKind};
use crate::history::{Event, Kind};

const TERM: Words = Words {
    begins: "began leading with",
    holds: "still led with",
    began: "began",
};

/// Every rule of the election.
pub(super) fn leader(events: &[Event], clock: &Clock, faults: &[Fault], r: &mut Report) {
    let terms = terms(events, clock, r);
    let s = &mut r.services;
    s.terms = terms.len();
    s.leaders = terms
        .iter()
        .map(|t| t.p.as_str())
        .collect::<HashSet<_>>()
        .len();
    s.terms_paused = terms
        .iter()
        .filter(|t| paused(faults, &t.p, t.g, t.e))
        .count();
    s.terms_killed = terms.iter().filter(|t| t.why == "killed").count();

    let repeated = repeated_tokens(&terms, clock, &TERM, true);
    push_examples(r, ViolationKind::LeaderTerms, repeated);
    let disorder = token_order(&terms, clock, faults);
    push_examples(r, ViolationKind::LeaderTerms, disorder);
    let found = overlaps(&terms, clock, faults, &TERM);
    push_examples(r, ViolationKind::LeaderOverlap, found);
    fenced_writes(events, clock, r);
}

/// A term is believed from its `event lead` until the first of: its
/// `event lead-end`; its process's exit or kill; the end of its history.
/// A `lead` with another token while a term is open breaks the latch's
/// promise (every term's end is reported before the next begins).
fn terms(events: &[Event], clock: &Clock, r: &mut Report) -> Vec<Belief> {
    let mut b = Beliefs::default();
    let mut unended = Vec::new();
    for e in events {
        b.saw(e);
        match (e.kind, e.f.as_str()) {
            (Kind::Event, "lead") => {
                let token = e.token.unwrap_or(0);
                match b.open(&e.p).map(|t| t.token) {
                    Some(t) if t == token => continue,
                    Some(t) => unended.push(format!(
                        "{} began a term with token {token} at +{:.3} s before its term with \
                         token {t} was reported over",
                        e.p,
                        clock.s(e.t)
                    )),
                    None => {}
                }
                b.begin(&e.p, token, e.t, "a new term");
            }
            (Kind::Event, "lead-end") => {
                b.end(&e.p, e.t, "reported over");
            }
            _ => {}
        }
    }
    push_examples(r, ViolationKind::LeaderTerms, unended);
    b.finish()
}

/// Tokens must grow with the terms: a term that began after another had
/// ended has the larger token — always within a process; across two
/// processes unless the later one's was paused at some moment between
/// the two beginnings (its term may have begun, unlogged, before the
/// other's, and the pause have delayed its `lead` line).
fn token_order(terms: &[Belief], clock: &Clock, faults: &[Fault]) -> Vec<String> {
    let mut found = Vec::new();
    for a in terms {
        for b in terms.iter().filter(|b| b.g > a.e && b.token <= a.token) {
            if b.p != a.p && paused(faults, &b.p, a.g, b.g) {
                continue;
            }
            found.push(format!(
                "{} began a term with token {} at +{:.3} s, after {}'s term with the larger \
                 token {} (+{:.3} s to +{:.3} s) had ended",
                b.p,
                b.token,
                clock.s(b.g),
                a.p,
                a.token,
                clock.s(a.g),
                clock.s(a.e)
            ));
        }
    }
    found
}

/// The fenced writes of the leader key (`lwrite`: `"<token> <seq>"`, put
/// only while the writer's fence holds) and its reads (`lread` by
/// leaders, `lfinal` by the nemesis at the end; `rtoken` is the token
/// read). A write accepted at the server under token `t` after one under
/// `u > t` is a second leader's write: (a) a write acknowledged although
/// it was invoked after a larger token's write was acknowledged; (b) a
/// read invoked after a larger token's write was acknowledged that returns
/// a smaller token (the smaller token's write landed after it).
fn fenced_writes(events: &[Event], clock: &Clock, r: &mut Report) {
    let writes = pair(events, "lwrite");
    let s = &mut r.services;
    s.leader_writes_ok = writes.iter().filter(|w| w.outcome == Outcome::Ok).count();
    s.leader_writes_refused = writes.iter().filter(|w| w.outcome == Outcome::Fail).count();
    s.leader_writes_maybe = writes
        .iter()
        .filter(|w| w.outcome == Outcome::Maybe)
        .count();
    let mut acked: Vec<&Call> = writes.iter().filter(|w| w.outcome == Outcome::Ok).collect();
    acked.sort_by_key(|c| c.done.unwrap_or(c.invoke));
    let token = |c: &Call| c.inv.token.unwrap_or(0);
    let desc = |c: &Call| {
        format!(
            "{} wrote under token {} (invoked +{:.3} s, acknowledged +{:.3} s)",
            c.p,
            token(c),
            clock.s(c.invoke),
            clock.s(c.done.unwrap_or(c.invoke))
        )
    };

    let mut by_invoke = acked.clone();
    by_invoke.sort_by_key(|c| c.invoke);
    let mut sweep = Sweep::new(&acked);
    let mut late = Vec::new();
    for w in by_invoke {
        sweep.advance(w.invoke);
        if let Some(m) = sweep.max_token.filter(|m| token(m) > token(w)) {
            late.push(format!("{}, although {} before", desc(w), desc(m)));
        }
    }
    push_examples(r, ViolationKind::LeaderStaleWrite, late);

    let finals: Vec<Call> = pair(events, "lfinal")
        .into_iter()
        .filter(|c| c.outcome == Outcome::Ok)
        .collect();
    let mut reads: Vec<Call> = pair(events, "lread")
        .into_iter()
        .filter(|c| c.outcome == Outcome::Ok)
        .chain(finals.iter().cloned())
        .collect();
    reads.sort_by_key(|c| c.invoke);
    let mut sweep = Sweep::new(&acked);
    let mut stale = Vec::new();
    for rd in &reads {
        sweep.advance(rd.invoke);
        let seen = rd.ans.as_ref().and_then(|a| a.rtoken).unwrap_or(0);
        if let Some(m) = sweep.max_token.filter(|m| token(m) > seen) {
            stale.push(format!(
                "a read by {} invoked +{:.3} s returned token {seen}, but {} before it: the \
                 older token's write was accepted after the newer one's",
                rd.p,
                clock.s(rd.invoke),
                desc(m)
            ));
        }
    }
    push_examples(r, ViolationKind::LeaderStaleWrite, stale);

    match finals.last() {
        Some(f) => r.services.final_leader_token = f.ans.as_ref().and_then(|a| a.rtoken),
        None if !writes.is_empty() => push(
            r,
            ViolationKind::Incomplete,
            "leaders wrote, but the leader key was not read at the end".into(),
        ),
        None => {}
    }
}

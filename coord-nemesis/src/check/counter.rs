//! The counter rules: lost updates and stale fenced writes.

use std::collections::{BTreeMap, HashSet};

use super::calls::{pair, Call, Clock, Outcome, Sweep};
use super::findings::{push, push_examples};
use super::report::{Report, ViolationKind};
use crate::history::Event;

pub(super) fn counter(events: &[Event], clock: &Clock, r: &mut Report) {
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

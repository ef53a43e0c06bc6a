//! The queue rules: items lost, acknowledged twice, or never offered.

use std::collections::{BTreeMap, HashMap};

use super::calls::{pair, Call, Outcome};
use super::findings::{push, push_examples};
use super::report::{Report, ViolationKind};
use crate::history::{Event, Kind};

pub(super) fn queue(events: &[Event], r: &mut Report) {
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

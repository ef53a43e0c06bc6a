//! The end-state rules of the services: once faults have stopped and
//! things settled, every live member process is in the group with its
//! data (and nobody else is), and every live cache equals the server's
//! tree. The nemesis reads both in rounds (`alive`, `members-final`,
//! `tree-final` with the round in `n`, each cache answering `dump` with
//! the same `n`) until they agree or a deadline passes; the last round is
//! the one judged.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::findings::{push, push_examples};
use super::report::{Report, ViolationKind};
use crate::history::{Event, Kind};
use crate::tree;

/// How many differing nodes of one cache are spelled out.
const DIFF_LINES: usize = 3;

/// The members and caches at the end.
pub(super) fn finale(events: &[Event], r: &mut Report) {
    // What each service process said it is.
    let mut joins: HashMap<&str, (&str, &str)> = HashMap::new();
    let mut caches: HashSet<&str> = HashSet::new();
    let mut present: HashSet<&str> = HashSet::new();
    for e in events.iter().filter(|e| e.kind == Kind::Event) {
        match e.f.as_str() {
            "member-join" => {
                let name = e.item.as_deref().unwrap_or_default();
                joins.insert(&e.p, (name, e.data.as_deref().unwrap_or_default()));
            }
            "member" => {
                r.services.member_joins += 1;
                present.insert(&e.p);
            }
            "member-absent" => {
                r.services.member_losses += usize::from(present.remove(e.p.as_str()));
            }
            "cache-start" => {
                caches.insert(&e.p);
            }
            "cache" if e.item.as_deref() == Some("reset") => r.services.cache_resets += 1,
            _ => {}
        }
    }
    if joins.is_empty() && caches.is_empty() {
        return;
    }
    let rounds: Vec<&Event> = events
        .iter()
        .filter(|e| e.kind == Kind::Event && e.f == "alive" && e.p == "nemesis")
        .collect();
    let (Some(first), Some(last)) = (rounds.first(), rounds.last()) else {
        push(
            r,
            ViolationKind::Incomplete,
            "member or cache processes ran, but the end state was not read".into(),
        );
        return;
    };
    let round = last.n.unwrap_or(0);
    r.services.final_rounds = (round, last.t.saturating_sub(first.t) as f64 / 1e9);
    let alive: HashSet<&str> = last
        .data
        .as_deref()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let of_round = |f: &str, p: Option<&str>| {
        events.iter().rev().find(|e| {
            e.kind == Kind::Ok && e.f == f && e.n == Some(round) && p.is_none_or(|p| e.p == p)
        })
    };
    if !joins.is_empty() {
        members(
            &joins,
            &alive,
            of_round("members-final", Some("nemesis")),
            r,
        );
    }
    if !caches.is_empty() {
        let server = of_round("tree-final", Some("nemesis"));
        let mut live: Vec<&str> = caches.into_iter().filter(|p| alive.contains(p)).collect();
        live.sort_unstable();
        let dumps: Vec<(&str, Option<&Event>)> = live
            .into_iter()
            .map(|p| (p, of_round("dump", Some(p))))
            .collect();
        compare_caches(server, &dumps, round, r);
    }
}

/// Every live member process's `(name, data)` is in the group, and the
/// group has no other member.
fn members(
    joins: &HashMap<&str, (&str, &str)>,
    alive: &HashSet<&str>,
    found: Option<&Event>,
    r: &mut Report,
) {
    let Some(found) = found else {
        push(
            r,
            ViolationKind::Incomplete,
            "member processes ran, but the group was not read at the end".into(),
        );
        return;
    };
    let group: BTreeMap<&str, &str> = found
        .data
        .as_deref()
        .unwrap_or("")
        .lines()
        .filter_map(|l| l.split_once('='))
        .collect();
    let mut expected: Vec<(&str, (&str, &str))> = joins
        .iter()
        .filter(|(p, _)| alive.contains(*p))
        .map(|(p, m)| (*p, *m))
        .collect();
    expected.sort_unstable();
    r.services.members_expected = expected.len();
    r.services.members_found = group.len();
    let mut missing = Vec::new();
    for (p, (name, data)) in &expected {
        match group.get(name) {
            Some(d) if d == data => {}
            Some(d) => missing.push(format!(
                "{p} is alive as member {name:?} with data {data:?}, but the group's {name:?} \
                 has data {d:?}"
            )),
            None => missing.push(format!(
                "{p} is alive, but its member {name:?} is not in the group"
            )),
        }
    }
    push_examples(r, ViolationKind::MemberMissing, missing);
    let held: HashSet<&str> = expected.iter().map(|(_, (name, _))| *name).collect();
    let stale: Vec<String> = group
        .iter()
        .filter(|(name, _)| !held.contains(*name))
        .map(|(name, data)| {
            format!("the group has member {name:?} (data {data:?}), which no live process holds")
        })
        .collect();
    push_examples(r, ViolationKind::MemberStale, stale);
}

/// Every live cache's dump of the round equals the server's tree of it.
fn compare_caches(
    server: Option<&Event>,
    dumps: &[(&str, Option<&Event>)],
    round: u64,
    r: &mut Report,
) {
    let Some(server) = server.and_then(|e| e.data.as_deref()) else {
        push(
            r,
            ViolationKind::Incomplete,
            "cache processes ran, but the server's tree was not read at the end".into(),
        );
        return;
    };
    r.services.tree_nodes = tree::parse(server).len();
    r.services.caches_compared = dumps.len();
    for (p, dump) in dumps {
        let Some(seen) = dump.and_then(|e| e.data.as_deref()) else {
            push(
                r,
                ViolationKind::CacheDiverged,
                format!("{p} is alive but did not dump its cache in the final round {round}"),
            );
            continue;
        };
        let diff = tree::diff(&format!("{p}'s cache"), seen, server);
        if diff.is_empty() {
            r.services.caches_equal += 1;
            continue;
        }
        let mut detail = format!(
            "{p}'s cache differs from the server's tree in {} nodes: {}",
            diff.len(),
            diff.iter()
                .take(DIFF_LINES)
                .cloned()
                .collect::<Vec<_>>()
                .join("; ")
        );
        if diff.len() > DIFF_LINES {
            detail.push_str("; …");
        }
        push(r, ViolationKind::CacheDiverged, detail);
    }
}

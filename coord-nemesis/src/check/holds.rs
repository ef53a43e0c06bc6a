//! The lock rules: overlapping holds and fencing tokens granted twice.

use std::collections::HashMap;

use super::calls::{Clock, Fault};
use super::findings::push_examples;
use super::report::{Report, ViolationKind};
use crate::history::{Event, Kind};

/// A hold as its holder believed it: granted at `g`, believed until `e`.
#[derive(Debug)]
struct Hold {
    p: String,
    token: u64,
    g: u64,
    e: u64,
    why: &'static str,
}

pub(super) fn holds(events: &[Event], clock: &Clock, faults: &[Fault], r: &mut Report) {
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

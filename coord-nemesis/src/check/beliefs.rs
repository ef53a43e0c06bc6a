//! Beliefs: the intervals in which a process believed it held something
//! exclusive (a lock hold, a leadership term), read from its history, and
//! the two rules every such belief must keep — no two processes believe at
//! once (unless the earlier one was paused), and no token is given twice.

use std::collections::HashMap;

use super::calls::{Clock, Fault};
use crate::history::{Event, Kind};

/// One belief: granted at `g` with `token`, believed until `e` (ended by
/// `why`).
#[derive(Debug)]
pub(super) struct Belief {
    pub(super) p: String,
    pub(super) token: u64,
    pub(super) g: u64,
    pub(super) e: u64,
    pub(super) why: &'static str,
}

/// The beliefs of a history, built event by event.
#[derive(Default)]
pub(super) struct Beliefs<'a> {
    open: HashMap<&'a str, Belief>,
    done: Vec<Belief>,
    last: HashMap<&'a str, u64>,
}

impl<'a> Beliefs<'a> {
    /// Note `e`'s time (a belief still open when its process's history
    /// ends is believed until its last event), and end the beliefs that
    /// every kind ends the same way: the process exits, or the nemesis
    /// killed it (`start kill`, or `event kill` at the end of the run; both
    /// logged once the process is reaped).
    pub(super) fn saw(&mut self, e: &'a Event) {
        self.last.insert(&e.p, e.t);
        match (e.kind, e.f.as_str()) {
            (Kind::Event, "exit") => {
                self.end(&e.p, e.t, "exit");
            }
            (Kind::Start | Kind::Event, "kill") => {
                if let Some(target) = &e.target {
                    self.end(target, e.t, "killed");
                }
            }
            _ => {}
        }
    }

    /// `p` believes from `t` on, under `token` (ending its belief before,
    /// if any, with `why_previous`).
    pub(super) fn begin(&mut self, p: &'a str, token: u64, t: u64, why_previous: &'static str) {
        self.end(p, t, why_previous);
        self.open.insert(
            p,
            Belief {
                p: p.to_owned(),
                token,
                g: t,
                e: u64::MAX,
                why: "",
            },
        );
    }

    /// `p` stops believing at `t`, because of `why`; whether it believed.
    pub(super) fn end(&mut self, p: &str, t: u64, why: &'static str) -> bool {
        match self.open.remove(p) {
            Some(mut b) => {
                b.e = t;
                b.why = why;
                self.done.push(b);
                true
            }
            None => false,
        }
    }

    /// `p`'s open belief, if any.
    pub(super) fn open(&self, p: &str) -> Option<&Belief> {
        self.open.get(p)
    }

    /// Every belief, by grant; those still open end with their history.
    pub(super) fn finish(mut self) -> Vec<Belief> {
        for (p, mut b) in self.open {
            b.e = self.last.get(p).copied().unwrap_or(b.g);
            b.why = "its history ended";
            self.done.push(b);
        }
        self.done.sort_by_key(|b| b.g);
        self.done
    }
}

/// Whether `p` was paused (SIGSTOP) at any moment of `[a, b]`.
pub(super) fn paused(faults: &[Fault], p: &str, a: u64, b: u64) -> bool {
    faults
        .iter()
        .any(|f| f.f == "stop" && f.target == p && f.start <= b && f.end >= a)
}

/// How a kind of belief is spoken of in a finding.
pub(super) struct Words {
    /// `was granted` (a lock) / `began leading with` (a term).
    pub(super) begins: &'static str,
    /// `still held` / `still led with`.
    pub(super) holds: &'static str,
    /// `granted` / `began`.
    pub(super) began: &'static str,
}

/// Tokens given to more than one belief (`across_processes`: only count
/// beliefs of different processes).
pub(super) fn repeated_tokens(
    beliefs: &[Belief],
    clock: &Clock,
    words: &Words,
    across_processes: bool,
) -> Vec<String> {
    let mut by_token: HashMap<u64, Vec<&Belief>> = HashMap::new();
    for b in beliefs {
        let seen = by_token.entry(b.token).or_default();
        if !(across_processes && seen.iter().any(|s| s.p == b.p)) {
            seen.push(b);
        }
    }
    let mut repeated: Vec<String> = by_token
        .iter()
        .filter(|(_, bs)| bs.len() > 1)
        .map(|(t, bs)| {
            let who: Vec<String> = bs
                .iter()
                .map(|b| format!("{} at +{:.3} s", b.p, clock.s(b.g)))
                .collect();
            format!(
                "token {t} {} {} times: {}",
                words.began,
                bs.len(),
                who.join(", ")
            )
        })
        .collect();
    repeated.sort();
    repeated
}

/// Beliefs that overlap: a grant to one process while another still
/// believed, except when that other one was paused at any moment between
/// its own grant and this one (a paused process cannot be told anything:
/// that case is for the fencing token and the guarded write).
pub(super) fn overlaps(
    beliefs: &[Belief],
    clock: &Clock,
    faults: &[Fault],
    words: &Words,
) -> Vec<String> {
    // Sorted by grant: a sweep over an active list suffices.
    let mut found = Vec::new();
    let mut active: Vec<&Belief> = Vec::new();
    for b2 in beliefs {
        active.retain(|b1| b1.e > b2.g);
        for b1 in &active {
            if b1.p != b2.p && b1.g < b2.g && !paused(faults, &b1.p, b1.g, b2.g) {
                found.push(format!(
                    "{} {} token {} at +{:.3} s while {} {} token {} \
                     ({} +{:.3} s, believed until +{:.3} s: {}); no pause of {} in between",
                    b2.p,
                    words.begins,
                    b2.token,
                    clock.s(b2.g),
                    b1.p,
                    words.holds,
                    b1.token,
                    words.began,
                    clock.s(b1.g),
                    clock.s(b1.e),
                    b1.why,
                    b1.p
                ));
            }
        }
        active.push(b2);
    }
    found
}

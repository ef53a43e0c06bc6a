//! The lock rules: overlapping holds and fencing tokens granted twice.

use super::beliefs::{overlaps, repeated_tokens, Beliefs, Words};
use super::calls::{Clock, Fault};
use super::findings::push_examples;
use super::report::{Report, ViolationKind};
use crate::history::{Event, Kind};

const HOLD: Words = Words {
    begins: "was granted",
    holds: "still held",
    began: "granted",
};

/// A hold is believed from its `ok acquire` until the first of: its
/// `invoke release`; `event lost`; a new acquire or a new session of its
/// process; its exit or kill; the end of its history.
pub(super) fn holds(events: &[Event], clock: &Clock, faults: &[Fault], r: &mut Report) {
    let mut b = Beliefs::default();
    for e in events {
        b.saw(e);
        match (e.kind, e.f.as_str()) {
            (Kind::Ok, "acquire") => {
                r.summary.grants += 1;
                b.begin(&e.p, e.token.unwrap_or(0), e.t, "a new grant");
            }
            (Kind::Invoke, "release") => {
                b.end(&e.p, e.t, "release");
            }
            (Kind::Event, "lost") => {
                r.summary.told_lost += usize::from(b.end(&e.p, e.t, "told lost"));
            }
            (Kind::Invoke, "acquire") => {
                b.end(&e.p, e.t, "a new acquire");
            }
            (Kind::Ok, "session") => {
                b.end(&e.p, e.t, "a new session");
            }
            _ => {}
        }
    }
    let done = b.finish();
    let repeated = repeated_tokens(&done, clock, &HOLD, false);
    push_examples(r, ViolationKind::TokenRepeated, repeated);
    let found = overlaps(&done, clock, faults, &HOLD);
    push_examples(r, ViolationKind::Overlap, found);
}

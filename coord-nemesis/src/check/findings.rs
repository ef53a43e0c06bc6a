//! How a rule adds what it found to the report: one violation, or up to a
//! few examples of one kind and how many more.

use super::report::{Report, Violation, ViolationKind};

/// How many examples of one kind of violation are spelled out.
const EXAMPLES: usize = 5;

pub(super) fn push(r: &mut Report, kind: ViolationKind, detail: String) {
    r.violations.push(Violation { kind, detail });
}

/// Report up to [`EXAMPLES`] findings of one kind, then how many more.
pub(super) fn push_examples(r: &mut Report, kind: ViolationKind, found: Vec<String>) {
    let n = found.len();
    for d in found.into_iter().take(EXAMPLES) {
        push(r, kind, d);
    }
    if n > EXAMPLES {
        push(r, kind, format!("… and {} more like these", n - EXAMPLES));
    }
}

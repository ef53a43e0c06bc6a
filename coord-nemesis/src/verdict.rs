//! The exit code of a checked run: what `run` and `check` end with.

use std::process::ExitCode;

use coord_nemesis::{Report, ViolationKind};

/// Exit 0 when the run is clean — or, with `expect_violation`, when the
/// checker found the lost update the unfenced control must produce; 1
/// otherwise.
pub fn verdict(report: &Report, expect_violation: bool) -> ExitCode {
    if expect_violation {
        if report.has(ViolationKind::LostUpdate) {
            println!("nemesis: the expected lost update was found: the checker can see it");
            ExitCode::SUCCESS
        } else {
            println!("nemesis: expected a lost update (unfenced control) but found none");
            ExitCode::from(1)
        }
    } else if report.violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

//! The exit code of a checked run: what `run` and `check` end with.

use std::process::ExitCode;

use coord_nemesis::{Report, ViolationKind};

/// Exit 0 when the run is clean — or, with `expect_violation`, when the
/// checker found the lost update the unfenced control must produce and
/// the services (which the control leaves fenced) broke no rule; 1
/// otherwise.
pub fn verdict(report: &Report, expect_violation: bool) -> ExitCode {
    if expect_violation {
        let services = report.violations.iter().filter(|v| v.kind.is_service());
        if let Some(v) = services.clone().next() {
            println!(
                "nemesis: the services broke a rule in the unfenced control ({} violations, \
                 first [{}]): they must not",
                services.count(),
                v.kind.name()
            );
            ExitCode::from(1)
        } else if report.has(ViolationKind::LostUpdate) {
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

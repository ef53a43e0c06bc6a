//! Where coordctl's diagnostics go: stderr, never stdout (stdout carries
//! only the command's output). The library's `tracing` events go through a
//! `tracing-subscriber` filtered by `-v`/`-q`, or by RUST_LOG when neither
//! is given (default: warnings); coordctl's own progress lines and
//! warnings ([`say`]) are silenced by `-q`.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

use tracing_subscriber::EnvFilter;

/// Set by `-q`: only errors are printed.
static QUIET: AtomicBool = AtomicBool::new(false);

/// The filter for `-v` given `verbose` times, `-q`, or neither.
pub fn filter(verbose: u8, quiet: bool, rust_log: Option<&str>) -> EnvFilter {
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => {
            match rust_log {
                Some(directives) if !directives.trim().is_empty() => {
                    // A directive that does not parse is reported, and the
                    // default used.
                    return EnvFilter::try_new(directives).unwrap_or_else(|e| {
                    eprintln!("coordctl: RUST_LOG={directives:?} is not a filter ({e}); logging warnings");
                    EnvFilter::new("warn")
                });
                }
                _ => "warn",
            }
        }
        (false, 1) => "info",
        (false, 2) => "debug",
        (false, _) => "trace",
    };
    EnvFilter::new(level)
}

/// Install the subscriber: events to stderr, coloured only on a terminal.
pub fn init(verbose: u8, quiet: bool) {
    QUIET.store(quiet, Ordering::SeqCst);
    let rust_log = std::env::var("RUST_LOG").ok();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter(verbose, quiet, rust_log.as_deref()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

/// Print `coordctl: MESSAGE` on stderr unless `-q` was given: for progress
/// lines and warnings, not for errors (those always print).
pub fn say(message: std::fmt::Arguments<'_>) {
    if !QUIET.load(Ordering::SeqCst) {
        eprintln!("coordctl: {message}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_win_over_rust_log_and_warn_is_the_default() {
        let f = |v, q, env| filter(v, q, env).to_string();
        assert_eq!(f(0, false, None), "warn");
        assert_eq!(f(0, false, Some("")), "warn");
        assert_eq!(f(1, false, None), "info");
        assert_eq!(f(2, false, Some("error")), "debug");
        assert_eq!(f(3, false, None), "trace");
        assert_eq!(f(9, false, None), "trace");
        assert_eq!(f(0, true, Some("trace")), "error");
        assert_eq!(f(0, false, Some("coord_core=debug")), "coord_core=debug");
    }
}

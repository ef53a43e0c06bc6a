//! Awaiting conditions instead of sleeping for them.

use std::future::Future;
use std::time::Duration;

use coord_core::{Child, Error, Session};
use tokio::time::Instant;

use crate::Harness;

/// How long a test waits for a condition before it fails.
pub const CONDITION_DEADLINE: Duration = Duration::from_secs(30);

/// Wait until `check` returns true, re-checking every few milliseconds, for
/// conditions that no watch can signal (counters inside a recipe).
/// Panics with `what` when [`CONDITION_DEADLINE`] passes.
///
/// # Errors
/// Panics (naming `what`) when the deadline passes.
///
/// # Cancel safety
/// Cancel safe: it only reads.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + CONDITION_DEADLINE;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Wait, through children watches, until the children of `dir` satisfy
/// `want` (a missing `dir` counts as no children), and return them.
///
/// # Errors
/// Panics when [`CONDITION_DEADLINE`] passes or a listing fails.
///
/// # Cancel safety
/// Cancel safe: it only reads and watches.
pub async fn await_children(
    session: &Session,
    dir: &str,
    what: &str,
    want: impl Fn(&[Child]) -> bool,
) -> Vec<Child> {
    let deadline = Instant::now() + CONDITION_DEADLINE;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "timed out waiting for children of {dir}: {what}"
        );
        match session.children_watch(dir).await {
            Ok((kids, changed)) => {
                if want(&kids) {
                    return kids;
                }
                let _ = tokio::time::timeout(left, changed).await;
            }
            Err(Error::NotFound { .. }) => {
                if want(&[]) {
                    return Vec::new();
                }
                // Nothing to watch until the directory exists.
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(e) => panic!("children_watch({dir}) failed: {e}"),
        }
    }
}

/// The children of `dir`, none when it does not exist.
///
/// # Errors
/// Panics when the listing fails otherwise.
///
/// # Cancel safety
/// Cancel safe.
pub async fn children_or_none(session: &Session, dir: &str) -> Vec<Child> {
    match session.children(dir).await {
        Ok(k) => k,
        Err(Error::NotFound { .. }) => Vec::new(),
        Err(e) => panic!("children({dir}) failed: {e}"),
    }
}

/// Open `n` sessions.
///
/// # Errors
/// Panics, as [`Harness::open`] does, when the backend is unreachable.
///
/// # Cancel safety
/// Dropped mid-way, the sessions opened so far are dropped unclosed.
pub async fn open_n(h: &dyn Harness, n: usize) -> Vec<Session> {
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(h.open().await);
    }
    v
}

/// Close every session, ignoring errors (some may have expired on purpose).
///
/// # Errors
/// None: errors are ignored.
///
/// # Cancel safety
/// Dropped mid-way, the rest stay open until dropped.
pub async fn close_all(sessions: &[Session]) {
    for s in sessions {
        let _ = s.close().await;
    }
}

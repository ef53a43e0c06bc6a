//! Bounded waits inside `Drop`: what lets a dropped guard's delete and an
//! unclosed session's close reach the server before the process can exit.
//!
//! A drop cannot await. Where the thread may block without stalling the
//! runtime that must do the work (a multi-thread runtime: the work runs on
//! its other workers while this thread waits in `block_in_place`), the drop
//! waits for the work, at most a fixed budget. On a current-thread runtime
//! it cannot: the work runs once the runtime gets to it, and should the
//! runtime be shut down first (the `main` that returned), the work's own
//! drop hands it to [`run_elsewhere`]: a thread of its own, with a runtime
//! of its own and so a connection of its own. Nothing here ever waits
//! longer than its budget, and nothing panics.

use std::sync::mpsc;
use std::time::Duration;

use tokio::runtime::{Handle, RuntimeFlavor};

use crate::backend::primitive::SessionEnder;

/// How long the drop of a guard waits for its node's delete.
pub(crate) const DELETE_BUDGET: Duration = Duration::from_secs(1);

/// How long the drop of a session's last handle waits for its close.
pub(crate) const CLOSE_BUDGET: Duration = Duration::from_secs(2);

/// Whether this thread may block until `done` says the work it waits for
/// is over: only on a multi-thread runtime (in `block_in_place`), where
/// the work goes on elsewhere.
pub(crate) fn may_block() -> bool {
    Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread)
}

/// Wait until `done` receives (or its sender is dropped), at most `budget`,
/// if this thread may block (see [`may_block`]); else return at once.
/// Whether the work is known to be over.
pub(crate) fn wait(done: &mpsc::Receiver<()>, budget: Duration) -> bool {
    if !may_block() {
        return matches!(done.try_recv(), Ok(()));
    }
    let wait = || matches!(done.recv_timeout(budget), Ok(()));
    if std::thread::panicking() {
        // A panic caught here would abort the process; `may_block` ruled
        // out the one case where `block_in_place` panics (a
        // current-thread runtime).
        return tokio::task::block_in_place(wait);
    }
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        tokio::task::block_in_place(wait)
    }))
    .unwrap_or(false)
}

/// Run `work` on a thread of its own with a current-thread runtime of its
/// own, and wait for it at most `budget` (the thread is left to finish, or
/// to time out, by itself). For work whose own runtime is gone or going:
/// `work` must open whatever connection it needs. Whether it succeeded in
/// time.
pub(crate) fn run_elsewhere(work: SessionEnder, budget: Duration) -> bool {
    let (tx, rx) = mpsc::sync_channel(1);
    let spawned = std::thread::Builder::new()
        .name("coord-session-end".into())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            let done = rt.block_on(async { tokio::time::timeout(budget, work).await });
            let _ = tx.send(matches!(done, Ok(Ok(()))));
        });
    if spawned.is_err() {
        return false;
    }
    // A little more than the work's own bound: its thread also starts a
    // runtime.
    rx.recv_timeout(budget + Duration::from_millis(250))
        .unwrap_or(false)
}

/// End a session whose last handle was dropped unclosed: `closing` over
/// its own connection, on its own runtime; should that runtime drop the
/// work before it is done (shut down), or there be no runtime here,
/// `ender` over a connection of its own ([`run_elsewhere`]). Waits for it
/// at most about [`CLOSE_BUDGET`] where this thread may block (see
/// [`wait`]).
pub(crate) fn close_on_drop(closing: SessionEnder, ender: Option<SessionEnder>) {
    let (tx, rx) = mpsc::sync_channel(1);
    let mut fallback = Fallback(ender);
    let work = async move {
        match tokio::time::timeout(CLOSE_BUDGET, closing).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::debug!(target: crate::telemetry::TARGET, error = %e, "closing a dropped session failed; ending it over a connection of its own");
                if let Some(ender) = fallback.0.take() {
                    let _ = tokio::time::timeout(CLOSE_BUDGET, ender).await;
                }
            }
            Err(_) => tracing::warn!(target: crate::telemetry::TARGET,
                "no answer to the close of a dropped session within {CLOSE_BUDGET:?}; the server ends it by its timeout"
            ),
        }
        // Done, one way or the other: nothing for the drop to do.
        drop(fallback.0.take());
        let _ = tx.send(());
    };
    match Handle::try_current() {
        Ok(rt) => {
            drop(rt.spawn(work));
            wait(&rx, CLOSE_BUDGET + Duration::from_millis(250));
        }
        // No runtime to run it on: dropped, its fallback ends the session.
        Err(_) => drop(work),
    }
}

/// Ends the session over a connection of its own when dropped still
/// holding its ender: the work it belongs to was dropped before it was
/// done (its runtime shut down).
struct Fallback(Option<SessionEnder>);

impl Drop for Fallback {
    fn drop(&mut self) {
        if let Some(ender) = self.0.take() {
            if !run_elsewhere(ender, CLOSE_BUDGET) {
                tracing::debug!(target: crate::telemetry::TARGET, "could not end a dropped session over a connection of its own; the server ends it by its timeout");
            }
        }
    }
}

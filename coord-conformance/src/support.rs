//! Small helpers the tests share.

use std::future::Future;
use std::time::Duration;

use coord_core::{Session, SessionState};

use crate::fault::Fault;

/// How long a test waits for something the contract says will happen (a
/// watch firing, a node going away) before it fails. Generous: real servers
/// on a loaded CI machine are slow, and a correct backend never needs it.
pub const WAIT: Duration = Duration::from_secs(30);

/// Await `fut`, failing the test (naming `what`) if it takes longer than
/// [`WAIT`]: conformance tests await conditions, they never sleep and hope.
///
/// # Errors
/// Panics (naming `what`) when [`WAIT`] passes.
///
/// # Cancel safety
/// As cancel safe as `fut`.
pub async fn within<F: Future>(what: &str, fut: F) -> F::Output {
    within_for(what, WAIT, fut).await
}

/// [`within`] with a bound of its own, for the few tests whose work grows
/// with their size (thousands of operations), where a loaded machine and a
/// server checking TLS and permissions on every request can take longer
/// than [`WAIT`] without anything being wrong.
///
/// # Errors
/// Panics (naming `what`) when `limit` passes.
///
/// # Cancel safety
/// As cancel safe as `fut`.
pub async fn within_for<F: Future>(what: &str, limit: Duration, fut: F) -> F::Output {
    match tokio::time::timeout(limit, fut).await {
        Ok(out) => out,
        Err(_) => panic!("{what}: did not happen within {limit:?}"),
    }
}

/// Run `op` (a write of `session`'s) on a task of its own, let it start
/// (`yields` yields: a different point of the write each round), cut
/// `session`'s connections with `fault`, and heal as soon as the cut is
/// noticed or `op` finished. Answers whether `op` was still running when
/// the cut was noticed, and what it returned (awaited after the heal).
///
/// # Errors
/// Panics when the cut is not noticed, or `op` does not finish, within
/// [`WAIT`], or when its task panics.
///
/// # Cancel safety
/// Not cancel safe: `op` runs on after a drop, and the cut stays.
pub async fn through_cut<T: Send + 'static>(
    session: &Session,
    fault: &dyn Fault,
    yields: usize,
    op: impl Future<Output = T> + Send + 'static,
) -> (bool, T) {
    let mut task = tokio::spawn(op);
    for _ in 0..yields {
        tokio::task::yield_now().await;
    }
    fault.cut();
    let mut state = session.state_watch();
    let early = within("the cut is noticed, or the write finished", async {
        tokio::select! {
            _ = state.wait_for(|s| *s != SessionState::Connected) => None,
            r = &mut task => Some(r),
        }
    })
    .await;
    fault.heal();
    let in_flight = early.is_none();
    let r = match early {
        Some(r) => r,
        None => within("the write after the heal", task).await,
    };
    (in_flight, r.expect("the write's task"))
}

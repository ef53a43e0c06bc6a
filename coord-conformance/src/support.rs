//! Small helpers the tests share.

use std::future::Future;
use std::time::Duration;

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

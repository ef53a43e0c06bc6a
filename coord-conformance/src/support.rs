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
    match tokio::time::timeout(WAIT, fut).await {
        Ok(out) => out,
        Err(_) => panic!("{what}: did not happen within {WAIT:?}"),
    }
}

//! Asking a lock's holder to release (Curator's `Revocable` and
//! `Revoker`): the asker writes [`REVOKE_REQUEST`] into the holder's node;
//! the holder, watching its node, sees it and decides. Curator's
//! `Revoker.attemptRevoke` writes the same bytes, so Curator holders and
//! ours hear each other's requests on ZooKeeper.

use crate::error::{Error, Result};
use crate::hold::reason::why_gone;
use crate::machinery::retry::pause;
use crate::session::Session;

/// The data a revocation request writes into the holder's node (Curator's
/// `RevocationSpec` marker).
pub const REVOKE_REQUEST: &[u8] = b"__REVOKE__";

/// Ask the holder of the lock node `node` to release it. `false` when the
/// node is gone (nobody to ask).
///
/// The request replaces the node's data (as Curator's does); the node
/// stays its holder's, with its stamp, so the holder's fence still holds.
///
/// # Errors
/// [`Error::InvalidPath`]; the session's errors.
///
/// # Cancel safety
/// Not cancel safe: dropped, the request may or may not have been made.
pub async fn request(session: &Session, node: &str) -> Result<bool> {
    match session.set(node, REVOKE_REQUEST, None).await {
        Ok(_) => Ok(true),
        Err(Error::NotFound { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Resolve once a revocation request is in the held node at `node` in
/// `session`; the reason the hold was lost if that comes first. Connection
/// losses are waited through.
pub(crate) async fn requested_at(session: &Session, node: &str) -> Result<()> {
    let mut attempt = 0;
    loop {
        match session.get_watch(node).await {
            // The same reason `lost()` gives for the node found gone.
            Ok(None) => return Err(why_gone(session, node).await),
            Ok(Some((node, changed))) => {
                if node.data == REVOKE_REQUEST {
                    return Ok(());
                }
                match changed.await {
                    Ok(()) => attempt = 0,
                    Err(e) if e.is_retryable() => pause(session, &mut attempt).await,
                    Err(e) => return Err(e),
                }
            }
            Err(e) if e.is_retryable() => pause(session, &mut attempt).await,
            Err(e) => return Err(e),
        }
    }
}

//! Why a hold's node is gone: the session's end, or another session's
//! delete, decided the same however the news arrived.

use crate::error::Error;
use crate::machinery::retry;
use crate::session::Session;

/// The node at `path` is found gone: say why, the same however the news
/// arrived. A session's end takes its ephemeral nodes with it, and the
/// deletion may reach a waiter before the end does (the server tells of
/// the deletion at once, the backend learns of the end later, or not until
/// it asks: etcd at its next keep-alive); the ephemeral node of a session
/// that still lives can only have been deleted by another session. So:
/// the session's end if it is over here already; else the server is asked
/// ([`Session::alive`], one round trip): its end if it is over there, and
/// [`Error::LockLost`] if it lives. Through a lost connection the question
/// is asked again, until the answer comes or the session is over here (its
/// lease deadline bounds that wait).
pub(crate) async fn why_gone(session: &Session, path: &str) -> Error {
    let mut attempt = 0;
    loop {
        if let Some(end) = session.state().end_error() {
            return end;
        }
        match session.alive().await {
            Ok(()) => {
                return Error::LockLost {
                    path: path.to_owned(),
                }
            }
            // The state may by now say which end (a close that is
            // returning); the backend's answer says it otherwise.
            Err(e) if e.is_session_end() => return session.state().end_error().unwrap_or(e),
            Err(e) if e.is_retryable() => retry::pause(session, &mut attempt).await,
            Err(e) => {
                // The server cannot say: the node is gone, so the hold is.
                tracing::debug!(target: crate::telemetry::TARGET, %path, error = %e, "cannot ask whether the session lives; counting the loss as a deletion");
                return Error::LockLost {
                    path: path.to_owned(),
                };
            }
        }
    }
}

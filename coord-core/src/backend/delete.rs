//! Deletes sent again through lost connections, until one is answered.

use std::future::Future;

use crate::error::Result;

/// Send `delete` until it is answered (again through lost connections):
/// `true` when it removed the node. After a delete whose answer was lost,
/// "gone" may be that delete's doing, so it counts as removed (at least
/// once) rather than lose what the node held.
pub(crate) async fn delete_at_least_once<F, Fut>(mut delete: F) -> Result<bool>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<()>>,
{
    let backoff = crate::backend::backoff::Backoff::RECIPES;
    let (mut attempt, mut ambiguous) = (0, false);
    loop {
        match delete().await {
            Ok(()) => return Ok(true),
            Err(crate::Error::NotFound { .. }) => return Ok(ambiguous),
            Err(e) if e.is_retryable() => {
                ambiguous = true;
                backoff.sleep(&mut attempt).await;
            }
            Err(e) => return Err(e),
        }
    }
}

//! The keep-alive of a session's lease: a background task that renews the
//! lease, renews the session's lease clock with it and tells the session's
//! state (`Suspended`, back to `Connected`, `Expired`).
//!
//! The task never decides on its own that the session is lost: that is the
//! lease deadline's job (`coord_core::backend::lease`), which `coord_core::Session`
//! watches and which ends the session through `abandon` (see
//! `crate::session`). The task keeps beating, however long beats fail,
//! until the server says the lease is gone or it is stopped: an etcd that
//! was away for a second (a restart) finds the session alive, as the
//! server's lease still is.

use std::sync::Arc;
use std::time::Duration;

use coord_core::{Error, Result, SessionId, SessionState};
use etcd_client::{LeaseKeepAliveStream, LeaseKeeper};
use tokio::time::Instant;

use crate::error;
use crate::shared::Shared;

/// What one keep-alive round trip learned.
enum Beat {
    /// The server renewed the lease on a request sent at `sent`.
    Alive { sent: Instant },
    /// The server says the lease is gone (TTL 0: revoked or expired).
    Gone,
}

/// One keep-alive round trip on the lease's stream (opened on first use).
async fn beat(
    shared: &Shared,
    stream: &mut Option<(LeaseKeeper, LeaseKeepAliveStream)>,
) -> Result<Beat> {
    let Some((keeper, responses)) = stream else {
        // Opening the stream sends one keep-alive and checks its answer (a
        // lease not found is an error, mapped to `SessionExpired`).
        // A member the client cannot connect to never got the request:
        // try again (the balancer picks again) rather than suspend.
        let mut tries = 0;
        let (opened, sent) = loop {
            let mut lease = shared.client.lease_client();
            let sent = Instant::now();
            match lease.keep_alive(shared.lease).await {
                Ok(opened) => break (opened, sent),
                Err(e) if error::never_sent(&e) && tries < 10 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => return Err(error::map(e)),
            }
        };
        *stream = Some(opened);
        return Ok(Beat::Alive { sent });
    };
    // Noted before the request is queued: the server renewed the lease no
    // earlier than this.
    let sent = Instant::now();
    keeper.keep_alive().await.map_err(error::map)?;
    match responses.message().await.map_err(error::map)? {
        Some(resp) if resp.ttl() > 0 => Ok(Beat::Alive { sent }),
        Some(_) => Ok(Beat::Gone),
        None => Err(Error::ConnectionLost("the keep-alive stream ended".into())),
    }
}

/// Keep the lease alive every TTL/3. Every beat the server answers with
/// the lease alive renews the lease clock (from the beat's send time) and
/// makes the session `Connected`; a failed beat makes it `Suspended` and is
/// retried quickly (at once when another request gets an answer, which
/// also makes the session `Connected`: see `Shared::answered`), for as long
/// as it takes; once the server says the lease is gone, the session is
/// `Expired`. Stopped (aborted) by `close` and
/// `abandon`.
pub(crate) async fn keep_alive(shared: Arc<Shared>) {
    let interval = (shared.ttl / 3).max(Duration::from_millis(300));
    let beat_timeout = shared.request_timeout.min(shared.ttl / 2);
    let mut stream = None;
    tokio::time::sleep(interval).await;
    loop {
        if shared.state.borrow().is_terminal() {
            return;
        }
        match tokio::time::timeout(beat_timeout, beat(&shared, &mut stream)).await {
            Ok(Ok(Beat::Alive { sent })) => {
                shared.clock.renewed(sent);
                shared.set_state(SessionState::Connected);
                tokio::time::sleep(interval).await;
            }
            Ok(Ok(Beat::Gone)) | Ok(Err(Error::SessionExpired)) => {
                tracing::debug!(lease = %format!("{:x}", shared.lease), "etcd lease is gone: session expired");
                shared.set_state(SessionState::Expired);
                return;
            }
            failed => {
                if let Ok(Err(e)) = &failed {
                    tracing::debug!(lease = %format!("{:x}", shared.lease), error = %e, "etcd keep-alive failed");
                } else {
                    tracing::debug!(lease = %format!("{:x}", shared.lease), timeout = ?beat_timeout, "etcd keep-alive got no answer");
                }
                // A stream that failed may hold a late answer to an old
                // beat: open a new one.
                stream = None;
                shared.set_state(SessionState::Suspended);
                // Retry soon, or at once when a request gets through.
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(200)) => {}
                    () = shared.beat_now.notified() => {}
                }
            }
        }
    }
}

/// The etcd lease behind a session opened by [`crate::connect`](fn@crate::connect), from its id (the
/// lease id in hex, as `etcdctl lease list` shows it). `None` for an id
/// that is not one.
pub fn lease_id(id: &SessionId) -> Option<i64> {
    // Lease ids are positive i64; the cast is the inverse of `{:x}`.
    u64::from_str_radix(&id.0, 16).ok().map(|v| v as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_ids_round_trip_through_session_ids() {
        for lease in [1i64, 0x694d_9a3c_1e2b_4f01, i64::MAX] {
            let id = SessionId(format!("{lease:x}"));
            assert_eq!(lease_id(&id), Some(lease));
        }
        assert_eq!(lease_id(&SessionId("not-hex".into())), None);
    }
}

//! The lease behind a session: kept alive by a background task, which
//! also tells the session's state (`Suspended`, back to `Connected`,
//! `Expired`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use coord_core::{Error, Result, SessionId, SessionState};
use etcd_client::{LeaseKeepAliveStream, LeaseKeeper};

use crate::error;
use crate::shared::Shared;

/// One keep-alive round trip on the lease's stream (opened on first use):
/// `Ok(true)` while the lease lives, `Ok(false)` once the server says it
/// is gone (TTL 0: revoked or expired).
async fn beat(
    shared: &Shared,
    stream: &mut Option<(LeaseKeeper, LeaseKeepAliveStream)>,
) -> Result<bool> {
    let Some((keeper, responses)) = stream else {
        // Opening the stream sends one keep-alive and checks its answer.
        // A member the client cannot connect to never got the request:
        // try again (the balancer picks again) rather than suspend.
        let mut tries = 0;
        let opened = loop {
            let mut lease = shared.client.lease_client();
            match lease.keep_alive(shared.lease).await {
                Ok(opened) => break opened,
                Err(e) if error::never_sent(&e) && tries < 10 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => return Err(error::map(e)),
            }
        };
        *stream = Some(opened);
        return Ok(true);
    };
    keeper.keep_alive().await.map_err(error::map)?;
    match responses.message().await.map_err(error::map)? {
        Some(resp) => Ok(resp.ttl() > 0),
        None => Err(Error::ConnectionLost("the keep-alive stream ended".into())),
    }
}

/// Keep the lease alive every TTL/3. A failed beat suspends the session
/// and is retried quickly; once beats have failed for a whole TTL, or the
/// server says the lease is gone, the session is `Expired`.
pub(crate) async fn keep_alive(shared: Arc<Shared>) {
    let interval = (shared.ttl / 3).max(Duration::from_millis(300));
    let beat_timeout = shared.request_timeout.min(shared.ttl / 2);
    let mut last_ok = Instant::now();
    let mut stream = None;
    tokio::time::sleep(interval).await;
    loop {
        if shared.state.borrow().is_terminal() {
            return;
        }
        match tokio::time::timeout(beat_timeout, beat(&shared, &mut stream)).await {
            Ok(Ok(true)) => {
                last_ok = Instant::now();
                shared.set_state(SessionState::Connected);
                tokio::time::sleep(interval).await;
            }
            Ok(Ok(false)) | Ok(Err(Error::SessionExpired)) => {
                tracing::info!(lease = %format!("{:x}", shared.lease), "etcd lease is gone: session expired");
                shared.set_state(SessionState::Expired);
                return;
            }
            Ok(Err(_)) | Err(_) => {
                stream = None;
                if last_ok.elapsed() >= shared.ttl {
                    tracing::warn!(lease = %format!("{:x}", shared.lease), "etcd keep-alive failed for a whole TTL: session expired");
                    shared.set_state(SessionState::Expired);
                    return;
                }
                shared.set_state(SessionState::Suspended);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// The etcd lease behind a session opened by [`crate::connect`], from its id (the
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

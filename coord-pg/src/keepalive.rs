//! The session's keep-alive: a renewal every third of the session timeout
//! that moves the lease on, and notices the session's end on the server.

use std::sync::Arc;
use std::time::Duration;

use coord_core::backend::lease::LeaseClock;
use tokio::time::Instant;
use tokio_postgres::types::Type;

use crate::link::Link;

/// How often the heartbeat renews a session of `timeout`.
pub(crate) fn heartbeat_every(timeout: Duration) -> Duration {
    timeout / 3
}

/// Renew the session every third of its timeout; the lease clock moves to
/// each answered renewal's send time. Stops once the session is over or
/// past its lease deadline (the session's monitor then gives it up).
pub(crate) async fn heartbeat(link: Arc<Link>, sid: i64, lease: Arc<LeaseClock>) {
    let every = heartbeat_every(link.target.session_timeout);
    let renew = format!("select {}.renew($1)", link.target.schema);
    let mut state = link.state.subscribe();
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            _ = state.wait_for(|s| s.is_terminal()) => return,
        }
        if lease.expired() {
            return;
        }
        let sent = Instant::now();
        match link.query(&renew, &[(&sid, Type::INT8)], "").await {
            Ok(rows) if rows.first().is_some_and(|r| r.get::<_, bool>(0)) => lease.renewed(sent),
            Ok(_) => {
                tracing::debug!(target: "coord", session = sid, "postgres session over on the server");
                link.ended_by_server();
                return;
            }
            Err(e) => tracing::debug!(target: "coord", error = %e, "postgres heartbeat failed"),
        }
    }
}

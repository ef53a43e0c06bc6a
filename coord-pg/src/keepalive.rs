//! The session's keep-alive: a renewal every third of the session timeout
//! that moves the lease on, and notices the session's end on the server.

use std::sync::Arc;
use std::time::Duration;

use coord_core::backend::lease::LeaseClock;
use tokio::time::Instant;
use tokio_postgres::types::Type;

use crate::link::Link;
use crate::watch::Hub;

/// How often the heartbeat renews a session of `timeout`.
pub(crate) fn heartbeat_every(timeout: Duration) -> Duration {
    timeout / 3
}

/// Renew the session every third of its timeout; the lease clock moves to
/// each answered renewal's send time. Stops once the session is over or
/// past its lease deadline (the session's monitor then gives it up).
///
/// 1. The renewal goes over the session's connection, so a connection
///    that is lost is noticed (and made again) while the session is idle.
/// 2. That connection answers in order: behind an operation that waits at
///    the server (a create queued on its directory's row) the renewal
///    waits too. So when the session's own requests were ahead of it and
///    it is unanswered after a third of the timeout, the renewal is also
///    sent over the process's listening connection ([`Hub::side`]), and
///    the first answer counts: a session does not end because its own
///    request waits. (A renewal slow with nothing ahead of it is the
///    server's slowness: a second one would only add to it, and every
///    session of the process would queue on that one connection.)
pub(crate) async fn heartbeat(link: Arc<Link>, sid: i64, lease: Arc<LeaseClock>, hub: Arc<Hub>) {
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
        let behind = link.in_flight() > 0;
        let params: [crate::link::Param<'_>; 1] = [(&sid, Type::INT8)];
        let main = link.query(&renew, &params, "");
        tokio::pin!(main);
        let (answer, sent) = match tokio::time::timeout(every, &mut main).await {
            Ok(r) => (r, sent),
            Err(_) => match hub.side().filter(|_| behind) {
                Some(side) => {
                    let side_sent = Instant::now();
                    let other = renew_over(&side, &renew, sid, link.target.request_timeout);
                    tokio::select! {
                        r = &mut main => (r, sent),
                        Ok(r) = other => (Ok(r), side_sent),
                    }
                }
                None => (main.await, sent),
            },
        };
        match answer {
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

/// `renew` for `sid` over `client` (the listening connection), within
/// `within`: its rows, or `Err` (no answer, or an error: the renewal over
/// the session's own connection is still awaited).
async fn renew_over(
    client: &tokio_postgres::Client,
    renew: &str,
    sid: i64,
    within: Duration,
) -> Result<Vec<tokio_postgres::Row>, ()> {
    match tokio::time::timeout(within, client.query_typed(renew, &[(&sid, Type::INT8)])).await {
        Ok(Ok(rows)) => Ok(rows),
        _ => Err(()),
    }
}

//! Opening a session: a command connection (the schema made if missing,
//! then `coord.open`), a listening connection (`LISTEN coord`), and the
//! heartbeat.

use std::sync::Arc;
use std::time::Duration;

use coord_core::backend::lease::LeaseClock;
use coord_core::{Error, Result, Session, SessionId, SessionState};
use futures_util::StreamExt;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_postgres::{AsyncMessage, NoTls};

use crate::error::{map, BACKEND};
use crate::options::PgOptions;
use crate::session::PgSession;
use crate::watch::Hub;

/// The schema, created by coord itself (idempotent).
const SCHEMA: &str = include_str!("../sql/schema.sql");

/// Open a session on the server `options` names.
///
/// # Errors
/// `InvalidArgument` for a session timeout coord refuses; `ConnectionLost`
/// when the server cannot be reached; `Unauthenticated` for a refused role
/// or password.
///
/// # Cancel safety
/// Cancel safe: a session whose open is dropped is never handed out, and
/// the server ends it after its timeout.
pub async fn connect(options: PgOptions) -> Result<Session> {
    let timeout = coord_core::limits::check_session_timeout(options.session_timeout)?;
    let timeout_ms = i32::try_from(timeout.as_millis())
        .map_err(|_| Error::InvalidArgument("a session timeout over 24 days".into()))?;
    let (client, conn) = tokio_postgres::connect(&options.url, NoTls)
        .await
        .map_err(|e| map(e, ""))?;
    let (state_tx, _) = watch::channel(SessionState::Connected);
    let state = Arc::new(state_tx);
    let conn_state = Arc::clone(&state);
    let command_task = tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(target: "coord", error = %e, "postgres command connection ended");
        }
        conn_state.send_if_modified(|s| {
            if *s == SessionState::Connected {
                *s = SessionState::Suspended;
                true
            } else {
                false
            }
        });
    });
    if client
        .query_opt("select 1 from pg_namespace where nspname = 'coord'", &[])
        .await
        .map_err(|e| map(e, ""))?
        .is_none()
        || client
            .query_opt("select 1 from pg_proc where proname = 'guarded_put'", &[])
            .await
            .map_err(|e| map(e, ""))?
            .is_none()
    {
        // One installer at a time (sessions opened together all find it
        // missing): the DDL is idempotent, run under a transaction-scoped
        // advisory lock.
        let script = format!("begin; select pg_advisory_xact_lock(7_243_917); {SCHEMA}; commit;");
        client
            .batch_execute(&script)
            .await
            .map_err(|e| map(e, ""))?;
    }
    let hub = Arc::new(Hub::default());
    let listen_task = listen(&options.url, Arc::clone(&hub)).await?;
    let sent = Instant::now();
    let row = client
        .query_one("select id from coord.open($1)", &[&timeout_ms])
        .await
        .map_err(|e| map(e, ""))?;
    let sid: i64 = row.get(0);
    let lease = LeaseClock::new(timeout, sent);
    let session = PgSession::new(
        client,
        sid,
        SessionId(format!("{BACKEND}-{sid}")),
        state,
        lease,
        hub,
        vec![command_task, listen_task],
        timeout,
    );
    Ok(Session::new(Arc::new(session)))
}

/// A connection that listens for the trigger's notices and hands them to
/// `hub`; when it ends, every waiter fires.
async fn listen(url: &str, hub: Arc<Hub>) -> Result<tokio::task::JoinHandle<()>> {
    let (client, mut conn) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(|e| map(e, ""))?;
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| conn.poll_message(cx)).boxed();
        let client = client;
        let listening = client.batch_execute("listen coord");
        tokio::pin!(listening);
        let mut ready = Some(ready_tx);
        loop {
            tokio::select! {
                r = &mut listening, if ready.is_some() => {
                    if let Some(tx) = ready.take() {
                        let _ = tx.send(r.map_err(|e| map(e, "")));
                    }
                }
                m = messages.next() => match m {
                    Some(Ok(AsyncMessage::Notification(n))) => hub.notice(n.payload()),
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => break,
                },
            }
        }
        hub.fire_all();
    });
    match ready_rx.await {
        Ok(Ok(())) => Ok(task),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(Error::ConnectionLost(
            "postgres: the listening connection closed".into(),
        )),
    }
}

/// How often the heartbeat renews a session of `timeout`.
pub(crate) fn heartbeat_every(timeout: Duration) -> Duration {
    timeout / 3
}

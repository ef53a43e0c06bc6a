//! The server's keyspace notifications for expired keys
//! (`notify-keyspace-events`): checked, and per [`KeyspaceEvents`] turned
//! on, at connect and again after the pub/sub link comes back.

use std::sync::Arc;
use std::time::Duration;

use coord_core::{Error, Result};
use redis::aio::ConnectionManager;

use crate::error::{self, KeyspaceEventsError, BACKEND};
use crate::options::KeyspaceEvents;
use crate::shared::Shared;

fn has_expired_events(flags: &str) -> bool {
    flags.contains('K') && (flags.contains('x') || flags.contains('A'))
}

/// How long [`observe_expired_notice`] waits for the notice.
const PROBE_PATIENCE: Duration = Duration::from_secs(1);

/// Check (and per `mode`, turn on) the server's keyspace notifications for
/// expired keys: at connect, and again whenever the pub/sub link comes
/// back, since a server restarted with its config file forgets a
/// `CONFIG SET`.
///
/// `CONFIG` is a fast path, never a requirement: where it is refused (an
/// ACL user without admin rights, the norm on managed Redis, or `CONFIG`
/// renamed away), the check watches a scratch key of coord's namespace
/// (`<prefix>probe:<uuid>`) expire and waits up to [`PROBE_PATIENCE`] for
/// its keyspace notice. A server that wants a password it did not get
/// fails with [`Error::Unauthenticated`], never with a notifications error.
pub(crate) async fn ensure_keyspace_events(
    conn: &mut ConnectionManager,
    client: &redis::Client,
    prefix: &str,
    mode: KeyspaceEvents,
) -> Result<()> {
    if mode == KeyspaceEvents::Assume {
        return Ok(());
    }
    let current = redis::cmd("CONFIG")
        .arg("GET")
        .arg("notify-keyspace-events")
        .query_async::<Vec<String>>(conn)
        .await;
    let current = match current {
        Ok(pair) => pair.get(1).cloned().unwrap_or_default(),
        Err(e) if error::is_transport(&e) || is_credentials(&e) => return Err(error::map(e, None)),
        Err(e) => {
            // No CONFIG for this user: look for a notice instead.
            if observe_expired_notice(conn, client, prefix).await? {
                tracing::debug!(
                    "CONFIG GET refused; redis keyspace notifications for expired keys observed"
                );
                return Ok(());
            }
            return Err(Error::backend(
                BACKEND,
                KeyspaceEventsError {
                    current: None,
                    wanted: "Kx".into(),
                    reason: Some(format!(
                        "CONFIG GET was refused ({}) and a scratch key's expiry sent no \
                         keyspace notice within {PROBE_PATIENCE:?}",
                        e.detail().unwrap_or("no detail")
                    )),
                },
            ));
        }
    };
    if has_expired_events(&current) {
        return Ok(());
    }
    let mut wanted = current.clone();
    for f in ['K', 'x'] {
        if !wanted.contains(f) {
            wanted.push(f);
        }
    }
    if mode == KeyspaceEvents::Require {
        return Err(Error::backend(
            BACKEND,
            KeyspaceEventsError {
                current: Some(current),
                wanted,
                reason: None,
            },
        ));
    }
    let set = redis::cmd("CONFIG")
        .arg("SET")
        .arg("notify-keyspace-events")
        .arg(&wanted)
        .query_async::<()>(conn)
        .await;
    match set {
        Ok(()) => {
            tracing::info!(%wanted, "enabled redis keyspace notifications (notify-keyspace-events)");
            Ok(())
        }
        Err(e) if error::is_transport(&e) || is_credentials(&e) => Err(error::map(e, None)),
        Err(e) => Err(Error::backend(
            BACKEND,
            KeyspaceEventsError {
                current: Some(current),
                wanted,
                reason: Some(format!(
                    "CONFIG SET failed: {}",
                    e.detail().unwrap_or("no detail")
                )),
            },
        )),
    }
}

/// A missing or refused password (not an ACL refusing `CONFIG`).
fn is_credentials(e: &redis::RedisError) -> bool {
    matches!(error::auth_error(e), Some(Error::Unauthenticated { .. }))
}

/// Whether the server sends the keyspace notice of an expired key: a
/// scratch key of coord's namespace is set with a 1 ms TTL, then read
/// (which expires it at once) until gone, while a pub/sub connection of
/// its own listens on its keyspace channel for `expired`, for at most
/// [`PROBE_PATIENCE`].
async fn observe_expired_notice(
    conn: &mut ConnectionManager,
    client: &redis::Client,
    prefix: &str,
) -> Result<bool> {
    use futures_util::StreamExt;

    let db = client.get_connection_info().redis_settings().db();
    let key = format!("{prefix}probe:{}", uuid::Uuid::new_v4().simple());
    let channel = format!("__keyspace@{db}__:{key}");
    let probe = async {
        let pubsub = client
            .get_async_pubsub()
            .await
            .map_err(|e| error::map(e, None))?;
        let (mut sink, mut stream) = pubsub.split();
        sink.subscribe(&channel)
            .await
            .map_err(|e| error::map(e, None))?;
        redis::cmd("SET")
            .arg(&key)
            .arg(1)
            .arg("PX")
            .arg(1)
            .query_async::<()>(conn)
            .await
            .map_err(|e| error::map(e, None))?;
        let expire = async {
            loop {
                tokio::time::sleep(Duration::from_millis(5)).await;
                let exists = redis::cmd("EXISTS")
                    .arg(&key)
                    .query_async::<i64>(&mut *conn)
                    .await
                    .map_err(|e| error::map(e, None))?;
                if exists == 0 {
                    return Ok::<_, Error>(());
                }
            }
        };
        expire.await?;
        while let Some(msg) = stream.next().await {
            if msg.get_payload_bytes() == b"expired" {
                return Ok(true);
            }
        }
        Ok(false)
    };
    match tokio::time::timeout(PROBE_PATIENCE, probe).await {
        Ok(seen) => seen,
        Err(_) => Ok(false),
    }
}

/// Check the server's `notify-keyspace-events` again, in the background (a
/// restarted server forgets a `CONFIG SET`). Only logged if it fails:
/// without the notices, dead sessions are still reaped by reads and sweeps.
pub(crate) fn spawn_keyspace_check(core: &Arc<Shared>) {
    if core.keyspace_events == KeyspaceEvents::Assume {
        return;
    }
    let core = Arc::clone(core);
    tokio::spawn(async move {
        let mut conn = core.conn.clone();
        let client = core.hub.client().clone();
        let check = ensure_keyspace_events(&mut conn, &client, &core.prefix, core.keyspace_events);
        match tokio::time::timeout(core.request_timeout, check).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::warn!(session = %core.sid, error = %e, "redis keyspace notifications not checked after a reconnect");
            }
            Err(_) => {
                tracing::debug!(session = %core.sid, "redis keyspace notification check timed out after a reconnect");
            }
        }
    });
}

//! A session's background tasks: the heartbeat, and the pub/sub dispatcher.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use coord_core::backoff::Backoff;
use coord_core::SessionState;
use futures_util::StreamExt;
use redis::aio::PubSubStream;
use tokio::time::Instant;

use crate::connect::ensure_keyspace_events;
use crate::core::{millis, Core};
use crate::error;
use crate::options::KeyspaceEvents;

/// Keep the session key alive, and the lease with it; notice its end.
/// Also sweeps sessions whose end notice nobody heard, every third beat.
///
/// Each `PEXPIRE` that answers 1 renews the lease from the instant it was
/// sent (the server reset the TTL no earlier than that). The heartbeat
/// stops for good once the session is over, given up (`abandon`), or past
/// its lease deadline: a session the client counts as lost must not be
/// kept alive on the server.
pub(crate) async fn heartbeat(core: Arc<Core>) {
    let period = core.ttl / 3;
    let ttl_ms = millis(core.ttl);
    let key = core.session_key();
    let mut beats: u64 = 0;
    loop {
        let suspended = *core.state.borrow() == SessionState::Suspended;
        let pause = if suspended {
            period.min(Duration::from_millis(250))
        } else {
            period
        };
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = core.beat_now.notified() => {}
        }
        if core.state.borrow().is_terminal()
            || core.crashed.load(Ordering::SeqCst)
            || core.abandoned.load(Ordering::SeqCst)
            || core.lease.expired()
        {
            return;
        }
        let mut conn = core.conn.clone();
        let mut pexpire = redis::cmd("PEXPIRE");
        pexpire.arg(&key).arg(ttl_ms);
        let sent = Instant::now();
        match tokio::time::timeout(period, pexpire.query_async::<i64>(&mut conn)).await {
            Ok(Ok(1)) => {
                if core.abandoned.load(Ordering::SeqCst) {
                    return;
                }
                core.lease.renewed(sent);
                core.mark_connected();
            }
            Ok(Ok(_)) => {
                // The key is gone: the session is over on the server (it
                // expired, was ended, or the server restarted without its
                // data). `Expired` now: every hold's `lost()` resolves.
                tracing::debug!(session = %core.sid, "redis session key gone: the session is over on the server");
                core.session_gone(&core.sid.clone(), false);
                return;
            }
            Ok(Err(e)) if !error::is_transport(&e) => {
                tracing::warn!(session = %core.sid, error = %e, "redis heartbeat failed");
            }
            Ok(Err(_)) | Err(_) => core.mark_suspended(),
        }
        beats += 1;
        if beats % 3 == 0 {
            // In a task of its own: a sweep that waits for a slow server
            // must not hold the next heartbeat back.
            core.spawn_sweep();
        }
    }
}

/// Deliver pub/sub notices; reconnect the pub/sub link when it drops.
pub(crate) async fn notice_loop(core: Arc<Core>, mut stream: PubSubStream) {
    let keyspace_prefix = core
        .hub
        .keyspace_pattern
        .strip_suffix('*')
        .unwrap_or_default()
        .to_owned();
    let mut state = core.state.subscribe();
    loop {
        loop {
            let msg = tokio::select! {
                msg = stream.next() => msg,
                // Over: drop the connection; waiters end through the state.
                _ = state.wait_for(|s| s.is_terminal()) => return,
            };
            let Some(msg) = msg else { break };
            let channel = msg.get_channel_name();
            if channel == core.hub.ended_channel {
                if let Ok(sid) = msg.get_payload::<String>() {
                    core.session_gone(&sid, true);
                }
            } else if let Some(sid) = channel.strip_prefix(&keyspace_prefix) {
                if msg.get_payload_bytes() == b"expired" {
                    core.session_gone(sid, false);
                }
            } else {
                core.hub.fire(channel, msg.get_payload_bytes());
            }
        }
        core.hub.disconnected().await;
        tracing::warn!(session = %core.sid, "redis pub/sub connection lost; reconnecting");
        let backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(1));
        let mut attempt = 0;
        loop {
            if core.state.borrow().is_terminal() {
                return;
            }
            backoff.sleep(&mut attempt).await;
            match core.hub.connect().await {
                Ok(s) => {
                    stream = s;
                    break;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "redis pub/sub reconnect failed");
                }
            }
        }
        // Notices sent while it was down are lost: catch up on sessions
        // (in the background: notices keep flowing meanwhile).
        core.spawn_sweep();
        // The server may have restarted: renew now, so a session it lost
        // with its data is found over at once (the renewal answers 0),
        // and make sure it still sends the keyspace notices.
        core.beat_now.notify_one();
        spawn_keyspace_check(&core);
    }
}

/// Check the server's `notify-keyspace-events` again, in the background (a
/// restarted server forgets a `CONFIG SET`). Only logged if it fails:
/// without the notices, dead sessions are still reaped by reads and sweeps.
fn spawn_keyspace_check(core: &Arc<Core>) {
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

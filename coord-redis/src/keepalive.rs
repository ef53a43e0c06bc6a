//! The session's keep-alive: the heartbeat that renews the session key
//! (and the lease with it) every third of the session timeout, and notices
//! the session's end.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use coord_core::SessionState;
use tokio::time::Instant;

use crate::error;
use crate::shared::{millis, Shared};

/// Keep the session key alive, and the lease with it; notice its end.
/// Also sweeps sessions whose end notice nobody heard, every third beat.
///
/// Each `PEXPIRE` that answers 1 renews the lease from the instant it was
/// sent (the server reset the TTL no earlier than that). The heartbeat
/// stops for good once the session is over, given up (`abandon`), or past
/// its lease deadline: a session the client counts as lost must not be
/// kept alive on the server.
pub(crate) async fn heartbeat(core: Arc<Shared>) {
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
        if beats.is_multiple_of(3) {
            // In a task of its own: a sweep that waits for a slow server
            // must not hold the next heartbeat back.
            core.spawn_sweep();
        }
    }
}

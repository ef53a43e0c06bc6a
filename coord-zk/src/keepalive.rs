//! Keeping the session's lease: the lease pings (an `exists` on the
//! session's root every third of the session timeout).

use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use coord_core::backend::lease::LeaseClock;
use tokio::time::Instant;
use zookeeper_client as zk;

use crate::handle::client_in;
use crate::shared::Shared;

/// How many lease pings a session sends per session timeout (see
/// [`ping`]): every `session_timeout / PINGS_PER_TIMEOUT`.
const PINGS_PER_TIMEOUT: u32 = 3;

/// The shortest pause between two lease pings, whatever the timeout.
const MIN_PING_PERIOD: Duration = Duration::from_millis(10);

/// Renew the session's lease: every `session_timeout / 3`, send a cheap read
/// (`exists` on the session's root, `/` under the chroot) and, when the
/// server answers, move the lease deadline to its send time plus the usable
/// part of the timeout. The client's own pings are invisible here; any
/// answered request proves the server heard the session no earlier than it
/// was sent, even one that waited in the client for a connection.
///
/// Holds the client only for the instant it takes to send (through a weak
/// handle on its slot, so dropping every session handle still closes the
/// session); not counted in [`crate::ZkSession::requests_sent`]. Ends when the
/// session ends, is abandoned or closed (its slot emptied), or is dropped.
pub(crate) async fn ping(
    slot: Weak<RwLock<Option<zk::Client>>>,
    shared: Arc<Shared>,
    lease: Arc<LeaseClock>,
    session_timeout: Duration,
) {
    let period = (session_timeout / PINGS_PER_TIMEOUT).max(MIN_PING_PERIOD);
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut states = shared.subscribe();
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = states.wait_for(|s| s.is_terminal()) => return,
        }
        let Some(slot) = slot.upgrade() else { return };
        let Ok(client) = client_in(&slot) else { return };
        drop(slot);
        let sent = Instant::now();
        // The request leaves now; waiting for its answer needs no client.
        let answer = client.check_stat("/");
        drop(client);
        let lease = lease.clone();
        tokio::spawn(async move {
            if let Ok(Ok(_)) = tokio::time::timeout(session_timeout, answer).await {
                lease.renewed(sent);
            }
        });
    }
}

//! The task that follows the client's state watcher and keeps the
//! session's state ([`crate::shared::Shared`]), confirming a reconnection
//! with an answered request before it reports `Connected`.

use std::sync::{Arc, RwLock, Weak};

use coord_core::backend::lease::LeaseClock;
use coord_core::SessionState;
use tokio::time::Instant;
use zookeeper_client as zk;

use crate::error::is_connection_error;
use crate::handle::client_in;
use crate::shared::Shared;

/// Follow the client's state watcher until the session ends.
///
/// A `SyncConnected` after a reconnection is `Connected` only once a
/// request sent after it is answered ([`confirm`]); until then the session
/// stays `Suspended`. zookeeper-client 0.11 reports `SyncConnected` as
/// soon as the server accepts the session on a new connection, while that
/// connection's handshake (authentication, the watches set again, a ping)
/// is still under way; a connection lost then is not reported: the client
/// goes on trying others (its backoff still growing, from the attempt that
/// failed) and says `Disconnected` only once one is made. With the server
/// out of reach it stays `SyncConnected` without any connection, requests
/// waiting, until the lease runs out; a fault that waits for the session
/// to notice the loss never ends (the flake of
/// `prim_txn_cut_or_lost_answer_never_half_applied` on a loaded machine:
/// the cut hit the handshake after a lost answer's reconnection). The
/// client sends requests only on a connection whose handshake is over,
/// and reports the loss of such a connection at once, so an answered
/// request proves the `SyncConnected` true.
pub(crate) fn follow(
    shared: Arc<Shared>,
    mut watcher: zk::StateWatcher,
    slot: Weak<RwLock<Option<zk::Client>>>,
    lease: Arc<LeaseClock>,
) {
    tokio::spawn(async move {
        let mut state = watcher.peek_state();
        loop {
            let next = shared.map_state(state);
            let confirmation = (next == SessionState::Connected && shared.get() != next)
                .then(|| confirm(&slot))
                .flatten();
            match confirmation {
                Some(answered) => {
                    tokio::select! {
                        biased;
                        // The client moved on before the answer (the
                        // connection was lost: `Disconnected` once another
                        // is made, or the session ended).
                        changed = watcher.changed() => {
                            state = changed;
                            continue;
                        }
                        sent = answered => {
                            if let Some(sent) = sent {
                                lease.renewed(sent);
                                shared.set(next);
                            }
                            // No answer: that connection is gone; the
                            // client reports the next state.
                        }
                    }
                }
                None => shared.set(next),
            }
            if state.is_terminated() {
                break;
            }
            state = watcher.changed().await;
        }
    });
}

/// Send a request now (an `exists` on the session's root, as a lease ping)
/// through the client in `slot` (`None` once the client is gone: the
/// session is closing). Resolves with the request's send time once the
/// server answered it, `None` when the connection was lost first.
fn confirm(
    slot: &Weak<RwLock<Option<zk::Client>>>,
) -> Option<impl std::future::Future<Output = Option<Instant>>> {
    let slot = slot.upgrade()?;
    let client = client_in(&slot).ok()?;
    drop(slot);
    let sent = Instant::now();
    // The request leaves now; its answer needs no client (holding one
    // would keep a dropped session open).
    let answer = client.check_stat("/");
    drop(client);
    Some(async move {
        match answer.await {
            Ok(_) => Some(sent),
            // The connection was lost, or the session is over (which the
            // state watcher reports).
            Err(
                zk::Error::SessionExpired
                | zk::Error::SessionMoved
                | zk::Error::ClientClosed
                | zk::Error::AuthFailed,
            ) => None,
            Err(e) if is_connection_error(&e) => None,
            // Any other error is the server's answer too.
            Err(_) => Some(sent),
        }
    })
}

//! The supervisor task of a [`Client`](super::Client): open a session,
//! follow it until it ends, open the next.
//!
//! 1. **Open** a session with the client's [`Open`]; on failure report
//!    `OpenFailed`, wait the backoff, try again.
//! 2. **Follow** it: publish it as the live generation, report its
//!    suspensions and reconnections, until its state is final (the
//!    [`Session`]'s own view: expired on the server, or given up at its
//!    lease deadline, or closed). Only then is it unpublished and reported
//!    `Lost`, so the next session never overlaps it.
//! 3. **Wait** the backoff (reset after each session that opened), and go
//!    back to 1.
//!
//! A stop (the client closed or dropped) ends the loop at any step: the
//! live session is closed, and `Closed` is the last event.

use std::sync::Arc;

use tokio::sync::watch;

use super::events::ClientEvent;
use super::open::Open;
use super::state::Shared;
use crate::backend::backoff::Backoff;
use crate::backend::node::SessionState;
use crate::error::Error;
use crate::session::Session;

/// Run the client until it is stopped; see the module docs.
pub(super) async fn supervise(shared: Arc<Shared>, open: Box<dyn Open>, backoff: Backoff) {
    let mut stop = shared.stop.subscribe();
    let mut attempt = 0u32;
    let mut failures = 0u32;
    let mut generation = 0u64;
    loop {
        // 1. Open.
        let opened = tokio::select! {
            biased;
            _ = stopped(&mut stop) => break,
            r = open.open() => r,
        };
        let failed = match opened {
            Ok(s) if !s.state().is_terminal() => Ok(s),
            Ok(s) => Err(Error::ConnectionLost(format!(
                "the new session {} was over at once",
                s.id()
            ))),
            Err(e) => Err(e),
        };
        let session = match failed {
            Ok(s) => s,
            Err(e) => {
                failures = failures.saturating_add(1);
                let error = Arc::new(e);
                shared.publish(
                    |_| {},
                    ClientEvent::OpenFailed {
                        attempt: failures,
                        error,
                    },
                );
                if pause(&backoff, &mut attempt, &mut stop).await {
                    break;
                }
                continue;
            }
        };
        failures = 0;
        attempt = 0;
        generation += 1;
        // 2. Follow.
        match follow(&shared, &session, generation, &mut stop).await {
            Followed::Ended(reason) => {
                let id = session.id();
                drop(session);
                shared.publish(
                    |c| c.session = None,
                    ClientEvent::Lost {
                        generation,
                        id,
                        reason: Arc::new(reason),
                    },
                );
            }
            Followed::Stopped => {
                let closed = session.close().await;
                shared.current.send_modify(|c| c.session = None);
                drop(session);
                if let Err(e) = closed {
                    *shared.close_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                }
                break;
            }
        }
        // 3. Wait.
        if pause(&backoff, &mut attempt, &mut stop).await {
            break;
        }
    }
    shared.publish(
        |c| {
            c.session = None;
            c.closed = true;
        },
        ClientEvent::Closed,
    );
    shared.done.send_replace(true);
}

/// How following a session ended.
enum Followed {
    /// It ended by itself, for this reason.
    Ended(Error),
    /// The client was stopped while it lived.
    Stopped,
}

/// Step 2: publish `session` and report its state changes until it ends
/// or the client is stopped.
async fn follow(
    shared: &Shared,
    session: &Session,
    generation: u64,
    stop: &mut watch::Receiver<bool>,
) -> Followed {
    let id = session.id();
    let mut states = session.state_watch();
    let mut suspended = false;
    shared.publish(
        |c| {
            c.generation = generation;
            c.session = Some(session.clone());
            c.suspended = false;
        },
        ClientEvent::Started {
            generation,
            id: id.clone(),
        },
    );
    loop {
        let state = *states.borrow_and_update();
        match state {
            SessionState::Suspended if !suspended => {
                suspended = true;
                shared.publish(
                    |c| c.suspended = true,
                    ClientEvent::Suspended {
                        generation,
                        id: id.clone(),
                    },
                );
            }
            SessionState::Connected if suspended => {
                suspended = false;
                shared.publish(
                    |c| c.suspended = false,
                    ClientEvent::Reconnected {
                        generation,
                        id: id.clone(),
                    },
                );
            }
            s if s.is_terminal() => {
                return Followed::Ended(s.end_error().unwrap_or(Error::SessionClosed));
            }
            _ => {}
        }
        tokio::select! {
            biased;
            _ = stopped(stop) => return Followed::Stopped,
            changed = states.changed() => {
                if changed.is_err() {
                    return Followed::Ended(session.ended().await);
                }
            }
        }
    }
}

/// Step 3: the backoff's next pause; `true` if the client was stopped
/// meanwhile.
async fn pause(backoff: &Backoff, attempt: &mut u32, stop: &mut watch::Receiver<bool>) -> bool {
    tokio::select! {
        biased;
        _ = stopped(stop) => true,
        () = backoff.sleep(attempt) => false,
    }
}

/// Resolve once the client is stopped.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

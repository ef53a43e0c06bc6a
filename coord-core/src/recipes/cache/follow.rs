//! The task of a cache that follows a [`Client`]: mirror on each of its
//! sessions in turn, reporting [`CacheEvent::Reset`] when one ends and the
//! difference once the next has reloaded.

use tokio::sync::mpsc;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::recipes::cache::event::{CacheEvent, Shape, Shared};
use crate::recipes::cache::worker::mirror;
use crate::session::Session;
use crate::telemetry::TARGET;

/// Spawn the task: it ends (sending the error that ended it) only when the
/// client is closed, or on an error that is not the end of a session.
pub(crate) fn spawn(
    client: Client,
    root: String,
    shape: Shape,
    view: Shared,
    tx: mpsc::UnboundedSender<Result<CacheEvent>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let e = follow(&client, root, shape, &view, &tx).await;
        let _ = tx.send(Err(e));
    })
}

/// Whether `e`, which ended a run on `session`, is that session's end (the
/// next session takes over) rather than an error of its own.
fn session_ended(session: &Session, e: &Error) -> bool {
    session.state().is_terminal() || e.is_session_end()
}

/// Mirror on every session of `client`, one after another; the error that
/// ends the cache.
async fn follow(
    client: &Client,
    root: String,
    shape: Shape,
    view: &Shared,
    tx: &mpsc::UnboundedSender<Result<CacheEvent>>,
) -> Error {
    let mut after = 0;
    loop {
        let g = match client.next_session(after).await {
            Ok(g) => g,
            // The client is closed.
            Err(e) => return e,
        };
        let mut loaded = false;
        let e = mirror(
            g.session.clone(),
            root.clone(),
            shape,
            view,
            tx,
            false,
            &mut loaded,
        )
        .await;
        if client.is_closed() {
            return Error::SessionClosed;
        }
        if !session_ended(&g.session, &e) {
            return e;
        }
        tracing::info!(
            target: TARGET,
            root = root.as_str(),
            generation = g.number,
            error = %e,
            "cache: the session ended; reloading on the client's next one"
        );
        // The view shown is now stale. Only once: a session that ended
        // before its load was shown leaves the view as the last one shown,
        // so the next reload still reports the difference from it.
        if loaded {
            let _ = tx.send(Ok(CacheEvent::Reset));
        }
        after = g.number;
    }
}

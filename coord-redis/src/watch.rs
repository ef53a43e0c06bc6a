//! Watches on Redis: the pub/sub dispatcher that delivers notices (and
//! reconnects the pub/sub link), and the node and children watches built
//! on them, each subscribed (and confirmed) before its read.

use std::sync::Arc;
use std::time::Duration;

use coord_core::backend::Backoff;
use coord_core::{Child, Error, Node, Result, SessionState, Watch};
use futures_util::StreamExt;
use redis::aio::PubSubStream;
use tokio::sync::watch;

use crate::keyspace::spawn_keyspace_check;
use crate::notices::Waiter;
use crate::shared::Shared;

/// Deliver pub/sub notices; reconnect the pub/sub link when it drops.
pub(crate) async fn notice_loop(core: Arc<Shared>, mut stream: PubSubStream) {
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

/// A node watched through one of its channels (`w:<path>`, published at
/// its deletion; `u:<path>`, at its deletion and at every set), and what it
/// was when read.
struct WatchedNode {
    channel: String,
    path: String,
    stamp: u64,
    /// The version read, when a set counts as a change (`u:`); `None` when
    /// only the deletion does (`w:`).
    version: Option<u64>,
}

/// Resolve at the first change to the watched node after its read, as
/// `waiter` (registered before the read) or a read after a spurious wake
/// tells, or with the session's end.
async fn node_changed(core: Arc<Shared>, node: WatchedNode, mut waiter: Waiter) -> Result<()> {
    loop {
        let notice = tokio::select! {
            n = waiter.fired() => n,
            e = ended(core.state.subscribe()) => return Err(e),
        };
        // A notice carries the stamp of the node it is about: ours, or a
        // later node's at the same path (so ours went first), is the
        // change. An older node's (changed before our read), or a dropped
        // pub/sub link (no notice), means: subscribe again (the waiter is
        // one-shot) and look.
        if let Some(payload) = notice {
            let about = std::str::from_utf8(&payload)
                .ok()
                .and_then(|s| s.parse::<u64>().ok());
            if about.is_none_or(|s| s >= node.stamp) {
                return Ok(());
            }
        }
        core.check_open()?;
        waiter = core.hub.register(node.channel.clone()).await?;
        match core.read_node(&node.path).await? {
            Some(now)
                if now.stat.stamp == node.stamp
                    && node.version.is_none_or(|v| v == now.stat.version) => {}
            _ => return Ok(()),
        }
    }
}

async fn ended(mut state: watch::Receiver<SessionState>) -> Error {
    let end = match state.wait_for(|s| s.is_terminal()).await {
        Ok(s) => *s,
        Err(_) => SessionState::Closed,
    };
    end.end_error().unwrap_or(Error::SessionClosed)
}

/// Register for `channel`, mapping a session end to its error.
pub(crate) async fn register(core: &Shared, channel: String) -> Result<Waiter> {
    core.check_open()?;
    core.hub.register(channel).await
}

/// Watch the node at `path` through `channel`: subscribed (and
/// confirmed) before the read, so no change after the read slips
/// between. `None` when there is no node (the waiter is dropped, which
/// unsubscribes).
pub(crate) async fn watch_node(
    core: &Arc<Shared>,
    channel: String,
    path: &str,
    sets_count: bool,
) -> Result<Option<(Node, Watch)>> {
    let waiter = register(core, channel.clone()).await?;
    let Some(node) = core.read_node(path).await? else {
        return Ok(None);
    };
    let watched = WatchedNode {
        channel,
        path: path.to_owned(),
        stamp: node.stat.stamp,
        version: sets_count.then_some(node.stat.version),
    };
    let watch = Watch::new(node_changed(Arc::clone(core), watched, waiter));
    Ok(Some((node, watch)))
}

/// Children of `dir`, and a watch that fires at their next change (or at
/// the session's end).
pub(crate) async fn children_watch(core: &Shared, dir: &str) -> Result<(Vec<Child>, Watch)> {
    // Subscribed (and confirmed) before the read: nothing slips between.
    let mut waiter = register(core, format!("{}cw:{dir}", core.prefix)).await?;
    let children = core.children(dir).await?;
    let state = core.state.subscribe();
    let watch = Watch::new(async move {
        tokio::select! {
            _ = waiter.fired() => Ok(()),
            e = ended(state) => Err(e),
        }
    });
    Ok((children, watch))
}

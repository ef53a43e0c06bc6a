//! Waiting for changes: a node's deletion ([`wait_gone`]) and a change to a
//! directory's children ([`children_changed`]).
//!
//! Both watch from the revision right after the read they follow, so a
//! change that lands between the read and the watch is replayed by etcd and
//! never missed. A watch stream that breaks is opened again from the same
//! revision, so a dropped connection neither loses a change nor fires for
//! nothing; only a compaction past that revision makes the children watch
//! fire spuriously (allowed: callers read again).

use std::sync::Arc;
use std::time::Duration;

use coord_core::{Error, Result, SessionState};
use etcd_client::{Event, EventType, GetOptions, WatchFilterType, WatchOptions};
use tokio::sync::watch;

use crate::keys::direct_child;
use crate::shared::Shared;

/// How a watch stream ended.
enum WatchEnd {
    /// An event the caller waits for.
    Fired,
    /// The server cancelled the watch (its start revision was compacted).
    Cancelled,
    /// The stream broke (connection lost); open it again.
    Broken,
}

/// Resolve with the session's end.
pub(crate) async fn session_end(mut rx: watch::Receiver<SessionState>) -> Error {
    let state = match rx.wait_for(|s| s.is_terminal()).await {
        Ok(s) => *s,
        Err(_) => SessionState::Closed,
    };
    state.end_error().unwrap_or(Error::SessionClosed)
}

/// Open one watch stream with the given watchers and read it until `fires`
/// accepts an event, the server cancels, or the stream breaks. Dropping the
/// stream on return removes the watchers from the server.
async fn watch_once(
    shared: &Shared,
    watchers: &[(String, WatchOptions)],
    fires: &(dyn Fn(&Event) -> bool + Sync),
) -> WatchEnd {
    let Some(((first_key, first_opts), more)) = watchers.split_first() else {
        return WatchEnd::Cancelled;
    };
    let mut client = shared.client.watch_client();
    let open = tokio::time::timeout(
        shared.request_timeout,
        client.watch(first_key.as_str(), Some(first_opts.clone())),
    );
    let mut stream = match open.await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, key = %first_key, "etcd watch did not open");
            return WatchEnd::Broken;
        }
        Err(_) => return WatchEnd::Broken,
    };
    for (key, opts) in more {
        if stream
            .watch(key.as_str(), Some(opts.clone()))
            .await
            .is_err()
        {
            return WatchEnd::Broken;
        }
    }
    loop {
        match stream.message().await {
            Ok(Some(resp)) => {
                if resp.canceled() {
                    tracing::debug!(
                        reason = resp.cancel_reason(),
                        compact_revision = resp.compact_revision(),
                        "etcd cancelled a watch"
                    );
                    return WatchEnd::Cancelled;
                }
                if resp.events().iter().any(fires) {
                    return WatchEnd::Fired;
                }
            }
            Ok(None) => return WatchEnd::Broken,
            Err(e) => {
                tracing::debug!(error = %e, "etcd watch stream broke");
                return WatchEnd::Broken;
            }
        }
    }
}

/// Pause before opening a broken watch again.
async fn backoff(attempt: &mut u32) {
    let ms = 50u64 << (*attempt).min(5);
    *attempt = attempt.saturating_add(1);
    tokio::time::sleep(Duration::from_millis(ms.min(1000))).await;
}

/// Resolve once the key is gone: it existed at `revision` with
/// `create_revision`, and we watch its deletions from `revision + 1`.
/// Resolves with the session's end if that comes first.
pub(crate) async fn wait_gone(
    shared: Arc<Shared>,
    key: String,
    create_revision: i64,
    revision: i64,
) -> Result<()> {
    let end = session_end(shared.state.subscribe());
    tokio::select! {
        biased;
        e = end => Err(e),
        () = wait_deleted(&shared, &key, create_revision, revision) => Ok(()),
    }
}

async fn wait_deleted(shared: &Shared, key: &str, mut create_revision: i64, mut revision: i64) {
    let mut attempt = 0;
    loop {
        let opts = WatchOptions::new()
            .with_start_revision(revision.saturating_add(1))
            .with_filters([WatchFilterType::NoPut]);
        let watchers = [(key.to_owned(), opts)];
        let fires = |e: &Event| e.event_type() == EventType::Delete;
        match watch_once(shared, &watchers, &fires).await {
            WatchEnd::Fired => return,
            WatchEnd::Broken => backoff(&mut attempt).await,
            WatchEnd::Cancelled => {}
        }
        // Cancelled (compacted) or broken: read again. Gone, or made again
        // since (another create revision), means it was deleted meanwhile.
        loop {
            let mut kv = shared.client.kv_client();
            let read = tokio::time::timeout(
                shared.request_timeout,
                kv.get(key, Some(GetOptions::new().with_keys_only())),
            )
            .await;
            match read {
                Ok(Ok(resp)) => {
                    match resp.kvs().first() {
                        None => return,
                        Some(kv) if kv.create_revision() != create_revision => return,
                        Some(kv) => create_revision = kv.create_revision(),
                    }
                    if let Some(h) = resp.header() {
                        revision = h.revision();
                    }
                    break;
                }
                // The session's end (watched above) stops this loop.
                _ => backoff(&mut attempt).await,
            }
        }
    }
}

/// Resolve at the first change to the children of a directory after
/// `revision`: a direct child under `prefix` created or deleted, or the
/// directory's own key (`dir_key`; none for the root) deleted. Resolves with
/// the session's end if that comes first.
pub(crate) async fn children_changed(
    shared: Arc<Shared>,
    dir_key: Option<String>,
    prefix: String,
    revision: i64,
) -> Result<()> {
    let end = session_end(shared.state.subscribe());
    tokio::select! {
        biased;
        e = end => Err(e),
        () = children_changed_inner(&shared, dir_key, prefix, revision) => Ok(()),
    }
}

async fn children_changed_inner(
    shared: &Shared,
    dir_key: Option<String>,
    prefix: String,
    revision: i64,
) {
    let start = revision.saturating_add(1);
    let mut watchers = vec![(
        prefix.clone(),
        WatchOptions::new().with_prefix().with_start_revision(start),
    )];
    if let Some(k) = &dir_key {
        watchers.push((
            k.clone(),
            WatchOptions::new()
                .with_start_revision(start)
                .with_filters([WatchFilterType::NoPut]),
        ));
    }
    let fires = |e: &Event| {
        let Some(kv) = e.kv() else { return false };
        let Ok(key) = std::str::from_utf8(kv.key()) else {
            return false;
        };
        let deleted = e.event_type() == EventType::Delete;
        if dir_key.as_deref() == Some(key) {
            return deleted;
        }
        // A put with version 1 is a create; later puts are sets.
        direct_child(&prefix, key).is_some() && (deleted || kv.version() == 1)
    };
    let mut attempt = 0;
    loop {
        match watch_once(shared, &watchers, &fires).await {
            // A compaction past our revision: we cannot know what changed,
            // so fire (spuriously, perhaps); the caller reads again.
            WatchEnd::Fired | WatchEnd::Cancelled => return,
            WatchEnd::Broken => backoff(&mut attempt).await,
        }
    }
}

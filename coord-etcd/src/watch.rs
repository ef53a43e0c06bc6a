//! Waiting for changes: a node's deletion ([`wait_gone`]), any change to a
//! node ([`wait_changed`]) and a change to a directory's children
//! ([`children_changed`]).
//!
//! Each watches from the revision right after the read it follows, so a
//! change that lands between the read and the watch is replayed by etcd and
//! never missed. A watch stream that breaks is opened again from the same
//! revision, so a dropped connection neither loses a change nor fires for
//! nothing; only a compaction past that revision makes the children watch
//! fire spuriously (allowed: callers read again); a key watch then reads the
//! key again and compares.

use std::sync::Arc;
use std::time::Duration;

use coord_core::{Error, Result, SessionState, TreeChange, TreeWatch};
use etcd_client::{Event, EventType, GetOptions, WatchFilterType, WatchOptions};
use tokio::sync::{mpsc, watch};

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

/// Pause before opening a broken watch again: 50 ms, doubling to 1 s, with
/// jitter (coord's one [`Backoff`](coord_core::backoff::Backoff)).
async fn backoff(attempt: &mut u32) {
    const WATCH: coord_core::backoff::Backoff =
        coord_core::backoff::Backoff::new(Duration::from_millis(50), Duration::from_secs(1));
    WATCH.sleep(attempt).await;
}

/// What change of one key a key watch waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyChange {
    /// Its deletion (by anyone, or by its lease's end).
    Deleted,
    /// Any put to it (a set, whatever the value) or its deletion.
    Any,
}

/// One key as it was read, and what change of it to wait for.
struct WatchedKey {
    key: String,
    what: KeyChange,
    /// The key's create revision: a key found with another one is another
    /// node at the same path, so ours was deleted.
    create_revision: i64,
    /// The key's mod revision when read (only [`KeyChange::Any`] looks).
    mod_revision: i64,
    /// The revision the key was read at: the watch starts right after it.
    revision: i64,
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
    let watched = WatchedKey {
        key,
        what: KeyChange::Deleted,
        create_revision,
        mod_revision: 0,
        revision,
    };
    wait_key(shared, watched).await
}

/// Resolve at the key's first change after `revision`, when it was read
/// with `create_revision` and `mod_revision`: a put to it (even of the same
/// value) or its deletion. Resolves with the session's end if that comes
/// first.
pub(crate) async fn wait_changed(
    shared: Arc<Shared>,
    key: String,
    create_revision: i64,
    mod_revision: i64,
    revision: i64,
) -> Result<()> {
    let watched = WatchedKey {
        key,
        what: KeyChange::Any,
        create_revision,
        mod_revision,
        revision,
    };
    wait_key(shared, watched).await
}

async fn wait_key(shared: Arc<Shared>, watched: WatchedKey) -> Result<()> {
    let end = session_end(shared.state.subscribe());
    tokio::select! {
        biased;
        e = end => Err(e),
        () = key_changed(&shared, watched) => Ok(()),
    }
}

async fn key_changed(shared: &Shared, mut w: WatchedKey) {
    let mut attempt = 0;
    loop {
        let mut opts = WatchOptions::new().with_start_revision(w.revision.saturating_add(1));
        if w.what == KeyChange::Deleted {
            // The server need not send the puts we would ignore.
            opts = opts.with_filters([WatchFilterType::NoPut]);
        }
        let watchers = [(w.key.clone(), opts)];
        let what = w.what;
        let fires = |e: &Event| what == KeyChange::Any || e.event_type() == EventType::Delete;
        match watch_once(shared, &watchers, &fires).await {
            WatchEnd::Fired => return,
            WatchEnd::Broken => backoff(&mut attempt).await,
            WatchEnd::Cancelled => {}
        }
        // Cancelled (compacted) or broken: read again. Gone, or made again
        // since (another create revision), means it was deleted meanwhile;
        // another mod revision, that it was set.
        loop {
            let mut kv = shared.client.kv_client();
            let read = tokio::time::timeout(
                shared.request_timeout,
                kv.get(w.key.as_str(), Some(GetOptions::new().with_keys_only())),
            )
            .await;
            match read {
                Ok(Ok(resp)) => {
                    match resp.kvs().first() {
                        None => return,
                        Some(kv) if kv.create_revision() != w.create_revision => return,
                        Some(kv)
                            if w.what == KeyChange::Any && kv.mod_revision() != w.mod_revision =>
                        {
                            return
                        }
                        Some(_) => {}
                    }
                    if let Some(h) = resp.header() {
                        w.revision = h.revision();
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

/// A tree watch on the node at `path` and every node under it (see
/// [`coord_core::PrimitiveSession::watch_tree`]): one watch over the key
/// range of the subtree, starting right after the revision read here, so a
/// change applied after the call is reported. A broken stream is opened
/// again from the revision after the last event delivered (nothing missed,
/// nothing repeated); a compaction past it sends
/// [`TreeChange::Resync`] and watches on from the compaction revision.
pub(crate) async fn watch_tree(shared: Arc<Shared>, path: &str) -> Result<TreeWatch> {
    shared.check_open()?;
    let (start, end) = shared.keys.subtree_range(path);
    let resp = shared
        .get(
            &start,
            Some(GetOptions::new().with_keys_only().with_limit(1)),
        )
        .await
        .map_err(crate::error::at(path))?;
    let revision = shared.saw_header(resp.header());
    let (tx, rx) = mpsc::unbounded_channel();
    let root = path.to_owned();
    let feed = tokio::spawn(async move {
        let end_error = session_end(shared.state.subscribe());
        let fed = feed_tree(&shared, &root, start, end, revision + 1, &tx);
        tokio::select! {
            biased;
            e = end_error => {
                let _ = tx.send(Err(e));
            }
            () = fed => {}
        }
    });
    Ok(TreeWatch::new(rx, feed))
}

/// Send every change in `[start, end)` from revision `next` on, until the
/// receiver is gone.
async fn feed_tree(
    shared: &Shared,
    root: &str,
    start: String,
    end: String,
    mut next: i64,
    tx: &mpsc::UnboundedSender<Result<TreeChange>>,
) {
    let mut attempt = 0;
    loop {
        let opts = WatchOptions::new()
            .with_range(end.as_str())
            .with_start_revision(next);
        let mut client = shared.client.watch_client();
        let open = tokio::time::timeout(
            shared.request_timeout,
            client.watch(start.as_str(), Some(opts)),
        );
        let mut stream = match open.await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "etcd tree watch did not open");
                backoff(&mut attempt).await;
                continue;
            }
            Err(_) => {
                backoff(&mut attempt).await;
                continue;
            }
        };
        loop {
            match stream.message().await {
                Ok(Some(resp)) => {
                    attempt = 0;
                    if resp.canceled() {
                        // Compacted past `next`: what happened since is
                        // lost. Watch on from the oldest revision kept
                        // (repeating some changes is harmless; the
                        // caller reads everything again anyway).
                        tracing::debug!(
                            reason = resp.cancel_reason(),
                            compact_revision = resp.compact_revision(),
                            "etcd cancelled a tree watch"
                        );
                        if tx.send(Ok(TreeChange::Resync)).is_err() {
                            return;
                        }
                        next = resp.compact_revision().max(next);
                        break;
                    }
                    for ev in resp.events() {
                        let Some(kv) = ev.kv() else { continue };
                        next = next.max(kv.mod_revision().saturating_add(1));
                        let Ok(key) = std::str::from_utf8(kv.key()) else {
                            continue;
                        };
                        let Some(p) = shared.keys.path_of(key) else {
                            continue;
                        };
                        if coord_core::path::is_within(&p, root)
                            && tx.send(Ok(TreeChange::Changed(p))).is_err()
                        {
                            return;
                        }
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(error = %e, "etcd tree watch stream broke");
                    break;
                }
            }
        }
        if tx.is_closed() {
            return;
        }
        backoff(&mut attempt).await;
    }
}

//! Waiting for changes: a node's deletion ([`wait_gone`]), any change to a
//! node ([`wait_changed`]) and a change to a directory's children
//! ([`children_changed`]).
//!
//! Each wait follows a read at some revision R and must see every change
//! after R. Its watch starts at the server's current revision (no start
//! revision), never at R + 1: a watch whose start revision the store has
//! already passed is put in etcd's *unsynced* group, which the server
//! catches up only every 100 ms, so under contention every hand-off of a
//! lock would wait for that tick. A watch from "now" is *synced*: events
//! reach it as they are applied. The `created` answer carries the revision
//! W from which on the watch sees everything (see [`open`]); when W > R,
//! one read covers (R, W]: for a key, a keys-only Get; for children, one
//! read-only Txn of counts. Events at or before R (a member behind the one
//! that answered the read) are ignored. So a change that lands between
//! the read and the watch is never missed, and none fires twice.
//!
//! A watch stream that breaks (or is cancelled) is opened again the same
//! way, and the same read covers what happened while it was down. Only a
//! compaction past R makes the children watch fire spuriously (allowed:
//! callers read again); a key watch reads the key's current state, which
//! no compaction hides.

use std::sync::Arc;
use std::time::Duration;

use coord_core::{Error, Result, SessionState};
use etcd_client::{
    Event, EventType, GetOptions, Txn, TxnOp, TxnOpResponse, WatchFilterType, WatchOptions,
    WatchResponse, WatchStream,
};
use tokio::sync::watch;

use crate::keys::direct_child;
use crate::shared::Shared;

/// How a watch stream ended.
enum WatchEnd {
    /// An event the caller waits for.
    Fired,
    /// The server cancelled the watch (one that fell behind past a
    /// compaction, or one it refused); open it again.
    Cancelled,
    /// The stream broke (connection lost); open it again.
    Broken,
    /// The server cancelled the watch as not permitted: the token the
    /// stream opened with is gone. Authenticate again
    /// ([`Shared::refresh_token`]), then open it again.
    Denied,
}

/// Whether a watch cancel's reason is etcd refusing its permission (as it
/// does for a token it dropped: `rpctypes.ErrGRPCPermissionDenied`, or
/// an invalid token).
pub(crate) fn denied(reason: &str) -> bool {
    reason.contains("permission denied") || reason.contains("auth token")
}

/// Resolve with the session's end.
pub(crate) async fn session_end(mut rx: watch::Receiver<SessionState>) -> Error {
    let state = match rx.wait_for(|s| s.is_terminal()).await {
        Ok(s) => *s,
        Err(_) => SessionState::Closed,
    };
    state.end_error().unwrap_or(Error::SessionClosed)
}

/// A watch stream whose watchers are all registered.
struct Opened {
    stream: WatchStream,
    /// The highest revision their `created` answers carried: every event
    /// after it reaches the stream (see [`open`]).
    synced_at: i64,
}

/// Open one watch stream with the given watchers, none with a start
/// revision, and read their `created` answers (one each, in the order the
/// watchers were sent). An event that `fires` accepts, after revision
/// `after`, may come before the last `created`: then `Err(Fired)`.
///
/// Why every event after `synced_at` comes on the stream (etcd 3.4
/// `etcdserver/api/v3rpc/watch.go`, `recvLoop`, and
/// `mvcc/watchable_store.go`, `watch`): for a create request with
/// `start_revision` 0 the server reads the store's revision `wsrev`, asks
/// the store for a watcher from `wsrev + 1` and answers `created` with
/// header revision `wsrev`. The store makes that watcher synced
/// (`minRev = currentRev + 1`, which is `wsrev + 1`) when no write landed in
/// between, else unsynced with `minRev = wsrev + 1` (caught up from there);
/// either way it sends every event of revision `wsrev + 1` on. The server
/// holds a watcher's events back until its `created` is sent, so `created`
/// comes first.
///
/// Dropping the stream removes the watchers from the server.
async fn open(
    shared: &Shared,
    watchers: &[(String, WatchOptions)],
    after: i64,
    fires: &(dyn Fn(&Event) -> bool + Sync),
) -> std::result::Result<Opened, WatchEnd> {
    let Some(((first_key, first_opts), more)) = watchers.split_first() else {
        return Err(WatchEnd::Cancelled);
    };
    let mut client = shared.watch_client();
    let registered = async {
        let mut stream = match client
            .watch(first_key.as_str(), Some(first_opts.clone()))
            .await
        {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(error = %e, key = %first_key, "etcd watch did not open");
                return Err(WatchEnd::Broken);
            }
        };
        for (key, opts) in more {
            if stream
                .watch(key.as_str(), Some(opts.clone()))
                .await
                .is_err()
            {
                return Err(WatchEnd::Broken);
            }
        }
        let mut created = 0;
        let mut synced_at = 0;
        while created < watchers.len() {
            let resp = next(&mut stream, after, fires).await?;
            if resp.created() {
                created += 1;
                synced_at = synced_at.max(resp.header().map_or(0, |h| h.revision()));
            }
        }
        Ok(Opened { stream, synced_at })
    };
    match tokio::time::timeout(shared.request_timeout, registered).await {
        Ok(opened) => opened,
        Err(_) => Err(WatchEnd::Broken),
    }
}

/// The stream's next answer; `Err` when it fires (an event `fires`
/// accepts, after revision `after`), is cancelled or breaks.
async fn next(
    stream: &mut WatchStream,
    after: i64,
    fires: &(dyn Fn(&Event) -> bool + Sync),
) -> std::result::Result<WatchResponse, WatchEnd> {
    match stream.message().await {
        Ok(Some(resp)) => {
            if resp.canceled() {
                tracing::debug!(
                    reason = resp.cancel_reason(),
                    compact_revision = resp.compact_revision(),
                    "etcd cancelled a watch"
                );
                if denied(resp.cancel_reason()) {
                    return Err(WatchEnd::Denied);
                }
                return Err(WatchEnd::Cancelled);
            }
            // An event at or before `after` is one the caller's read (or
            // our own) already saw: a member behind that read answers the
            // watch from an older revision.
            let new = |e: &&Event| e.kv().is_some_and(|kv| kv.mod_revision() > after);
            if resp.events().iter().filter(new).any(fires) {
                return Err(WatchEnd::Fired);
            }
            Ok(resp)
        }
        Ok(None) => Err(WatchEnd::Broken),
        Err(e) => {
            tracing::debug!(error = %e, "etcd watch stream broke");
            Err(WatchEnd::Broken)
        }
    }
}

/// Read the stream until it fires, is cancelled or breaks.
async fn until_end(
    stream: &mut WatchStream,
    after: i64,
    fires: &(dyn Fn(&Event) -> bool + Sync),
) -> WatchEnd {
    loop {
        if let Err(end) = next(stream, after, fires).await {
            return end;
        }
    }
}

/// Pause before opening a broken watch again: 50 ms, doubling to 1 s, with
/// jitter (coord's one [`Backoff`](coord_core::backend::Backoff)).
pub(crate) async fn backoff(attempt: &mut u32) {
    const WATCH: coord_core::backend::Backoff =
        coord_core::backend::Backoff::new(Duration::from_millis(50), Duration::from_secs(1));
    WATCH.sleep(attempt).await;
}

/// What a read over the gap between a revision and a watch's start found.
enum Gap {
    /// The change waited for happened (for children, perhaps: a spurious
    /// fire is allowed).
    Changed,
    /// Nothing waited for happened up to this revision (the read's).
    Unchanged(i64),
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
    /// The revision the key was read at: every change after it counts.
    revision: i64,
}

/// Resolve once the key is gone: it existed at `revision` with
/// `create_revision`, and any deletion after `revision` counts.
///
/// # Errors
/// The session's end, if that comes first.
///
/// # Cancel safety
/// Cancel safe: dropping it drops its watch stream, which removes the
/// watcher from the server.
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
/// value) or its deletion.
///
/// # Errors
/// The session's end, if that comes first.
///
/// # Cancel safety
/// Cancel safe, as [`wait_gone`].
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

/// Watch the key from the server's current revision W (synced) and, when
/// W is past the read (`w.revision`), read the key once.
///
/// Nothing is missed: the watch sees every change after W ([`open`]). A
/// change in (R, W] (R the read's revision) is seen by the Get, whose
/// revision G is at least W: it is linearizable and sent after the
/// `created` answer, so whatever member answers it has applied all that
/// was applied at W. A deletion in (R, G] leaves the key absent at G, or
/// present with another create revision (made again: a new key); a put
/// leaves another mod revision. So an unchanged key at G means no change in
/// (R, G], and (R, G] ∪ (W, ∞) covers everything after R. When W ≤ R the
/// watch alone covers it, with no request.
async fn key_changed(shared: &Shared, mut w: WatchedKey) {
    let mut attempt = 0;
    loop {
        let mut opts = WatchOptions::new();
        if w.what == KeyChange::Deleted {
            // The server need not send the puts we would ignore.
            opts = opts.with_filters([WatchFilterType::NoPut]);
        }
        let watchers = [(w.key.clone(), opts)];
        let what = w.what;
        let fires = |e: &Event| what == KeyChange::Any || e.event_type() == EventType::Delete;
        let epoch = shared.auth_epoch();
        let end = match open(shared, &watchers, w.revision, &fires).await {
            Err(end) => end,
            Ok(mut opened) => {
                if opened.synced_at > w.revision {
                    match read_key(shared, &w, &mut attempt).await {
                        Gap::Changed => return,
                        Gap::Unchanged(at) => w.revision = w.revision.max(at),
                    }
                }
                until_end(&mut opened.stream, w.revision, &fires).await
            }
        };
        match end {
            WatchEnd::Fired => return,
            // Opened again from the current revision; the read above
            // covers what happened meanwhile.
            WatchEnd::Broken | WatchEnd::Cancelled => backoff(&mut attempt).await,
            WatchEnd::Denied => {
                shared.refresh_token(epoch).await;
                backoff(&mut attempt).await;
            }
        }
    }
}

/// Read the key (keys only) until an answer comes. Gone, or made again
/// since (another create revision), means it was deleted after
/// `w.revision`; another mod revision, that it was set.
async fn read_key(shared: &Shared, w: &WatchedKey, attempt: &mut u32) -> Gap {
    loop {
        let read = shared
            .get(&w.key, Some(GetOptions::new().with_keys_only()))
            .await;
        match read {
            Ok(resp) => {
                return match resp.kvs().first() {
                    None => Gap::Changed,
                    Some(kv) if kv.create_revision() != w.create_revision => Gap::Changed,
                    Some(kv) if w.what == KeyChange::Any && kv.mod_revision() != w.mod_revision => {
                        Gap::Changed
                    }
                    Some(_) => Gap::Unchanged(shared.saw_header(resp.header())),
                };
            }
            // The session's end (watched by the caller) stops this loop.
            Err(_) => backoff(attempt).await,
        }
    }
}

/// Resolve at the first change to the children of a directory after
/// `revision`: a direct child under `prefix` created or deleted, or the
/// directory's own key (`dir_key`; none for the root) deleted. It may also
/// resolve spuriously (callers read again): after a compaction past
/// `revision`, or for a deeper key deleted. A child both made and deleted
/// before the watch is registered is not reported: the children are then
/// those the caller read.
///
/// # Errors
/// The session's end, if that comes first.
///
/// # Cancel safety
/// Cancel safe, as [`wait_gone`].
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

/// As [`key_changed`], for children: watch from the current revision W and,
/// when W is past `revision`, one read-only Txn ([`read_children`]) covers
/// the gap.
async fn children_changed_inner(
    shared: &Shared,
    dir_key: Option<String>,
    prefix: String,
    mut revision: i64,
) {
    let mut watchers = vec![(prefix.clone(), WatchOptions::new().with_prefix())];
    if let Some(k) = &dir_key {
        watchers.push((
            k.clone(),
            WatchOptions::new().with_filters([WatchFilterType::NoPut]),
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
        let epoch = shared.auth_epoch();
        let end = match open(shared, &watchers, revision, &fires).await {
            Err(end) => end,
            Ok(mut opened) => {
                if opened.synced_at > revision {
                    match read_children(shared, dir_key.as_deref(), &prefix, revision, &mut attempt)
                        .await
                    {
                        Gap::Changed => return,
                        Gap::Unchanged(at) => revision = revision.max(at),
                    }
                }
                until_end(&mut opened.stream, revision, &fires).await
            }
        };
        match end {
            WatchEnd::Fired => return,
            WatchEnd::Broken | WatchEnd::Cancelled => backoff(&mut attempt).await,
            WatchEnd::Denied => {
                shared.refresh_token(epoch).await;
                backoff(&mut attempt).await;
            }
        }
    }
}

/// At most this many keys made after the caller's read are fetched to
/// tell the gap's changes; more than that fires (spuriously, perhaps).
const NEW_KEYS_READ: i64 = 64;

/// Whether the children under `prefix` (or the key `dir_key`) changed
/// after `revision`, in one read-only Txn at revision G, without listing
/// them: N₀, the number of keys under `prefix` at `revision`; N, their
/// number at G; and the keys made after `revision` still there at G (their
/// create revision is greater). Every other key there at G was made at or
/// before `revision` and never deleted since (a key made again has a new
/// create revision), so it was there at `revision` too: N minus the new
/// keys is the number of keys of N₀ still there, and it is less than N₀
/// exactly when one of them was deleted. So it fires for a deletion (of a
/// child; spuriously of a deeper key) and for a new direct child, and not
/// for sets. A key both made and deleted in the gap is not seen (nor is
/// it in any listing). The directory's key: fires when it was there at
/// `revision` and at G is gone or another key.
///
/// (A count cannot be asked with the create-revision filter: etcd counts
/// before it filters, so the new keys come as keys, at most
/// [`NEW_KEYS_READ`].)
///
/// An error that is not a lost connection fires (spuriously, perhaps):
/// `revision` compacted, say. A lost connection is retried.
async fn read_children(
    shared: &Shared,
    dir_key: Option<&str>,
    prefix: &str,
    revision: i64,
    attempt: &mut u32,
) -> Gap {
    let count_then = GetOptions::new()
        .with_prefix()
        .with_count_only()
        .with_revision(revision);
    let count_now = GetOptions::new().with_prefix().with_count_only();
    let made_since = GetOptions::new()
        .with_prefix()
        .with_keys_only()
        .with_min_create_revision(revision.saturating_add(1))
        .with_limit(NEW_KEYS_READ);
    let mut ops = vec![
        TxnOp::get(prefix, Some(count_then)),
        TxnOp::get(prefix, Some(count_now)),
        TxnOp::get(prefix, Some(made_since)),
    ];
    if let Some(k) = dir_key {
        let then = GetOptions::new().with_count_only().with_revision(revision);
        ops.push(TxnOp::get(k, Some(then)));
        ops.push(TxnOp::get(k, Some(GetOptions::new().with_keys_only())));
    }
    let txn = Txn::new().and_then(ops);
    let resp = loop {
        match shared.txn(&txn, true).await {
            Ok(resp) => break resp,
            Err(e) if e.is_retryable() => backoff(attempt).await,
            Err(e) => {
                tracing::debug!(error = %e, "etcd children watch could not read its gap; fires");
                return Gap::Changed;
            }
        }
    };
    let at = shared.saw_header(resp.header());
    let gets: Vec<_> = resp
        .op_responses()
        .into_iter()
        .filter_map(|r| match r {
            TxnOpResponse::Get(g) => Some(g),
            _ => None,
        })
        .collect();
    let (Some(then), Some(now), Some(made)) = (gets.first(), gets.get(1), gets.get(2)) else {
        return Gap::Changed;
    };
    let made_keys = made.kvs().len() as i64;
    let new_child = made.kvs().iter().any(|kv| {
        std::str::from_utf8(kv.key()).is_ok_and(|key| direct_child(prefix, key).is_some())
    });
    if made.more() || new_child || now.count() - made_keys < then.count() {
        return Gap::Changed;
    }
    if dir_key.is_some() {
        let (Some(dir_then), Some(dir_now)) = (gets.get(3), gets.get(4)) else {
            return Gap::Changed;
        };
        let there_then = dir_then.count() > 0;
        let same_now = dir_now
            .kvs()
            .first()
            .is_some_and(|kv| kv.create_revision() <= revision);
        if there_then && !same_now {
            return Gap::Changed;
        }
    }
    Gap::Unchanged(at)
}

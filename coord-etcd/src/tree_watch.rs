//! A tree watch on etcd: one watch over the key range of a subtree, opened
//! again after the last revision delivered when its stream breaks, and a
//! `Resync` when a compaction took what it missed.

use std::sync::Arc;

use coord_core::{Result, TreeChange, TreeWatch};
use etcd_client::{GetOptions, WatchOptions};
use tokio::sync::mpsc;

use crate::shared::Shared;
use crate::watch::{backoff, denied, session_end};

/// A tree watch on the node at `path` and every node under it (see
/// [`coord_core::backend::PrimitiveSession::watch_tree`]): one watch over the key
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
        let epoch = shared.auth_epoch();
        let mut client = shared.watch_client();
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
                    if resp.canceled() && denied(resp.cancel_reason()) {
                        // Refused for a token the server dropped: open it
                        // again from `next` with a new one (nothing lost).
                        tracing::debug!(reason = resp.cancel_reason(), "etcd refused a tree watch");
                        shared.refresh_token(epoch).await;
                        break;
                    }
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

//! Conformance of the optional tree watch
//! ([`coord_core::Session::watch_tree`]) and of the caches built on it,
//! under a connection cut.
//!
//! A backend that offers tree watches ([`Harness::tree_watches`]) must
//! report every change at or under the watched path and nothing outside
//! it; one that does not must refuse with `NotSupported` (the caches then
//! run on one-shot watches: the cache test here runs either way).

use std::collections::BTreeMap;
use std::time::Duration;

use coord_core::path::join;
use coord_core::recipes::{CacheEvent, TreeCache};
use coord_core::{CreateMode, Error, Session, SessionState, TreeChange, TreeWatch};

use crate::{await_state, within, Harness};

/// The next change of a tree watch, failing the test after 30 s.
async fn next_change(w: &mut TreeWatch) -> TreeChange {
    within("the next tree change", w.next())
        .await
        .expect("the tree watch is running")
}

/// A tree watch reports every create, set and delete at or under its
/// path, in the order they were applied (repeats of one path may be
/// coalesced), nothing outside it (a sibling whose name starts with the
/// watched one's included), and ends with the session's end. Where the
/// backend has none, it refuses with `NotSupported` before anything else.
pub async fn tree_watch_reports_subtree_changes(h: &dyn Harness) {
    let base = h.root("tree_watch_subtree");
    let root = join(&base, "r");
    let (s, o) = (h.open().await, h.open().await);
    o.ensure_dir(&base).await.expect("base dir");
    let watched = s.watch_tree(&root).await;
    if !h.tree_watches() {
        assert!(
            matches!(watched, Err(Error::NotSupported { .. })),
            "{}: expected NotSupported, got {watched:?}",
            h.name()
        );
        let _ = s.close().await;
        let _ = o.close().await;
        return;
    }
    let mut w = watched.expect("watch_tree");
    // The root does not exist yet when the watch is set: its creation is
    // reported too.
    let a = join(&root, "a");
    let (b, sentinel) = (join(&a, "b"), join(&root, "z"));
    o.create(&root, b"", CreateMode::Persistent)
        .await
        .expect("create root");
    o.create(&a, b"1", CreateMode::Persistent)
        .await
        .expect("create a");
    o.set(&a, b"2", None).await.expect("set a");
    o.create(&b, b"", CreateMode::Persistent)
        .await
        .expect("create a/b");
    o.delete(&b, None).await.expect("delete a/b");
    o.delete(&a, None).await.expect("delete a");
    // Outside the subtree: a sibling with the same prefix, the parent.
    o.create(&format!("{root}-x"), b"", CreateMode::Persistent)
        .await
        .expect("create sibling");
    o.set(&base, b"touched", None).await.expect("set parent");
    o.create(&sentinel, b"", CreateMode::Persistent)
        .await
        .expect("create sentinel");

    let mut seen: Vec<String> = Vec::new();
    loop {
        match next_change(&mut w).await {
            TreeChange::Changed(p) => {
                let last = p == sentinel;
                if seen.last() != Some(&p) {
                    seen.push(p);
                }
                if last {
                    break;
                }
            }
            other => panic!("{}: unexpected {other:?} on a healthy session", h.name()),
        }
    }
    assert_eq!(
        seen,
        vec![
            root.clone(),
            a.clone(),
            b.clone(),
            a.clone(),
            sentinel.clone()
        ],
        "{}: the changes under {root}, in order",
        h.name()
    );

    // A change after the others is still reported (the watch persists).
    o.set(&sentinel, b"again", None)
        .await
        .expect("set sentinel");
    assert_eq!(next_change(&mut w).await, TreeChange::Changed(sentinel));

    h.expire(&s).await;
    let ended = within("the watch's end after the session's", async {
        loop {
            match w.next().await {
                Ok(TreeChange::Changed(_)) | Ok(TreeChange::Resync) => continue,
                Ok(other) => panic!("unexpected {other:?}"),
                Err(e) => return e,
            }
        }
    })
    .await;
    assert!(
        ended.is_session_end(),
        "{}: the watch ended with {ended:?}, not the session's end",
        h.name()
    );
    let _ = o.close().await;
}

/// The server's subtree under `root` (all depths), path → data.
async fn fresh(s: &Session, root: &str) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![root.to_string()];
    while let Some(p) = todo.pop() {
        let Some(n) = s.get(&p).await.expect("get") else {
            continue;
        };
        out.insert(p.clone(), n.data);
        if let Ok(kids) = s.children(&p).await {
            todo.extend(kids.iter().map(|c| join(&p, &c.name)));
        }
    }
    out
}

fn view(c: &TreeCache) -> BTreeMap<String, Vec<u8>> {
    c.current().into_iter().map(|(p, n)| (p, n.data)).collect()
}

/// A tree cache whose connection is cut (shorter than its session) while
/// others change the tree converges to the server's state after the heal:
/// no change made during the cut is missed (ZooKeeper replays none to a
/// persistent watch: the cache must read again), none is reported twice
/// as a removal, and the cache keeps running on the same session.
pub async fn cache_converges_after_cut(h: &dyn Harness) {
    let root = h.root("cache_after_cut");
    let (s, fault) = h.open_faulty(crate::faults::SHORT_FAULT_TIMEOUT).await;
    let o = h.open().await;
    for p in ["keep", "change", "drop", "drop/kid"] {
        o.create(&join(&root, p), b"0", CreateMode::Persistent)
            .await
            .expect("create");
    }
    let mut tree = TreeCache::start(&s, &root, 8).expect("tree");
    loop {
        let e = within("the initial load", tree.next_event())
            .await
            .expect("the cache is running");
        if e == CacheEvent::Initialized {
            break;
        }
    }

    fault.cut();
    await_state(&s, SessionState::Suspended).await;
    o.set(&join(&root, "change"), b"1", None)
        .await
        .expect("set");
    o.delete(&join(&root, "drop/kid"), None)
        .await
        .expect("delete kid");
    o.delete(&join(&root, "drop"), None).await.expect("delete");
    o.create(&join(&root, "new/deep"), b"n", CreateMode::Persistent)
        .await
        .expect("create");
    fault.heal();
    await_state(&s, SessionState::Connected).await;

    let want = fresh(&o, &root).await;
    let mut removed = Vec::new();
    while view(&tree) != want {
        match tokio::time::timeout(Duration::from_secs(30), tree.next_event()).await {
            Ok(Ok(CacheEvent::Removed { path })) => {
                assert!(!removed.contains(&path), "{path} removed twice");
                removed.push(path);
            }
            Ok(Ok(_)) => {}
            other => panic!(
                "{}: the cache never converged after the cut: {other:?}\n view {:?}\n want {want:?}",
                h.name(),
                view(&tree)
            ),
        }
    }
    // Still following changes on the same session.
    o.set(&join(&root, "keep"), b"later", None)
        .await
        .expect("set");
    loop {
        let e = within("the change after the heal", tree.next_event())
            .await
            .expect("the cache is running");
        if e == (CacheEvent::Updated {
            path: join(&root, "keep"),
            data: b"later".to_vec(),
        }) {
            break;
        }
    }
    assert_eq!(s.state(), SessionState::Connected);
    let _ = s.close().await;
    let _ = o.close().await;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __tree_watch_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            tree_watch::tree_watch_reports_subtree_changes,
            tree_watch::cache_converges_after_cut,
        );
    };
}

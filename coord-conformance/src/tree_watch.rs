//! Conformance of the optional tree watch
//! ([`coord_core::Session::watch_tree`]) and of the caches built on it,
//! under a connection cut.
//!
//! A backend that offers tree watches ([`Harness::tree_watches`]) must
//! report every change at or under the watched path and nothing outside
//! it; one that does not must refuse with `NotSupported` (the caches then
//! run on one-shot watches: the cache test here runs either way).

use std::time::Duration;

use coord_core::path::join;
use coord_core::recipes::{CacheEvent, TreeCache};
use coord_core::{CreateMode, Error, SessionState, TreeChange, TreeWatch};

use crate::caches::{fresh, view};
use crate::{await_state, within, Harness};

/// The next change of a tree watch, failing the test after 30 s.
async fn next_change(w: &mut TreeWatch) -> TreeChange {
    within("the next tree change", w.next())
        .await
        .expect("the tree watch has not ended")
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
                Some(Ok(TreeChange::Changed(_))) | Some(Ok(TreeChange::Resync)) => continue,
                Some(Ok(other)) => panic!("unexpected {other:?}"),
                Some(Err(e)) => return e,
                None => panic!("the watch ended without saying why"),
            }
        }
    })
    .await;
    assert!(
        ended.is_session_end(),
        "{}: the watch ended with {ended:?}, not the session's end",
        h.name()
    );
    assert!(
        w.next().await.is_none(),
        "the watch is over after its error"
    );
    let _ = o.close().await;
}

/// One-shot watches set by the same session on the very path a tree watch
/// covers (a data watch, a deletion watch, a children watch) neither end
/// the tree watch nor are lost to it: both fire. (ZooKeeper before 3.9
/// keeps one watch mode per path and connection, ZOOKEEPER-4466: a data
/// watch on the path turned the persistent watch into a one-shot one.)
pub async fn tree_watch_coexists_with_one_shot_watches(h: &dyn Harness) {
    if !h.tree_watches() {
        return;
    }
    let root = h.root("tree_watch_coexists");
    let (s, o) = (h.open().await, h.open().await);
    o.create(&root, b"0", CreateMode::Persistent)
        .await
        .expect("create root");
    let mut w = s.watch_tree(&root).await.expect("watch_tree");
    let (_, data_watch) = s
        .get_watch(&root)
        .await
        .expect("get_watch")
        .expect("the root exists");
    let (_, children_watch) = s.children_watch(&root).await.expect("children_watch");
    o.set(&root, b"1", None).await.expect("set root");
    within("the data watch on the watched path", data_watch)
        .await
        .expect("the data watch fired");
    let a = join(&root, "a");
    o.create(&a, b"", CreateMode::Persistent)
        .await
        .expect("create a");
    within("the children watch on the watched path", children_watch)
        .await
        .expect("the children watch fired");
    let gone = s
        .watch_gone(&a)
        .await
        .expect("watch_gone")
        .expect("a exists");
    o.delete(&a, None).await.expect("delete a");
    within("the deletion watch under the watched path", gone)
        .await
        .expect("the deletion watch fired");
    // The tree watch saw all of it, and goes on after the one-shot
    // watches fired (a Resync along the way is allowed).
    let sentinel = join(&root, "z");
    o.create(&sentinel, b"", CreateMode::Persistent)
        .await
        .expect("create sentinel");
    let mut seen = Vec::new();
    loop {
        match next_change(&mut w).await {
            TreeChange::Changed(p) if p == sentinel => break,
            TreeChange::Changed(p) => seen.push(p),
            _ => {}
        }
    }
    assert!(
        seen.contains(&root) && seen.contains(&a),
        "{}: the tree watch missed changes: saw {seen:?}",
        h.name()
    );
    o.set(&root, b"2", None).await.expect("set root again");
    loop {
        match next_change(&mut w).await {
            TreeChange::Changed(p) if p == root => break,
            TreeChange::Changed(p) => panic!("{}: unexpected change of {p}", h.name()),
            _ => {}
        }
    }
    let _ = s.close().await;
    let _ = o.close().await;
}

/// A node cache and a tree cache on the same root and the same session,
/// started in either order, both follow every change (on ZooKeeper before
/// 3.9 the two kinds of watch cannot share a path on one connection: the
/// second must not silently end the first).
pub async fn caches_share_a_root_on_one_session(h: &dyn Harness) {
    let root = h.root("caches_share_a_root");
    let (s, o) = (h.open().await, h.open().await);
    o.create(&root, b"0", CreateMode::Persistent)
        .await
        .expect("create root");
    let node_first = coord_core::recipes::NodeCache::start(&s, &root).expect("node cache");
    let mut node_first = node_first;
    let mut tree = TreeCache::start(&s, &root, 4).expect("tree cache");
    let mut node_after = coord_core::recipes::NodeCache::start(&s, &root).expect("node cache");
    for (i, step) in ["a", "b"].iter().enumerate() {
        let data = format!("v{i}");
        o.set(&root, data.as_bytes(), None).await.expect("set root");
        o.create(&join(&root, step), b"", CreateMode::Persistent)
            .await
            .expect("create child");
        let want = fresh(&o, &root).await;
        while view(&tree) != want {
            within("the tree cache converging", tree.next())
                .await
                .expect("the tree cache has not ended")
                .expect("the tree cache runs");
        }
        for (what, cache) in [("first", &mut node_first), ("second", &mut node_after)] {
            while cache.current().map(|n| n.data) != Some(data.clone().into_bytes()) {
                within(&format!("the {what} node cache converging"), cache.next())
                    .await
                    .expect("the node cache has not ended")
                    .expect("the node cache runs");
            }
        }
    }
    let _ = s.close().await;
    let _ = o.close().await;
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
        let e = within("the initial load", tree.next())
            .await
            .expect("the cache has not ended")
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
        match tokio::time::timeout(Duration::from_secs(30), tree.next()).await {
            Ok(Some(Ok(CacheEvent::Removed { path }))) => {
                assert!(!removed.contains(&path), "{path} removed twice");
                removed.push(path);
            }
            Ok(Some(Ok(_))) => {}
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
        let e = within("the change after the heal", tree.next())
            .await
            .expect("the cache has not ended")
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
            tree_watch::tree_watch_coexists_with_one_shot_watches,
            tree_watch::caches_share_a_root_on_one_session,
            tree_watch::cache_converges_after_cut,
        );
    };
}

//! Conformance of the node, children and tree caches
//! ([`coord_core::recipes::TreeCache`] and friends).

use std::collections::BTreeMap;
use std::time::Duration;

use coord_core::path::join;
use coord_core::recipes::{CacheEvent, ChildrenCache, NodeCache, TreeCache};
use coord_core::{CreateMode, Session, SessionState};
use tokio::task::JoinSet;

use crate::{await_state, Harness};

const EVENT_WAIT: Duration = Duration::from_secs(30);

async fn next(c: &mut TreeCache) -> CacheEvent {
    running(
        tokio::time::timeout(EVENT_WAIT, c.next())
            .await
            .expect("an event within 30 s"),
    )
}

/// The event of a cache that is running (not ended, no error).
fn running(item: Option<coord_core::Result<CacheEvent>>) -> CacheEvent {
    match item {
        Some(Ok(e)) => e,
        other => panic!("the cache is running, but next gave {other:?}"),
    }
}

/// Events up to and including `Initialized`.
async fn until_initialized(c: &mut TreeCache) -> Vec<CacheEvent> {
    let mut out = Vec::new();
    loop {
        let e = next(c).await;
        let done = e == CacheEvent::Initialized;
        out.push(e);
        if done {
            return out;
        }
    }
}

/// The server's subtree under `root` (all depths), path → data, read fresh.
pub(crate) async fn fresh(s: &Session, root: &str) -> BTreeMap<String, Vec<u8>> {
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

pub(crate) fn view(c: &TreeCache) -> BTreeMap<String, Vec<u8>> {
    c.current().into_iter().map(|(p, n)| (p, n.data)).collect()
}

/// Take events until the cache's view equals `want` (no sleeps: each
/// step waits for the next event).
async fn converge(c: &mut TreeCache, want: &BTreeMap<String, Vec<u8>>) {
    while view(c) != *want {
        let e = tokio::time::timeout(EVENT_WAIT, c.next()).await;
        match e {
            Ok(Some(Ok(_))) => {}
            other => panic!(
                "cache never converged: {other:?}\n view {:?}\n want {want:?}",
                view(c)
            ),
        }
    }
}

/// The initial load reports every node present as `Added`, then
/// `Initialized`; the view is the server's state. The node and children
/// caches see their own slices.
pub async fn cache_initial_load_then_initialized(h: &dyn Harness) {
    let root = h.root("cache_initial_load");
    let s = h.open().await;
    for (p, d) in [("a", "1"), ("b", "2"), ("a/x", "3")] {
        s.create(&join(&root, p), d.as_bytes(), CreateMode::Persistent)
            .await
            .expect("create");
    }
    s.set(&root, b"r", None).await.expect("set root");
    let mut tree = TreeCache::start(&s, &root, 8).expect("tree");
    let events = until_initialized(&mut tree).await;
    let mut added: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            CacheEvent::Added { path, .. } => Some(path.clone()),
            _ => None,
        })
        .collect();
    added.sort();
    let mut want: Vec<String> = fresh(&s, &root).await.into_keys().collect();
    want.sort();
    assert_eq!(added, want, "initial Added events");
    assert_eq!(events.len(), want.len() + 1, "only Added then Initialized");
    assert_eq!(view(&tree), fresh(&s, &root).await);

    let mut kids = ChildrenCache::start(&s, &root).expect("children");
    loop {
        let e = running(
            tokio::time::timeout(EVENT_WAIT, kids.next())
                .await
                .expect("event"),
        );
        if e == CacheEvent::Initialized {
            break;
        }
    }
    let names: Vec<String> = kids.current().into_keys().collect();
    assert_eq!(names, vec![join(&root, "a"), join(&root, "b")]);
    assert_eq!(kids.current()[&join(&root, "b")].data, b"2");

    let mut node = NodeCache::start(&s, &join(&root, "a/x")).expect("node");
    loop {
        let e = running(
            tokio::time::timeout(EVENT_WAIT, node.next())
                .await
                .expect("event"),
        );
        if e == CacheEvent::Initialized {
            break;
        }
    }
    assert_eq!(node.current().expect("node").data, b"3");
    let missing = join(&root, "later/deep");
    let mut absent = NodeCache::start(&s, &missing).expect("node");
    loop {
        let e = running(
            tokio::time::timeout(EVENT_WAIT, absent.next())
                .await
                .expect("event"),
        );
        if e == CacheEvent::Initialized {
            break;
        }
    }
    assert!(absent.current().is_none());
    s.create(&missing, b"now", CreateMode::Persistent)
        .await
        .expect("create");
    let e = running(
        tokio::time::timeout(EVENT_WAIT, absent.next())
            .await
            .expect("the creation of a missing node is seen"),
    );
    assert_eq!(
        e,
        CacheEvent::Added {
            path: missing,
            data: b"now".to_vec()
        }
    );
    tree.close();
    assert!(matches!(tree.next().await, Some(Err(_))), "closed");
    assert!(tree.next().await.is_none(), "a closed cache ends");
    for bad in ["relative", "/a//b", "/a/"] {
        assert!(matches!(
            TreeCache::start(&s, bad, 1),
            Err(coord_core::Error::InvalidPath { .. })
        ));
        assert!(matches!(
            ChildrenCache::start(&s, bad),
            Err(coord_core::Error::InvalidPath { .. })
        ));
        assert!(matches!(
            NodeCache::start(&s, bad),
            Err(coord_core::Error::InvalidPath { .. })
        ));
    }
    let _ = s.close().await;
}

/// An add, an update and a remove by another session each produce exactly
/// their event, in order; a grandchild added deep down is seen.
pub async fn cache_add_update_remove_events(h: &dyn Harness) {
    let root = h.root("cache_events");
    let (s, w) = (h.open().await, h.open().await);
    s.ensure_dir(&root).await.expect("dir");
    let mut tree = TreeCache::start(&s, &root, 8).expect("tree");
    until_initialized(&mut tree).await;
    let a = join(&root, "a");
    w.create(&a, b"1", CreateMode::Persistent)
        .await
        .expect("create");
    assert_eq!(
        next(&mut tree).await,
        CacheEvent::Added {
            path: a.clone(),
            data: b"1".to_vec()
        }
    );
    w.set(&a, b"2", None).await.expect("set");
    assert_eq!(
        next(&mut tree).await,
        CacheEvent::Updated {
            path: a.clone(),
            data: b"2".to_vec()
        }
    );
    let g = join(&root, "a/b/c");
    w.create(&g, b"g", CreateMode::Persistent)
        .await
        .expect("create grandchild");
    // The intermediate node may be reported first (as an Added or, on
    // ZooKeeper, as a container node); the grandchild's Added follows.
    loop {
        match next(&mut tree).await {
            CacheEvent::Added { path, data } if path == g => {
                assert_eq!(data, b"g");
                break;
            }
            CacheEvent::Added { path, .. } if path == join(&root, "a/b") => {}
            other => panic!("unexpected {other:?} before the grandchild"),
        }
    }
    assert_eq!(tree.current()[&g].data, b"g", "grandchild seen");
    w.delete(&g, None).await.expect("delete");
    assert_eq!(next(&mut tree).await, CacheEvent::Removed { path: g });
    let _ = s.close().await;
    let _ = w.close().await;
}

/// A cache started while 50 concurrent changes from another session are
/// landing (so changes race its initial reads) converges to the server's
/// state, as read fresh afterwards.
pub async fn cache_converges_after_burst(h: &dyn Harness) {
    let root = h.root("cache_burst");
    let (s, w) = (h.open().await, h.open().await);
    s.ensure_dir(&root).await.expect("dir");
    for i in 0..10 {
        w.create(&join(&root, &format!("n{i}")), b"0", CreateMode::Persistent)
            .await
            .expect("create");
    }
    let mut burst = JoinSet::new();
    for i in 0..50u32 {
        let (w, root) = (w.clone(), root.clone());
        burst.spawn(async move {
            let p = join(&root, &format!("n{}", i % 10));
            match i % 5 {
                0 => {
                    let _ = w.delete(&p, None).await;
                }
                1 => {
                    let _ = w
                        .create(&join(&p, &format!("k{i}")), b"k", CreateMode::Persistent)
                        .await;
                }
                2 => {
                    let _ = w
                        .create(
                            &join(&root, &format!("new{i}")),
                            b"n",
                            CreateMode::Persistent,
                        )
                        .await;
                }
                _ => {
                    let _ = w.set(&p, format!("v{i}").as_bytes(), None).await;
                }
            }
        });
    }
    let mut tree = TreeCache::start(&s, &root, 8).expect("tree");
    while burst.join_next().await.is_some() {}
    let want = fresh(&w, &root).await;
    converge(&mut tree, &want).await;
    let _ = s.close().await;
    let _ = w.close().await;
}

/// When the session ends the cache reports it; a restart on a new
/// session emits `Reset`, the difference from the old view, then
/// `Initialized`.
pub async fn cache_session_end_then_restart(h: &dyn Harness) {
    let root = h.root("cache_restart");
    let (s, w) = (h.open().await, h.open().await);
    for p in ["keep", "change", "drop"] {
        w.create(&join(&root, p), b"0", CreateMode::Persistent)
            .await
            .expect("create");
    }
    let mut tree = TreeCache::start(&s, &root, 1).expect("tree");
    until_initialized(&mut tree).await;
    h.expire(&s).await;
    await_state(&s, SessionState::Expired).await;
    let ended = tokio::time::timeout(EVENT_WAIT, tree.next())
        .await
        .expect("the end is reported");
    assert!(
        matches!(ended, Some(Err(_))),
        "expected the session's end, got {ended:?}"
    );
    assert!(tree.next().await.is_none(), "an ended cache ends");
    w.set(&join(&root, "change"), b"1", None)
        .await
        .expect("set");
    w.delete(&join(&root, "drop"), None).await.expect("delete");
    w.create(&join(&root, "new"), b"n", CreateMode::Persistent)
        .await
        .expect("create");
    let s2 = h.open().await;
    tree.restart(&s2);
    let events = until_initialized(&mut tree).await;
    assert_eq!(
        events,
        vec![
            CacheEvent::Reset,
            CacheEvent::Updated {
                path: join(&root, "change"),
                data: b"1".to_vec()
            },
            CacheEvent::Added {
                path: join(&root, "new"),
                data: b"n".to_vec()
            },
            CacheEvent::Removed {
                path: join(&root, "drop")
            },
            CacheEvent::Initialized,
        ]
    );
    assert_eq!(view(&tree), fresh(&w, &root).await);
    let _ = s2.close().await;
    let _ = w.close().await;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __cache_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            caches::cache_initial_load_then_initialized,
            caches::cache_add_update_remove_events,
            caches::cache_converges_after_burst,
            caches::cache_session_end_then_restart,
        );
    };
}

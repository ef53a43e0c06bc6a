//! Children watches of the primitive contract: they fire on a child's
//! create and delete (also by a session's end) and never miss a racing
//! change.

use coord_core::CreateMode;
use tokio::task::JoinSet;

use crate::{within, Harness};

/// The children watch fires at a child's create and at a child's delete,
/// made by another session.
pub async fn prim_children_watch_fires(h: &dyn Harness) {
    let root = h.root("prim_children_watch_fires");
    let a = h.open().await;
    let b = h.open().await;
    let dir = format!("{root}/dir");
    a.ensure_dir(&dir).await.expect("ensure_dir");
    let (kids, watch) = b.children_watch(&dir).await.expect("children_watch");
    assert!(kids.is_empty());
    let child = format!("{dir}/child");
    a.create(&child, b"", CreateMode::Persistent)
        .await
        .expect("create");
    within("children watch on create", watch)
        .await
        .expect("the watch fires Ok");
    let (kids, watch) = within("child listed", async {
        loop {
            let (kids, watch) = b.children_watch(&dir).await.expect("children_watch");
            if !kids.is_empty() {
                return (kids, watch);
            }
            within("children watch", watch).await.expect("watch");
        }
    })
    .await;
    assert_eq!(kids.len(), 1);
    assert_eq!(kids[0].name, "child");

    a.delete(&child, None).await.expect("delete");
    within("children watch on delete", watch)
        .await
        .expect("the watch fires Ok");
    let kids = within("child gone", async {
        loop {
            let (kids, watch) = b.children_watch(&dir).await.expect("children_watch");
            if kids.is_empty() {
                return kids;
            }
            within("children watch", watch).await.expect("watch");
        }
    })
    .await;
    assert!(kids.is_empty());
    a.close().await.expect("close");
    b.close().await.expect("close");
}

/// The children watch fires when a child goes because its session
/// expired, and because its session closed.
pub async fn prim_children_watch_fires_on_session_end(h: &dyn Harness) {
    let root = h.root("prim_children_watch_fires_on_session_end");
    let watcher = h.open().await;
    let dir = format!("{root}/members");
    watcher.ensure_dir(&dir).await.expect("ensure_dir");
    for expire in [true, false] {
        let member = h.open().await;
        let c = member
            .create(&format!("{dir}/m-"), b"", CreateMode::EphemeralSequential)
            .await
            .expect("create");
        let name = c.path.rsplit('/').next().expect("a name").to_owned();
        // Wait until the watcher sees the member, holding a watch set after.
        let (_, watch) = within("member listed", async {
            loop {
                let (kids, watch) = watcher.children_watch(&dir).await.expect("children_watch");
                if kids.iter().any(|k| k.name == name) {
                    return (kids, watch);
                }
                within("children watch", watch).await.expect("watch");
            }
        })
        .await;
        if expire {
            h.expire(&member).await;
        } else {
            member.close().await.expect("close");
        }
        within("children watch on session end", watch)
            .await
            .expect("the watch fires Ok");
        within("member gone", async {
            loop {
                let (kids, watch) = watcher.children_watch(&dir).await.expect("children_watch");
                if !kids.iter().any(|k| k.name == name) {
                    return;
                }
                within("children watch", watch).await.expect("watch");
            }
        })
        .await;
    }
    watcher.close().await.expect("close");
}

/// A children watch never misses a change that races it: a watcher that
/// re-lists after each firing sees every one of many children another
/// session creates while it watches. A missed change hangs it.
pub async fn prim_children_watch_never_misses(h: &dyn Harness) {
    const N: usize = 40;
    let root = h.root("prim_children_watch_never_misses");
    let a = h.open().await;
    let b = h.open().await;
    let dir = format!("{root}/dir");
    a.ensure_dir(&dir).await.expect("ensure_dir");
    let creator = {
        let a = a.clone();
        let dir = dir.clone();
        tokio::spawn(async move {
            for i in 0..N {
                a.create(&format!("{dir}/c-{i:03}"), b"", CreateMode::Persistent)
                    .await
                    .expect("create");
                if i % 3 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        })
    };
    within("watcher sees every child", async {
        loop {
            let (kids, watch) = b.children_watch(&dir).await.expect("children_watch");
            if kids.len() == N {
                break;
            }
            watch.await.expect("the watch fires Ok");
        }
    })
    .await;
    within("creator", creator).await.expect("creator task");

    // And the same for deletes.
    let deleter = {
        let a = a.clone();
        let dir = dir.clone();
        tokio::spawn(async move {
            for i in 0..N {
                a.delete(&format!("{dir}/c-{i:03}"), None)
                    .await
                    .expect("delete");
            }
        })
    };
    within("watcher sees every delete", async {
        loop {
            let (kids, watch) = b.children_watch(&dir).await.expect("children_watch");
            if kids.is_empty() {
                break;
            }
            watch.await.expect("the watch fires Ok");
        }
    })
    .await;
    within("deleter", deleter).await.expect("deleter task");
    a.close().await.expect("close");
    b.close().await.expect("close");
}

/// A children watch never misses a change that races its read: many
/// watches are set at the same moment one child is created (then deleted);
/// each either lists the change or fires. A missed change hangs one.
pub async fn prim_children_watch_races_change(h: &dyn Harness) {
    const ROUNDS: usize = 16;
    const WATCHERS: usize = 8;
    let root = h.root("prim_children_watch_races_change");
    let writer = h.open().await;
    let readers = [h.open().await, h.open().await];
    let dir = format!("{root}/dir");
    writer.ensure_dir(&dir).await.expect("ensure_dir");
    for round in 0..ROUNDS {
        let child = format!("{dir}/c-{round}");
        for create in [true, false] {
            let mut tasks = JoinSet::new();
            for i in 0..WATCHERS {
                let s = readers[i % readers.len()].clone();
                let (dir, name) = (dir.clone(), format!("c-{round}"));
                tasks.spawn(async move {
                    let (kids, watch) = s.children_watch(&dir).await.expect("children_watch");
                    let listed = kids.iter().any(|k| k.name == name);
                    // The change is either in the listing or fires the watch.
                    if listed != create {
                        watch.await.expect("the watch fires Ok");
                    }
                });
                if i == WATCHERS / 2 {
                    let (w, child) = (writer.clone(), child.clone());
                    tasks.spawn(async move {
                        if create {
                            w.create(&child, b"", CreateMode::Persistent)
                                .await
                                .expect("create");
                        } else {
                            w.delete(&child, None).await.expect("delete");
                        }
                    });
                }
            }
            within("every children watch racing a change", async {
                while let Some(r) = tasks.join_next().await {
                    r.expect("task");
                }
            })
            .await;
        }
    }
    writer.close().await.expect("close");
    for r in readers {
        r.close().await.expect("close");
    }
}

//! Data watches of the primitive contract (`get_watch`): they fire on the
//! node's set and delete and its owner's end, not for other nodes, and
//! never miss a racing set.

use std::time::Duration;

use coord_core::{CreateMode, Op, OpResult, Session, Watch};
use tokio::task::JoinSet;

use super::support::fence_of;
use crate::{within, Harness};

/// A data watch on the existing node at `path`.
async fn data_watch(s: &Session, path: &str) -> Watch {
    let (_, watch) = s
        .get_watch(path)
        .await
        .expect("get_watch")
        .unwrap_or_else(|| panic!("{path} exists"));
    watch
}

/// Whether `watch` has already resolved, without waiting for it.
async fn is_ready(watch: &mut Watch) -> bool {
    tokio::time::timeout(Duration::ZERO, watch).await.is_ok()
}

/// `get_watch` on a missing node (or under a missing parent) is `None`;
/// on an existing one it reads the node as `get` does.
pub async fn prim_get_watch_missing_node(h: &dyn Harness) {
    let root = h.root("prim_get_watch_missing_node");
    let s = h.open().await;
    assert!(
        s.get_watch(&format!("{root}/none/x"))
            .await
            .expect("get_watch")
            .is_none(),
        "a node under a missing parent"
    );
    s.ensure_dir(&root).await.expect("ensure_dir");
    let p = format!("{root}/node");
    assert!(
        s.get_watch(&p).await.expect("get_watch").is_none(),
        "a missing node"
    );
    let c = s
        .create(&p, b"data", CreateMode::Persistent)
        .await
        .expect("create");
    let (node, _watch) = s
        .get_watch(&p)
        .await
        .expect("get_watch")
        .expect("the node exists");
    assert_eq!(node.data, b"data");
    assert_eq!(node.stat.stamp, c.stamp);
    assert_eq!(node.stat.version, c.version);
    assert_eq!(Some(node), s.get(&p).await.expect("get"));
    s.delete(&p, None).await.expect("delete");
    assert!(
        s.get_watch(&p).await.expect("get_watch").is_none(),
        "a deleted node"
    );
    s.close().await.expect("close");
}

/// Lock revocation: another session's set on a holder's ephemeral node
/// fires the holder's data watch — also a set to the same bytes — and
/// leaves the node the holder's: still ephemeral, the same stamp, the
/// holder's fence still good for guarded writes, gone only with the
/// holder's session (not the writer's).
pub async fn prim_get_watch_fires_on_set_by_other(h: &dyn Harness) {
    const REVOKE: &[u8] = b"__REVOKE__";
    let root = h.root("prim_get_watch_fires_on_set_by_other");
    let holder = h.open().await;
    let revoker = h.open().await;
    let observer = h.open().await;
    let held = holder
        .create(
            &format!("{root}/lock/holder-"),
            b"mine",
            CreateMode::EphemeralSequential,
        )
        .await
        .expect("create the holder's node");
    let fence = fence_of(&held.path, held.stamp);
    let (node, watch) = holder
        .get_watch(&held.path)
        .await
        .expect("get_watch")
        .expect("the holder's node exists");
    assert_eq!(node.data, b"mine");
    assert!(node.stat.ephemeral);
    assert_eq!(node.stat.stamp, held.stamp);

    let st = revoker
        .set(&held.path, REVOKE, None)
        .await
        .expect("the revoker's set");
    assert_eq!(st.stamp, held.stamp, "a set by another keeps the stamp");
    assert!(st.ephemeral, "a set by another keeps the node ephemeral");
    within("the holder's data watch fires on the revoker's set", watch)
        .await
        .expect("the watch fires Ok");
    let (node, watch) = holder
        .get_watch(&held.path)
        .await
        .expect("get_watch")
        .expect("the holder's node is still there");
    assert_eq!(node.data, REVOKE);
    assert!(node.stat.ephemeral, "still ephemeral after another's set");
    assert_eq!(node.stat.stamp, held.stamp, "the stamp is unchanged");

    // The holder's fence still holds for its guarded writes.
    let data = format!("{root}/data/value");
    match holder
        .guarded(
            &fence,
            Op::Create {
                path: data.clone(),
                data: b"written under the fence".to_vec(),
                mode: CreateMode::Persistent,
            },
        )
        .await
    {
        Ok(OpResult::Created(_)) => {}
        other => panic!("guarded create after another's set on the fence: got {other:?}"),
    }

    // The same bytes again still count as a change.
    revoker
        .set(&held.path, REVOKE, None)
        .await
        .expect("the same bytes again");
    within("the data watch fires on a set to the same bytes", watch)
        .await
        .expect("the watch fires Ok");

    // The writer's end takes nothing with it: the node is the holder's.
    revoker.close().await.expect("close the revoker");
    let node = observer
        .get(&held.path)
        .await
        .expect("get")
        .expect("the node outlives the session that set it");
    assert!(node.stat.ephemeral);
    assert_eq!(node.stat.stamp, held.stamp);
    match holder
        .guarded(
            &fence,
            Op::Set {
                path: data.clone(),
                data: b"again".to_vec(),
                version: None,
            },
        )
        .await
    {
        Ok(OpResult::Set(_)) => {}
        other => panic!("guarded set after the revoker left: got {other:?}"),
    }
    let gone = observer
        .watch_gone(&held.path)
        .await
        .expect("watch_gone")
        .expect("the node exists");
    holder.close().await.expect("close the holder");
    within("the node goes with the holder's session", gone)
        .await
        .expect("deleted");
    assert!(observer.get(&held.path).await.expect("get").is_none());
    observer.close().await.expect("close");
}

/// A data watch fires when the node is deleted, by another session or
/// by its own.
pub async fn prim_get_watch_fires_on_delete(h: &dyn Harness) {
    let root = h.root("prim_get_watch_fires_on_delete");
    let a = h.open().await;
    let b = h.open().await;
    let p = format!("{root}/node");
    for deleter in [&a, &b] {
        a.create(&p, b"x", CreateMode::Persistent)
            .await
            .expect("create");
        let (_, watch) = b
            .get_watch(&p)
            .await
            .expect("get_watch")
            .expect("the node exists");
        deleter.delete(&p, None).await.expect("delete");
        within("the data watch fires on delete", watch)
            .await
            .expect("the watch fires Ok");
        assert!(
            b.get_watch(&p).await.expect("get_watch").is_none(),
            "deleted"
        );
    }
    a.close().await.expect("close");
    b.close().await.expect("close");
}

/// A data watch on an ephemeral node fires when the node's session ends:
/// expired, and closed.
pub async fn prim_get_watch_fires_on_owner_end(h: &dyn Harness) {
    let root = h.root("prim_get_watch_fires_on_owner_end");
    let watcher = h.open().await;
    for expire in [true, false] {
        let owner = h.open().await;
        let held = owner
            .create(
                &format!("{root}/lock/holder-"),
                b"",
                CreateMode::EphemeralSequential,
            )
            .await
            .expect("create");
        let (node, watch) = watcher
            .get_watch(&held.path)
            .await
            .expect("get_watch")
            .expect("the owner's node is visible");
        assert!(node.stat.ephemeral);
        if expire {
            h.expire(&owner).await;
        } else {
            owner.close().await.expect("close");
        }
        within("the data watch fires at the owner's end", watch)
            .await
            .expect("the watch fires Ok");
        assert!(
            watcher
                .get_watch(&held.path)
                .await
                .expect("get_watch")
                .is_none(),
            "the node went with its session"
        );
    }
    watcher.close().await.expect("close");
}

/// A data watch does not fire for changes to other nodes: a sibling
/// (also one whose name extends the node's), a child, the parent. Each
/// unrelated change is awaited through a watch of the same session that
/// it does fire; where one session's events arrive in order (ZooKeeper,
/// Redis, memory) a data watch that fired on it would be ready by then.
/// Then a real change fires it.
pub async fn prim_get_watch_ignores_other_nodes(h: &dyn Harness) {
    let root = h.root("prim_get_watch_ignores_other_nodes");
    let a = h.open().await;
    let b = h.open().await;
    let dir = format!("{root}/dir");
    let p = format!("{dir}/n");
    let sibling = format!("{dir}/nx");
    let child = format!("{p}/kid");
    a.create(&p, b"same", CreateMode::Persistent)
        .await
        .expect("create");
    a.create(&sibling, b"", CreateMode::Persistent)
        .await
        .expect("create the sibling");
    let (_, mut watch) = b
        .get_watch(&p)
        .await
        .expect("get_watch")
        .expect("the node exists");

    // Each unrelated change, with a watch of b's that it fires.
    let reference = data_watch(&b, &sibling).await;
    a.set(&sibling, b"changed", None)
        .await
        .expect("set sibling");
    within("the sibling's watch", reference).await.expect("Ok");
    assert!(!is_ready(&mut watch).await, "fired for a sibling's set");

    let (_, reference) = b.children_watch(&p).await.expect("children_watch");
    a.create(&child, b"", CreateMode::Persistent)
        .await
        .expect("create child");
    within("the node's children watch", reference)
        .await
        .expect("Ok");
    assert!(!is_ready(&mut watch).await, "fired for a child's create");

    let reference = data_watch(&b, &child).await;
    a.set(&child, b"changed", None).await.expect("set child");
    within("the child's watch", reference).await.expect("Ok");
    assert!(!is_ready(&mut watch).await, "fired for a child's set");

    let reference = data_watch(&b, &child).await;
    a.delete(&child, None).await.expect("delete child");
    within("the child's watch", reference).await.expect("Ok");
    assert!(!is_ready(&mut watch).await, "fired for a child's delete");

    let reference = data_watch(&b, &dir).await;
    a.set(&dir, b"changed", None).await.expect("set parent");
    within("the parent's watch", reference).await.expect("Ok");
    assert!(!is_ready(&mut watch).await, "fired for the parent's set");

    let reference = data_watch(&b, &sibling).await;
    a.delete(&sibling, None).await.expect("delete sibling");
    within("the sibling's watch", reference).await.expect("Ok");
    assert!(!is_ready(&mut watch).await, "fired for a sibling's delete");

    // The node itself, set to the data it has: that fires it.
    a.set(&p, b"same", None).await.expect("set");
    within("the data watch fires on its node's set", watch)
        .await
        .expect("the watch fires Ok");
    a.close().await.expect("close");
    b.close().await.expect("close");
}

/// A set racing `get_watch` is never missed: many data watches are armed
/// at the moment another session sets the node; each either read the new
/// data or fires. And a set made right after `get_watch` returns fires
/// it. A missed change hangs one.
pub async fn prim_get_watch_races_set(h: &dyn Harness) {
    const ROUNDS: usize = 16;
    const WATCHERS: usize = 8;
    let root = h.root("prim_get_watch_races_set");
    let writer = h.open().await;
    let readers = [h.open().await, h.open().await];
    let p = format!("{root}/node");
    writer
        .create(&p, b"start", CreateMode::Persistent)
        .await
        .expect("create");
    for round in 0..ROUNDS {
        let value = format!("v-{round}").into_bytes();
        let mut tasks = JoinSet::new();
        for i in 0..WATCHERS {
            let (s, path, want) = (readers[i % readers.len()].clone(), p.clone(), value.clone());
            tasks.spawn(async move {
                let (node, watch) = s
                    .get_watch(&path)
                    .await
                    .expect("get_watch")
                    .expect("the node exists");
                // The set is either in the read or fires the watch.
                if node.data != want {
                    watch.await.expect("the watch fires Ok");
                }
            });
            if i == WATCHERS / 2 {
                let (w, p, value) = (writer.clone(), p.clone(), value.clone());
                tasks.spawn(async move {
                    w.set(&p, &value, None).await.expect("set");
                });
            }
        }
        within("every data watch racing a set", async {
            while let Some(r) = tasks.join_next().await {
                r.expect("task");
            }
        })
        .await;
    }
    // A set issued the moment get_watch has returned.
    for (round, reader) in readers.iter().enumerate() {
        let (_, watch) = reader
            .get_watch(&p)
            .await
            .expect("get_watch")
            .expect("the node exists");
        writer
            .set(&p, format!("right after {round}").as_bytes(), None)
            .await
            .expect("set");
        within("the data watch sees a set right after it", watch)
            .await
            .expect("the watch fires Ok");
    }
    writer.close().await.expect("close");
    for r in readers {
        r.close().await.expect("close");
    }
}

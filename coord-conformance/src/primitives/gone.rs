//! Waiting for a node to go in the primitive contract: `wait_gone`,
//! `watch_gone` and `watch_gone_listed` resolve on its delete, never miss
//! one that races them, and are armed when they return.

use coord_core::{CreateMode, Session};
use tokio::task::JoinSet;

use crate::{within, Harness};

/// `wait_gone` resolves at once for a node that does not exist (nor its
/// parent), and when the node is deleted.
pub async fn prim_wait_gone_basics(h: &dyn Harness) {
    let root = h.root("prim_wait_gone_basics");
    let a = h.open().await;
    let b = h.open().await;
    within(
        "wait_gone on a missing node",
        a.wait_gone(&format!("{root}/none/x")),
    )
    .await
    .expect("resolves Ok");
    let p = format!("{root}/node");
    a.create(&p, b"", CreateMode::Persistent)
        .await
        .expect("create");
    let waiter = {
        let b = b.clone();
        let p = p.clone();
        tokio::spawn(async move { b.wait_gone(&p).await })
    };
    a.delete(&p, None).await.expect("delete");
    within("wait_gone after delete", waiter)
        .await
        .expect("waiter task")
        .expect("resolves Ok");
    // Once gone, at once again.
    within("wait_gone on a deleted node", b.wait_gone(&p))
        .await
        .expect("resolves Ok");
    a.close().await.expect("close");
    b.close().await.expect("close");
}

/// `wait_gone` never misses a delete racing its check: many waits on many
/// nodes, each started together with the node's delete, all resolve.
pub async fn prim_wait_gone_races_delete(h: &dyn Harness) {
    const NODES: usize = 24;
    const WAITERS: usize = 3;
    let root = h.root("prim_wait_gone_races_delete");
    let deleter = h.open().await;
    let waiters: Vec<Session> = {
        let mut v = Vec::new();
        for _ in 0..WAITERS {
            v.push(h.open().await);
        }
        v
    };
    let mut paths = Vec::new();
    for i in 0..NODES {
        let p = format!("{root}/n-{i}");
        deleter
            .create(&p, b"", CreateMode::Persistent)
            .await
            .expect("create");
        paths.push(p);
    }
    let mut tasks = JoinSet::new();
    for (i, p) in paths.iter().enumerate() {
        // Waiters before and after the delete is started, interleaved.
        for (j, w) in waiters.iter().enumerate() {
            if (i + j) % 2 == 0 {
                let (w, p) = (w.clone(), p.clone());
                tasks.spawn(async move { w.wait_gone(&p).await });
            }
        }
        let (d, dp) = (deleter.clone(), p.clone());
        tasks.spawn(async move { d.delete(&dp, None).await });
        for (j, w) in waiters.iter().enumerate() {
            if (i + j) % 2 == 1 {
                let (w, p) = (w.clone(), p.clone());
                tasks.spawn(async move { w.wait_gone(&p).await });
            }
        }
    }
    let mut done = 0;
    within("every wait_gone racing a delete", async {
        while let Some(r) = tasks.join_next().await {
            r.expect("task").expect("wait_gone / delete Ok");
            done += 1;
        }
    })
    .await;
    assert_eq!(done, NODES * (WAITERS + 1));
    for s in waiters.iter().chain([&deleter]) {
        s.close().await.expect("close");
    }
}

/// `watch_gone` is armed when it returns: `None` for a missing node; a
/// data change does not fire it; a delete after it is never missed, even
/// when the node is made again at once (a release and a quick re-take).
pub async fn prim_watch_gone_is_armed(h: &dyn Harness) {
    let node = format!("{}/n", h.root("prim_watch_gone_is_armed"));
    let a = h.open().await;
    let b = h.open().await;
    assert!(
        b.watch_gone(&node).await.expect("arm").is_none(),
        "a watch on no node"
    );
    a.create(&node, b"1", CreateMode::Persistent)
        .await
        .expect("create");
    let mut gone = b
        .watch_gone(&node)
        .await
        .expect("arm")
        .expect("the node exists");
    a.set(&node, b"2", None).await.expect("set");
    // Once b reads the new data, a watch that fired on the change would be
    // ready (ZooKeeper delivers the event before the new state).
    let seen = b.get(&node).await.expect("get").expect("exists").data;
    assert!(
        tokio::time::timeout(std::time::Duration::ZERO, &mut gone)
            .await
            .is_err()
            || seen != b"2",
        "a data change fired the deletion watch"
    );
    a.delete(&node, None).await.expect("delete");
    a.create(&node, b"3", CreateMode::Persistent)
        .await
        .expect("re-create");
    within("the watch on the deleted node fires", gone)
        .await
        .expect("deleted, though made again");
    let again = b
        .watch_gone(&node)
        .await
        .expect("arm")
        .expect("the new node exists");
    a.delete(&node, None).await.expect("delete");
    within("the watch on the new node fires", again)
        .await
        .expect("deleted");
    let _ = a.close().await;
    let _ = b.close().await;
}

/// `watch_gone_listed` waits for the node a listing showed, not for
/// whatever has its name now: after its session deleted it and made
/// another at the same prefix (etcd may give the new node the same name,
/// with a new sequence), it reports the listed node gone rather than wait
/// for the new one, which may be queued behind the waiter (a deadlock).
pub async fn prim_watch_gone_listed_waits_for_the_listed_node(h: &dyn Harness) {
    let dir = h.root("prim_watch_gone_listed_waits_for_the_listed_node");
    let prefix = format!("{dir}/n-");
    let a = h.open().await;
    let b = h.open().await;
    let first = a
        .create(&prefix, b"", CreateMode::EphemeralSequential)
        .await
        .expect("create");
    let listed = b.children(&dir).await.expect("list");
    let [child] = listed.as_slice() else {
        panic!("one child listed, got {listed:?}")
    };
    let seq = child.sequence;
    assert!(seq.is_some(), "a sequential node has a sequence");
    let armed = b
        .watch_gone_listed(&first.path, seq)
        .await
        .expect("arm")
        .expect("the listed node is there");
    a.delete(&first.path, None).await.expect("delete");
    within("the watch on the listed node fires", armed)
        .await
        .expect("deleted");
    // Made again at the prefix: perhaps the same name, a new node.
    let second = a
        .create(&prefix, b"", CreateMode::EphemeralSequential)
        .await
        .expect("create");
    assert!(
        b.watch_gone_listed(&first.path, seq)
            .await
            .expect("arm")
            .is_none(),
        "a watch for the listed node waits for another ({} now at {})",
        second.path,
        first.path
    );
    let now = b.children(&dir).await.expect("list");
    let [current] = now.as_slice() else {
        panic!("one child listed, got {now:?}")
    };
    let watch = b
        .watch_gone_listed(&second.path, current.sequence)
        .await
        .expect("arm")
        .expect("the new node is there");
    a.delete(&second.path, None).await.expect("delete");
    within("the watch on the new node fires", watch)
        .await
        .expect("deleted");
    let _ = a.close().await;
    let _ = b.close().await;
}

//! Conformance of TTL nodes ([`CreateMode::PersistentWithTtl`] and
//! [`CreateMode::PersistentSequentialWithTtl`]; see `CreateMode`'s "TTL
//! nodes"): persistent nodes the backend deletes once they have gone their
//! TTL without a change.
//!
//! On ZooKeeper these need a server started with
//! `-Dzookeeper.extendedTypesEnabled=true` (and, so a test does not wait a
//! minute for the reaper, a short `znode.container.checkIntervalMs`), as
//! `scripts/servers/zk.sh` starts it.

use std::time::Duration;

use coord_core::path::join;
use coord_core::{CreateMode, Error, Fence, Op, SessionState, Transaction, MAX_NODE_TTL};
use tokio::time::Instant;

use crate::{await_state, within, Harness};

/// The TTL the expiring tests use: whole seconds (etcd's leases count in
/// seconds) and at least etcd's minimum lease TTL with default settings.
const TTL: Duration = Duration::from_secs(2);

/// Slack for clocks measured in whole milliseconds by the server.
const CLOCK_SLACK: Duration = Duration::from_millis(100);

/// A TTL node exists and is not ephemeral; changed more often than its TTL
/// it outlives several TTLs (a `set` restarts the TTL); left alone, it is
/// deleted, and no earlier than one TTL after its last change.
pub async fn ttl_node_lives_while_changed_then_expires(h: &dyn Harness) {
    let path = join(&h.root("ttl_node_lives_while_changed_then_expires"), "n");
    let (a, b) = (h.open().await, h.open().await);
    a.create(&path, b"v0", CreateMode::PersistentWithTtl(TTL))
        .await
        .expect("create a TTL node");
    let node = b
        .get(&path)
        .await
        .expect("get")
        .expect("the TTL node exists");
    assert_eq!(node.data, b"v0");
    assert!(!node.stat.ephemeral, "a TTL node is not ephemeral");
    assert_eq!(node.stat.owner, None, "no session owns a TTL node");
    let (seen, _watch) = b
        .get_watch(&path)
        .await
        .expect("get_watch")
        .expect("the TTL node exists");
    assert!(
        !seen.stat.ephemeral && seen.stat.owner.is_none(),
        "get_watch: a TTL node is not ephemeral: {:?}",
        seen.stat
    );

    // Keep changing it, a set every quarter TTL, for two and a half TTLs:
    // each set must find it (a set of a missing node is NotFound).
    let started = Instant::now();
    let mut round = 0u32;
    let mut last_set = Instant::now();
    while started.elapsed() < TTL * 5 / 2 {
        tokio::time::sleep(TTL / 4).await;
        round += 1;
        last_set = Instant::now();
        let data = format!("v{round}");
        let stat = b
            .set(&path, data.as_bytes(), None)
            .await
            .unwrap_or_else(|e| {
                panic!("set #{round} of a TTL node changed every TTL/4 failed: {e}")
            });
        assert!(
            !stat.ephemeral && stat.owner.is_none(),
            "set #{round}: a TTL node's stat says ephemeral: {stat:?}"
        );
    }
    let node = a.get(&path).await.expect("get").expect("still there");
    assert_eq!(node.data, format!("v{round}").as_bytes());

    // Left alone, it goes.
    let gone = b
        .watch_gone(&path)
        .await
        .expect("watch_gone")
        .expect("the node is there to watch");
    within("the TTL node's deletion after its TTL", gone)
        .await
        .expect("the watch ends with the deletion");
    let lived = last_set.elapsed();
    assert!(
        lived + CLOCK_SLACK >= TTL,
        "deleted {lived:?} after its last change, before its TTL of {TTL:?}"
    );
    assert_eq!(b.get(&path).await.expect("get"), None);
    let _ = a.close().await;
    let _ = b.close().await;
}

/// A sequential TTL node gets a unique name and a sequence, as a
/// persistent-sequential one; each is deleted after its TTL.
pub async fn ttl_node_sequential(h: &dyn Harness) {
    let dir = h.root("ttl_node_sequential");
    let s = h.open().await;
    s.ensure_dir(&dir).await.expect("ensure_dir");
    let prefix = join(&dir, "item-");
    let mode = CreateMode::PersistentSequentialWithTtl(TTL);
    let first = s.create(&prefix, b"1", mode).await.expect("create 1");
    let second = s.create(&prefix, b"2", mode).await.expect("create 2");
    assert_ne!(first.path, second.path, "sequential names are unique");
    assert!(first.path.starts_with(&prefix) && second.path.starts_with(&prefix));
    let (Some(q1), Some(q2)) = (first.sequence, second.sequence) else {
        panic!("a sequential TTL node has a sequence: {first:?} {second:?}");
    };
    assert!(q1 < q2, "sequences follow creation order: {q1} then {q2}");
    let names: Vec<String> = s
        .children(&dir)
        .await
        .expect("children")
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(
        names,
        vec![
            coord_core::path::name(&first.path).to_owned(),
            coord_core::path::name(&second.path).to_owned()
        ]
    );
    // Arm both watches first: the two expire at about the same time.
    let mut watches = Vec::new();
    for created in [&first, &second] {
        let node = s.get(&created.path).await.expect("get").expect("node");
        assert!(
            !node.stat.ephemeral,
            "a sequential TTL node is not ephemeral"
        );
        watches.push(s.watch_gone(&created.path).await.expect("watch_gone"));
    }
    for gone in watches.into_iter().flatten() {
        within("a sequential TTL node's deletion", gone)
            .await
            .expect("deleted");
    }
    assert!(
        s.children(&dir).await.expect("children").is_empty(),
        "both sequential TTL nodes are gone"
    );
    let _ = s.close().await;
}

/// A TTL out of range (zero, under [`coord_core::MIN_NODE_TTL`], over
/// [`MAX_NODE_TTL`]) is refused with `InvalidArgument` before any I/O: on a
/// closed session too (not `SessionClosed`), and no node is made. A TTL
/// create in a guarded write is refused the same way.
pub async fn ttl_node_bad_ttl_refused(h: &dyn Harness) {
    let root = h.root("ttl_node_bad_ttl_refused");
    let path = join(&root, "n");
    let s = h.open().await;
    let bad = [
        Duration::ZERO,
        Duration::from_micros(500),
        MAX_NODE_TTL + Duration::from_millis(1),
        Duration::MAX,
    ];
    for ttl in bad {
        for mode in [
            CreateMode::PersistentWithTtl(ttl),
            CreateMode::PersistentSequentialWithTtl(ttl),
        ] {
            let got = s.create(&path, b"", mode).await;
            assert!(
                matches!(got, Err(Error::InvalidArgument(_))),
                "{mode:?} was not refused: {got:?}"
            );
        }
    }
    assert!(!s.exists(&path).await.expect("exists"), "no node was made");
    // The limits themselves are accepted.
    let max = s
        .create(&path, b"", CreateMode::PersistentWithTtl(MAX_NODE_TTL))
        .await
        .expect("a TTL of MAX_NODE_TTL is accepted");
    s.delete(&max.path, None).await.expect("delete");

    // A guarded write never makes a TTL node.
    let fence_path = join(&root, "fence");
    let fence = s
        .create(&fence_path, b"", CreateMode::Ephemeral)
        .await
        .expect("fence");
    let op = Op::Create {
        path: path.clone(),
        data: Vec::new(),
        mode: CreateMode::PersistentWithTtl(TTL),
    };
    let got = s
        .guarded(
            &Fence {
                path: fence_path,
                stamp: fence.stamp,
            },
            op,
        )
        .await;
    assert!(
        matches!(got, Err(Error::InvalidArgument(_))),
        "a guarded TTL create was not refused: {got:?}"
    );
    assert!(!s.exists(&path).await.expect("exists"), "no node was made");

    // Before any I/O: a closed session still says InvalidArgument.
    s.close().await.expect("close");
    let got = s
        .create(&path, b"", CreateMode::PersistentWithTtl(Duration::ZERO))
        .await;
    assert!(
        matches!(got, Err(Error::InvalidArgument(_))),
        "a bad TTL on a closed session: {got:?}"
    );
}

/// A transaction creates TTL nodes as `create` does: next to a plain
/// persistent node made by the same transaction, the TTL node is deleted
/// once it has gone its TTL without a change, and the other stays. A TTL
/// out of range in a transaction is refused before any I/O.
pub async fn ttl_node_in_transaction(h: &dyn Harness) {
    let dir = h.root("ttl_node_in_transaction");
    let s = h.open().await;
    s.ensure_dir(&dir).await.expect("ensure_dir");
    let (ttl_path, kept) = (join(&dir, "ttl"), join(&dir, "kept"));
    let bad = Transaction::new().create_with(
        ttl_path.as_str(),
        "",
        CreateMode::PersistentWithTtl(Duration::ZERO),
    );
    assert!(
        matches!(s.commit(bad).await, Err(Error::InvalidArgument(_))),
        "a zero TTL in a transaction is refused"
    );
    let made = Instant::now();
    s.commit(
        Transaction::new()
            .create_with(ttl_path.as_str(), "t", CreateMode::PersistentWithTtl(TTL))
            .create_with(
                join(&dir, "seq-"),
                "s",
                CreateMode::PersistentSequentialWithTtl(TTL),
            )
            .create(kept.as_str(), "k"),
    )
    .await
    .expect("a transaction of TTL creates");
    let node = s.get(&ttl_path).await.expect("get").expect("the TTL node");
    assert!(!node.stat.ephemeral, "a TTL node is not ephemeral");
    let gone = s.watch_gone(&ttl_path).await.expect("watch_gone");
    if let Some(gone) = gone {
        within("the TTL node's deletion", gone)
            .await
            .expect("deleted");
    }
    assert!(
        made.elapsed() + CLOCK_SLACK >= TTL,
        "deleted after {:?}, before its TTL of {TTL:?}",
        made.elapsed()
    );
    let left: Vec<String> = within("the sequential TTL node's deletion", async {
        loop {
            let (children, watch) = s.children_watch(&dir).await.expect("children_watch");
            let names: Vec<String> = children.into_iter().map(|c| c.name).collect();
            if !names.iter().any(|n| n.starts_with("seq-")) {
                return names;
            }
            watch.await.expect("children watch");
        }
    })
    .await;
    assert_eq!(left, ["kept"], "only the plain node stays");
    let _ = s.close().await;
}

/// A TTL node does not belong to its session: it outlives the close and
/// the expiry of the session that made it.
pub async fn ttl_node_outlives_its_session(h: &dyn Harness) {
    let root = h.root("ttl_node_outlives_its_session");
    let long = CreateMode::PersistentWithTtl(Duration::from_secs(600));
    let observer = h.open().await;

    let closed = join(&root, "closed");
    let a = h.open().await;
    a.create(&closed, b"a", long).await.expect("create");
    a.close().await.expect("close");

    let expired = join(&root, "expired");
    let b = h.open().await;
    b.create(&expired, b"b", long).await.expect("create");
    // An ephemeral node next to it shows the expiry has taken effect.
    let eph = join(&root, "eph");
    b.create(&eph, b"", CreateMode::Ephemeral)
        .await
        .expect("create ephemeral");
    h.expire(&b).await;
    await_state(&b, SessionState::Expired).await;
    within("the expired session's ephemeral node to go", async {
        observer.wait_gone(&eph).await
    })
    .await
    .expect("wait_gone");

    for (path, data) in [(&closed, b"a"), (&expired, b"b")] {
        let node = observer
            .get(path)
            .await
            .expect("get")
            .unwrap_or_else(|| panic!("the TTL node {path} went with its session"));
        assert_eq!(&node.data, data);
        assert!(!node.stat.ephemeral, "{path} is not ephemeral");
        observer.delete(path, None).await.expect("delete");
    }
    let _ = observer.close().await;
}

/// A child under a TTL node: on ZooKeeper and in memory the child keeps
/// the node past its TTL (it goes once the child is gone); on etcd and
/// Redis children of a TTL node are refused with `NotSupported`, as under
/// an ephemeral node.
pub async fn ttl_node_children_keep_it_or_are_refused(h: &dyn Harness) {
    let root = h.root("ttl_node_children_keep_it_or_are_refused");
    let s = h.open().await;
    let parent = join(&root, "parent");
    let child = join(&parent, "child");
    s.create(&parent, b"", CreateMode::PersistentWithTtl(TTL))
        .await
        .expect("create the TTL node");
    let made = s.create(&child, b"", CreateMode::Persistent).await;
    match s.backend() {
        "etcd" | "redis" => {
            assert!(
                matches!(made, Err(Error::NotSupported { .. })),
                "a child of a TTL node on {}: {made:?}",
                s.backend()
            );
        }
        _ => {
            made.expect("a child of a TTL node");
            // A childless TTL node made just after it: once that one has
            // been deleted, the parent's TTL has passed too.
            let marker = join(&root, "marker");
            s.create(&marker, b"", CreateMode::PersistentWithTtl(TTL))
                .await
                .expect("create the marker");
            within("the marker's TTL", s.wait_gone(&marker))
                .await
                .expect("marker gone");
            assert!(
                s.exists(&parent).await.expect("exists"),
                "the TTL node went while it had a child"
            );
            s.delete(&child, None).await.expect("delete the child");
            within("the childless TTL node's deletion", s.wait_gone(&parent))
                .await
                .expect("parent gone");
        }
    }
    let _ = s.close().await;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __ttl_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            ttl::ttl_node_lives_while_changed_then_expires,
            ttl::ttl_node_sequential,
            ttl::ttl_node_bad_ttl_refused,
            ttl::ttl_node_outlives_its_session,
            ttl::ttl_node_in_transaction,
            ttl::ttl_node_children_keep_it_or_are_refused,
        );
    };
}

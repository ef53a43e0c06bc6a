//! Nodes of the primitive contract: create, get, delete and `take_leaf`,
//! what is missing, and compare-and-set / compare-and-delete on versions.

use coord_core::{CreateMode, Error};
use tokio::task::JoinSet;

use super::support::assert_err;
use crate::Harness;

/// Create makes missing parents (persistent), answers with the path asked
/// for, a first version that `get` agrees with, and refuses a taken path.
pub async fn prim_create_get_basics(h: &dyn Harness) {
    let root = h.root("prim_create_get_basics");
    let s = h.open().await;
    let leaf = format!("{root}/a/b/c");
    let c = s
        .create(&leaf, b"hello", CreateMode::Persistent)
        .await
        .expect("create with missing parents");
    assert_eq!(c.path, leaf);
    assert_eq!(c.sequence, None, "a non-sequential create has no sequence");
    for dir in [root.clone(), format!("{root}/a"), format!("{root}/a/b")] {
        let node = s.get(&dir).await.expect("get").expect("parent was made");
        assert!(!node.stat.ephemeral, "parents are persistent");
    }
    let node = s.get(&leaf).await.expect("get").expect("the node exists");
    assert_eq!(node.data, b"hello");
    assert_eq!(node.stat.version, c.version);
    assert_eq!(node.stat.stamp, c.stamp);
    assert!(!node.stat.ephemeral);

    assert_err!(
        s.create(&leaf, b"again", CreateMode::Persistent).await,
        Error::AlreadyExists { .. }
    );
    assert_err!(
        s.create(&leaf, b"again", CreateMode::Ephemeral).await,
        Error::AlreadyExists { .. }
    );
    let node = s.get(&leaf).await.expect("get").expect("still there");
    assert_eq!(node.data, b"hello", "a refused create changed the node");

    // Another session sees it too, and gets the same refusal.
    let t = h.open().await;
    assert_err!(
        t.create(&leaf, b"", CreateMode::Persistent).await,
        Error::AlreadyExists { .. }
    );
    assert!(t.exists(&leaf).await.expect("exists"));
    s.close().await.expect("close");
    t.close().await.expect("close");
}

/// Reading, writing and deleting what is not there.
pub async fn prim_missing_nodes(h: &dyn Harness) {
    let root = h.root("prim_missing_nodes");
    let s = h.open().await;
    s.ensure_dir(&root).await.expect("ensure_dir");
    let missing = format!("{root}/missing");
    assert!(s.get(&missing).await.expect("get").is_none());
    assert!(!s.exists(&missing).await.expect("exists"));
    assert_err!(s.set(&missing, b"x", None).await, Error::NotFound { .. });
    assert_err!(s.set(&missing, b"x", Some(0)).await, Error::NotFound { .. });
    assert_err!(s.delete(&missing, None).await, Error::NotFound { .. });
    assert_err!(s.delete(&missing, Some(0)).await, Error::NotFound { .. });
    assert_eq!(s.take_leaf(&missing).await.expect("take_leaf"), None);
    assert_err!(s.children(&missing).await, Error::NotFound { .. });
    assert_err!(
        s.children_prefixed(&missing, "a-").await,
        Error::NotFound { .. }
    );
    assert_err!(s.children_watch(&missing).await, Error::NotFound { .. });
    assert!(
        s.get(&missing).await.expect("get").is_none(),
        "no node made"
    );
    s.close().await.expect("close");
}

/// A node with children cannot be deleted; once they are gone it can.
pub async fn prim_delete_not_empty(h: &dyn Harness) {
    let root = h.root("prim_delete_not_empty");
    let s = h.open().await;
    let dir = format!("{root}/dir");
    let child = format!("{dir}/child");
    // Made on its own: a parent that `create` makes is a container on
    // ZooKeeper, which the server may delete as soon as it is emptied,
    // before this test deletes it.
    s.create(&dir, b"", CreateMode::Persistent)
        .await
        .expect("create dir");
    s.create(&child, b"", CreateMode::Persistent)
        .await
        .expect("create");
    assert_err!(s.delete(&dir, None).await, Error::NotEmpty { .. });
    let v = s.get(&dir).await.expect("get").expect("dir").stat.version;
    assert_err!(s.delete(&dir, Some(v)).await, Error::NotEmpty { .. });
    assert!(s.exists(&child).await.expect("exists"), "child survived");

    // An ephemeral child counts the same.
    let eph = format!("{root}/eph-dir/e");
    s.create(&eph, b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    assert_err!(
        s.delete(&format!("{root}/eph-dir"), None).await,
        Error::NotEmpty { .. }
    );

    s.delete(&child, None).await.expect("delete child");
    s.delete(&dir, None).await.expect("delete the emptied dir");
    assert!(!s.exists(&dir).await.expect("exists"));
    s.close().await.expect("close");
}

/// `take_leaf` deletes a leaf and returns its data, once: two sessions
/// taking the same nodes at once get each node's data exactly once (no
/// answer is lost here) and leave none; a node gone is `None`. A session
/// may take its own ephemeral-sequential node too (on etcd, whose name it
/// lends to its next one: the name is free again afterwards).
pub async fn prim_take_leaf_returns_the_data_once(h: &dyn Harness) {
    let root = h.root("prim_take_leaf_returns_the_data_once");
    let (a, b) = (h.open().await, h.open().await);
    let items = format!("{root}/items");
    // Made on its own: it is listed once emptied, and a directory that
    // `create` makes is a container on ZooKeeper, which the server may
    // delete as soon as it is empty.
    a.ensure_dir(&items).await.expect("ensure_dir");
    let mut made = Vec::new();
    for i in 0..20 {
        let data = format!("item {i}").into_bytes();
        let c = a
            .create(
                &format!("{items}/item-"),
                &data,
                CreateMode::PersistentSequential,
            )
            .await
            .expect("create");
        made.push((c.path, data));
    }
    let mut takers = JoinSet::new();
    for s in [a.clone(), b.clone()] {
        let made = made.clone();
        takers.spawn(async move {
            let mut got = Vec::new();
            for (path, _) in made {
                if let Some(data) = s.take_leaf(&path).await.expect("take_leaf") {
                    got.push((path, data));
                }
            }
            got
        });
    }
    let mut taken = Vec::new();
    while let Some(got) = takers.join_next().await {
        taken.extend(got.expect("join"));
    }
    taken.sort();
    made.sort();
    assert_eq!(taken, made, "each node taken exactly once, with its data");
    assert!(a.children(&items).await.expect("children").is_empty());
    assert_eq!(a.take_leaf(&made[0].0).await.expect("take again"), None);

    let prefix = format!("{root}/own/n-");
    let own = a
        .create(&prefix, b"mine", CreateMode::EphemeralSequential)
        .await
        .expect("create");
    assert_eq!(
        a.take_leaf(&own.path).await.expect("take own"),
        Some(b"mine".to_vec())
    );
    assert!(a.get(&own.path).await.expect("get").is_none());
    let next = a
        .create(&prefix, b"next", CreateMode::EphemeralSequential)
        .await
        .expect("create after the take");
    let node = a
        .get(&next.path)
        .await
        .expect("get")
        .expect("the next node");
    assert_eq!(node.data, b"next");
    a.close().await.expect("close");
    b.close().await.expect("close");
}

/// Compare-and-set and compare-and-delete: a stale version is a typed
/// `VersionMismatch` and changes nothing; the current one works and the
/// version changes.
pub async fn prim_cas_versions(h: &dyn Harness) {
    let root = h.root("prim_cas_versions");
    let s = h.open().await;
    let p = format!("{root}/node");
    let c = s
        .create(&p, b"v0", CreateMode::Persistent)
        .await
        .expect("create");
    let v0 = c.version;
    assert_eq!(
        s.get(&p).await.expect("get").expect("node").stat.version,
        v0
    );

    let st1 = s.set(&p, b"v1", Some(v0)).await.expect("set at v0");
    let v1 = st1.version;
    assert_ne!(v1, v0, "a set changes the version");
    assert_eq!(st1.stamp, c.stamp, "a set keeps the stamp");
    let node = s.get(&p).await.expect("get").expect("node");
    assert_eq!(node.data, b"v1");
    assert_eq!(node.stat.version, v1);

    match s.set(&p, b"stale", Some(v0)).await {
        Err(Error::VersionMismatch { path, expected }) => {
            assert_eq!(path, p);
            assert_eq!(expected, v0);
        }
        other => panic!("set at a stale version: expected VersionMismatch, got {other:?}"),
    }
    let node = s.get(&p).await.expect("get").expect("node");
    assert_eq!(node.data, b"v1", "a refused set changed the data");
    assert_eq!(node.stat.version, v1);

    // An unconditional set works whatever the version and changes it.
    let v2 = s.set(&p, b"v2", None).await.expect("set").version;
    assert_ne!(v2, v1);

    // Another session's CAS sees the same versions.
    let t = h.open().await;
    assert_err!(
        t.set(&p, b"stale", Some(v1)).await,
        Error::VersionMismatch { .. }
    );
    let v3 = t.set(&p, b"v3", Some(v2)).await.expect("set at v2").version;
    assert_ne!(v3, v2);

    match s.delete(&p, Some(v2)).await {
        Err(Error::VersionMismatch { path, expected }) => {
            assert_eq!(path, p);
            assert_eq!(expected, v2);
        }
        other => panic!("delete at a stale version: expected VersionMismatch, got {other:?}"),
    }
    assert!(
        s.exists(&p).await.expect("exists"),
        "a refused delete deleted"
    );
    s.delete(&p, Some(v3)).await.expect("delete at v3");
    assert!(!s.exists(&p).await.expect("exists"));
    s.close().await.expect("close");
    t.close().await.expect("close");
}

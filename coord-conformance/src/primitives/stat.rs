//! Node metadata of the primitive contract: `Stat::created_at` and
//! `Stat::owner`.

use std::time::{Duration, SystemTime};

use coord_core::CreateMode;

use crate::Harness;

/// `Stat::created_at`: the server's creation time on ZooKeeper, Redis and
/// memory (near the test's clock: the servers run beside it), none on
/// etcd. `get`, `get_watch` and a `set`'s answer agree, and a set does
/// not change it.
pub async fn prim_created_at(h: &dyn Harness) {
    /// How far the server's clock may be from the test's.
    const SKEW: Duration = Duration::from_secs(120);
    let root = h.root("prim_created_at");
    let a = h.open().await;
    let b = h.open().await;
    let expect_time = match a.backend() {
        "etcd" => Some(false),
        "zk" | "redis" | "mem" => Some(true),
        // Another backend may or may not record one; if it does, it must
        // be sane.
        _ => None,
    };
    for (i, mode) in [
        CreateMode::Persistent,
        CreateMode::Ephemeral,
        CreateMode::PersistentSequential,
        CreateMode::EphemeralSequential,
    ]
    .into_iter()
    .enumerate()
    {
        let before = SystemTime::now();
        let c = a
            .create(&format!("{root}/dir-{i}/n-"), b"", mode)
            .await
            .expect("create");
        let after = SystemTime::now();
        let node = a.get(&c.path).await.expect("get").expect("the node");
        let created = node.stat.created_at;
        match (expect_time, created) {
            (Some(false), Some(t)) => panic!("{}: created_at {t:?} on etcd", c.path),
            (Some(true), None) => panic!("{}: no created_at on {}", c.path, a.backend()),
            (_, Some(t)) => assert!(
                t + SKEW >= before && t <= after + SKEW,
                "{}: created_at {t:?} is not near the create ({before:?} .. {after:?})",
                c.path
            ),
            (_, None) => {}
        }
        let (watched, _watch) = b
            .get_watch(&c.path)
            .await
            .expect("get_watch")
            .expect("the node");
        assert_eq!(watched.stat.created_at, created, "get_watch agrees");
        let st = b.set(&c.path, b"changed", None).await.expect("set");
        assert_eq!(st.created_at, created, "a set's answer carries it");
        let node = a.get(&c.path).await.expect("get").expect("the node");
        assert_eq!(node.stat.created_at, created, "a set does not change it");
    }
    // The parents a create made have one too.
    let parent = a.get(&format!("{root}/dir-0")).await.expect("get");
    let parent = parent.expect("the parent was made");
    if let Some(want) = expect_time {
        assert_eq!(
            parent.stat.created_at.is_some(),
            want,
            "a parent's created_at: {:?}",
            parent.stat.created_at
        );
    }
    a.close().await.expect("close");
    b.close().await.expect("close");
}

/// `Stat::owner`: an ephemeral node names the session that made it, as
/// that session's `id()` shows it, to anyone reading it (`get`,
/// `get_watch`, a `set`'s answer) and after another session's `set`; a
/// persistent node names none.
pub async fn prim_owner_names_the_session(h: &dyn Harness) {
    let root = h.root("prim_owner_names_the_session");
    let a = h.open().await;
    let b = h.open().await;
    assert_ne!(a.id(), b.id(), "two sessions, two ids");
    for (i, mode) in [
        CreateMode::Persistent,
        CreateMode::Ephemeral,
        CreateMode::PersistentSequential,
        CreateMode::EphemeralSequential,
    ]
    .into_iter()
    .enumerate()
    {
        let want = mode.is_ephemeral().then(|| a.id());
        let c = a
            .create(&format!("{root}/dir-{i}/n-"), b"", mode)
            .await
            .expect("create");
        let node = b.get(&c.path).await.expect("get").expect("the node");
        assert_eq!(node.stat.owner, want, "{}: get by another session", c.path);
        let (watched, _watch) = b
            .get_watch(&c.path)
            .await
            .expect("get_watch")
            .expect("the node");
        assert_eq!(watched.stat.owner, want, "{}: get_watch", c.path);
        let st = b.set(&c.path, b"changed", None).await.expect("set");
        assert_eq!(
            st.owner, want,
            "{}: a set by another session's answer",
            c.path
        );
        let node = a.get(&c.path).await.expect("get").expect("the node");
        assert_eq!(node.stat.owner, want, "{}: after another's set", c.path);
    }
    a.close().await.expect("close");
    b.close().await.expect("close");
}

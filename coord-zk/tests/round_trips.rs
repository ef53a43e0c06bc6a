//! What coord costs on ZooKeeper, counted in requests (`COORD_TEST_ZK`).

mod common;

use std::sync::Arc;

use coord_core::recipes::Lock;
use coord_core::{CreateMode, Session};

async fn open() -> (Arc<coord_zk::ZkSession>, Session, String) {
    let zk = Arc::new(common::connect(&common::options_from_env()).await);
    let session = Session::new(zk.clone());
    let id = uuid::Uuid::new_v4().simple().to_string();
    (zk, session, format!("/coord-round-trips/{}", &id[..12]))
}

/// A getChildren polled right behind a create, before the create is
/// awaited, is ordered after it on the connection and sees its node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_pipelined_behind_create_see_it() {
    let (zk, session, dir) = open().await;
    session.ensure_dir(&dir).await.expect("dir");
    for _ in 0..20 {
        let before = zk.requests_sent();
        let prefix = format!("{dir}/{}", coord_core::layout::protected("lock-"));
        let (created, children) = tokio::join!(
            session.create(&prefix, b"", CreateMode::EphemeralSequential),
            session.children(&dir),
        );
        let created = created.expect("create");
        let children = children.expect("children");
        assert_eq!(zk.requests_sent() - before, 2);
        let name = coord_core::path::name(&created.path);
        assert!(
            children.iter().any(|c| c.name == name),
            "{name} not in {children:?}"
        );
        session.delete(&created.path, None).await.expect("delete");
    }
    session.close().await.expect("close");
}

/// An uncontended lock acquire + release costs create + getChildren (sent
/// together) + delete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uncontended_lock_costs_three_requests() {
    let (zk, session, dir) = open().await;
    session.ensure_dir(&dir).await.expect("dir");
    let lock = Lock::new(&session, &dir).expect("lock");
    for _ in 0..5 {
        let before = zk.requests_sent();
        let guard = lock.acquire().await.expect("acquire");
        let acquired = zk.requests_sent();
        guard.release().await.expect("release");
        let released = zk.requests_sent();
        assert_eq!(
            (acquired - before, released - acquired),
            (2, 1),
            "acquire should cost create + getChildren, release one delete"
        );
    }
    session.close().await.expect("close");
}

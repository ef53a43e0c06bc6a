//! TTL nodes on a ZooKeeper that has them disabled: a server of this
//! test's own (a `coord_conformance::server::TestServer`), started without
//! `-Dzookeeper.extendedTypesEnabled=true`, so `COORD_TEST_ZK` is not used.
//! The server refuses the create; coord says so with a typed error that
//! names the flag, makes no node, and the session carries on.
//! (TTL nodes on a server with the flag: the conformance suite's `ttl_*`.)

use std::time::Duration;

use coord_conformance::server::{TestServer, ZooKeeper};
use coord_core::{CreateMode, Error};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttl_create_on_a_server_without_ttl_nodes_is_not_supported() {
    let server = TestServer::start(ZooKeeper::new()).await;
    let options =
        coord_zk::ZkOptions::new(&server.address()).with_session_timeout(Duration::from_secs(4));
    let s = coord_zk::connect(options.clone())
        .await
        .unwrap_or_else(|e| panic!("cannot open a session on {}: {e}", server.address()));
    let root = format!("/ttl-{}", uuid::Uuid::new_v4().simple());
    s.ensure_dir(&root).await.expect("ensure_dir");
    for (name, mode) in [
        ("n", CreateMode::PersistentWithTtl(Duration::from_secs(5))),
        (
            "q-",
            CreateMode::PersistentSequentialWithTtl(Duration::from_secs(5)),
        ),
    ] {
        let path = format!("{root}/{name}");
        match s.create(&path, b"x", mode).await {
            Err(Error::NotSupported { operation, backend }) => {
                assert_eq!(backend, "zk");
                assert!(
                    operation.contains("zookeeper.extendedTypesEnabled=true"),
                    "the error names the server flag: {operation}"
                );
            }
            other => panic!("{mode:?} on a server without TTL nodes: {other:?}"),
        }
    }
    assert!(
        s.children(&root).await.expect("children").is_empty(),
        "no node was made"
    );
    // The refusal ends nothing: the session still works.
    s.create(&format!("{root}/plain"), b"", CreateMode::Persistent)
        .await
        .expect("a plain create after the refusal");
    let _ = s.close().await;
}

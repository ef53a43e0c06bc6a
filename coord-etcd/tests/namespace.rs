//! Namespaces keep applications apart on one cluster, and put each node at
//! the key `EtcdOptions::key_of` names. Needs `COORD_TEST_ETCD`.

use coord_core::CreateMode;
use coord_etcd::EtcdOptions;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_are_disjoint_and_keys_are_where_key_of_says() {
    let endpoints = std::env::var("COORD_TEST_ETCD")
        .expect("COORD_TEST_ETCD is not set: this test needs a running etcd (scripts/test-all)");
    let id = uuid::Uuid::new_v4().simple().to_string();
    let a = EtcdOptions::from_endpoint_list(&endpoints).with_namespace(format!("/coord-ns-a-{id}"));
    let b = EtcdOptions::from_endpoint_list(&endpoints).with_namespace(format!("/coord-ns-b-{id}"));
    let sa = coord_etcd::connect(a.clone()).await.expect("session a");
    let sb = coord_etcd::connect(b.clone()).await.expect("session b");

    sa.create("/app/x", b"from a", CreateMode::Persistent)
        .await
        .expect("create in a");
    assert!(
        sb.get("/app/x").await.expect("get").is_none(),
        "b sees a's node"
    );
    assert!(matches!(
        sb.children("/app").await,
        Err(coord_core::Error::NotFound { .. })
    ));
    sb.create("/app/x", b"from b", CreateMode::Persistent)
        .await
        .expect("the same path is free in b");
    // The root of a namespace lists only that namespace's top level.
    let top: Vec<_> = sa
        .children("/")
        .await
        .expect("children of /")
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(top, ["app"]);

    // The raw key, as any etcd client sees it.
    let mut raw = etcd_client::Client::connect(a.endpoints(), None)
        .await
        .expect("raw client");
    let got = raw.get(a.key_of("/app/x"), None).await.expect("raw get");
    assert_eq!(got.kvs().len(), 1);
    assert_eq!(got.kvs()[0].value(), b"from a");

    for (s, o) in [(&sa, &a), (&sb, &b)] {
        s.delete("/app/x", None).await.expect("delete");
        s.delete("/app", None).await.expect("delete");
        assert_eq!(
            raw.get(o.key_of("/app"), None)
                .await
                .expect("raw get")
                .kvs()
                .len(),
            0
        );
        s.close().await.expect("close");
    }
}

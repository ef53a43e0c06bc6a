//! How an etcd session ends: close revokes the lease; a lease revoked under
//! the session (before the keep-alive noticed) makes a later close `Ok` and
//! the state `Expired`. And how a TTL node's own lease ends with the node.
//! Needs `COORD_TEST_ETCD`.

use std::time::Duration;

use coord_core::{CreateMode, Error, Fence, Op, SessionState};
use coord_etcd::EtcdOptions;

fn options() -> EtcdOptions {
    let endpoints = std::env::var("COORD_TEST_ETCD")
        .expect("COORD_TEST_ETCD is not set: this test needs a running etcd (scripts/test-all)");
    EtcdOptions::from_endpoint_list(&endpoints)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_revokes_the_lease() {
    let o = options();
    let s = coord_etcd::connect(o.clone()).await.expect("session");
    let lease = coord_etcd::lease_id(&s.id()).expect("lease id");
    let path = format!("/coord-session-end/{}", uuid::Uuid::new_v4().simple());
    s.create(&path, b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    s.close().await.expect("close");
    assert_eq!(s.state(), SessionState::Closed);
    assert!(matches!(s.get(&path).await, Err(Error::SessionClosed)));
    let mut raw = etcd_client::Client::connect(o.endpoints(), None)
        .await
        .expect("raw client");
    let ttl = raw
        .lease_time_to_live(lease, None)
        .await
        .expect("time to live");
    assert_eq!(ttl.ttl(), -1, "the lease outlived close");
    assert!(raw
        .get(o.key_of(&path), None)
        .await
        .expect("get")
        .kvs()
        .is_empty());
    s.close().await.expect("closing twice is Ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_after_a_revoke_the_session_has_not_noticed() {
    let o = options();
    let s = coord_etcd::connect(o.clone()).await.expect("session");
    let lease = coord_etcd::lease_id(&s.id()).expect("lease id");
    let mut raw = etcd_client::Client::connect(o.endpoints(), None)
        .await
        .expect("raw client");
    raw.lease_revoke(lease).await.expect("revoke");
    // At once: the keep-alive (every TTL/3) has not run yet.
    assert_eq!(s.state(), SessionState::Connected);
    s.close().await.expect("close of an expired session is Ok");
    assert_eq!(s.state(), SessionState::Expired);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ephemeral_create_on_a_revoked_lease_expires_the_session() {
    let o = options();
    let s = coord_etcd::connect(o.clone()).await.expect("session");
    let lease = coord_etcd::lease_id(&s.id()).expect("lease id");
    let mut raw = etcd_client::Client::connect(o.endpoints(), None)
        .await
        .expect("raw client");
    raw.lease_revoke(lease).await.expect("revoke");
    let path = format!("/coord-session-end/{}", uuid::Uuid::new_v4().simple());
    assert!(matches!(
        s.create(&path, b"", CreateMode::Ephemeral).await,
        Err(Error::SessionExpired)
    ));
    assert_eq!(s.state(), SessionState::Expired);
}

/// A TTL node deleted before its TTL takes its lease (and the lease's
/// marker) with it, however it is deleted: `delete`, a guarded delete,
/// `take_leaf`, and by another session than the one that made it. Without
/// that, a TTL node made and deleted again left a lease on the server for
/// the whole TTL (up to 34 years). Deleting another session's ephemeral
/// node leaves that session's lease alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_ttl_node_takes_its_lease() {
    let o = options();
    let s = coord_etcd::connect(o.clone()).await.expect("session");
    let other = coord_etcd::connect(o.clone())
        .await
        .expect("another session");
    let mut raw = etcd_client::Client::connect(o.endpoints(), None)
        .await
        .expect("raw client");
    let dir = format!("/coord-ttl-lease/{}", uuid::Uuid::new_v4().simple());
    let fence = s
        .create(&format!("{dir}/fence"), b"", CreateMode::Ephemeral)
        .await
        .expect("the fence node");
    let fence = Fence {
        path: fence.path,
        stamp: fence.stamp,
    };
    let hour = CreateMode::PersistentWithTtl(Duration::from_secs(3600));
    for how in [
        "delete",
        "guarded delete",
        "take_leaf",
        "delete by another session",
    ] {
        let path = format!("{dir}/{}", how.replace(' ', "-"));
        s.create(&path, b"x", hour).await.expect("a TTL node");
        let kv = raw.get(o.key_of(&path), None).await.expect("get");
        let lease = kv.kvs().first().expect("the node's key").lease();
        assert_ne!(lease, 0, "{how}: a TTL node's key has a lease");
        match how {
            "delete" => s.delete(&path, None).await.expect("delete"),
            "guarded delete" => {
                let op = Op::Delete {
                    path: path.clone(),
                    version: None,
                };
                s.guarded(&fence, op).await.expect("guarded delete");
            }
            "take_leaf" => {
                let data = s.take_leaf(&path).await.expect("take");
                assert_eq!(data.as_deref(), Some(&b"x"[..]), "take_leaf's data");
            }
            _ => other.delete(&path, None).await.expect("delete"),
        }
        let ttl = raw
            .lease_time_to_live(lease, None)
            .await
            .expect("time to live");
        assert_eq!(ttl.ttl(), -1, "{how}: the TTL node's lease outlived it");
    }
    // Another session's ephemeral node, deleted: that session lives on.
    let theirs = format!("{dir}/theirs");
    other
        .create(&theirs, b"", CreateMode::Ephemeral)
        .await
        .expect("an ephemeral node");
    s.delete(&theirs, None).await.expect("delete theirs");
    let lease = coord_etcd::lease_id(&other.id()).expect("lease id");
    let ttl = raw
        .lease_time_to_live(lease, None)
        .await
        .expect("time to live");
    assert!(
        ttl.ttl() > 0,
        "deleting its node revoked another session's lease"
    );
    other
        .create(&theirs, b"", CreateMode::Ephemeral)
        .await
        .expect("the other session still creates");
    s.close().await.expect("close");
    other.close().await.expect("close");
}

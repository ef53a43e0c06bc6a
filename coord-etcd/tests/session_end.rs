//! How an etcd session ends: close revokes the lease; a lease revoked under
//! the session (before the keep-alive noticed) makes a later close `Ok` and
//! the state `Expired`. Needs `COORD_TEST_ETCD`.

use coord_core::{CreateMode, Error, SessionState};
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

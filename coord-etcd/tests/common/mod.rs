//! What the coord-etcd integration tests share: the conformance harness
//! ([`harness`]) and the secured test etcd's settings ([`secure`]). A
//! standalone etcd of a test's own (tests/restart.rs) is a
//! `coord_conformance::server::TestServer`.

#![allow(dead_code)]

pub mod harness;
pub mod secure;

/// The plain test etcd's endpoints (`COORD_TEST_ETCD`), or a panic that
/// says how to get one: a test that needs etcd fails without it, never
/// skips.
pub fn endpoints() -> String {
    match std::env::var("COORD_TEST_ETCD") {
        Ok(e) if !e.trim().is_empty() => e,
        _ => panic!(
            "COORD_TEST_ETCD is not set: these tests need a running etcd \
             (run scripts/test-all, or set COORD_TEST_ETCD=http://127.0.0.1:<port>)"
        ),
    }
}

/// A session on the plain test etcd.
pub async fn session() -> coord_core::Session {
    coord_etcd::connect(coord_etcd::EtcdOptions::from_endpoint_list(&endpoints()))
        .await
        .expect("session")
}

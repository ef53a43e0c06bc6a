//! Credential errors are typed. The shared test etcd runs without
//! authentication, so the one refusal it can give live is to credentials
//! it does not take; the others (wrong password, no credentials, a role
//! without the key, token expiry) are tested live on the secured etcd in
//! tests/auth_secure.rs, and their mapping unit-tested in `src/error.rs`.
//! Needs `COORD_TEST_ETCD`.

use coord_core::Error;
use coord_etcd::EtcdOptions;

/// Credentials given to a server with auth off fail with
/// `Unauthenticated`, saying what to fix, and never show the password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_for_a_server_without_auth_are_unauthenticated() {
    let endpoints = std::env::var("COORD_TEST_ETCD")
        .expect("COORD_TEST_ETCD is not set: this test needs a running etcd (scripts/test-all)");
    let secret = "pw-etcd-auth-test-s3cret";
    let options = EtcdOptions::from_endpoint_list(&endpoints).with_user("coord-auth-test", secret);
    let err = coord_etcd::connect(options)
        .await
        .map(|s| s.id())
        .expect_err("a session with credentials on a server without auth");
    match &err {
        Error::Unauthenticated { backend, hint } => {
            assert_eq!(*backend, "etcd");
            assert!(hint.contains("authentication off"), "{hint}");
        }
        other => panic!("expected Unauthenticated, got {other:?}"),
    }
    assert!(!err.is_retryable());
    for shown in [err.to_string(), format!("{err:?}")] {
        assert!(!shown.contains(secret), "the password is shown: {shown}");
    }
}

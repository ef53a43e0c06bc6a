//! Credentials and ACLs on the secured server at `COORD_TEST_REDIS_SECURE`
//! (scripts/servers/redis-secure.sh: mutual TLS, the default user off, the
//! users `coord` and `coordnoeval` from its config file), over TLS:
//! - no credentials (NOAUTH) is `Unauthenticated`, saying a password is
//!   required;
//! - the checks of tests/common/acl.rs (shared with tests/acl.rs): the
//!   restricted user `coord` (no @admin, no @dangerous, so no CONFIG)
//!   connects, with keyspace notifications observed rather than read, and
//!   works; a wrong password is `Unauthenticated` and shows no password; a
//!   user without EVAL/EVALSHA is `PermissionDenied`.

mod common;

use common::acl::{assert_unauthenticated, try_accounts, Accounts};
use common::{env, mutual_tls, secure_url, unique_namespace, with_user};
use coord_redis::RedisOptions;

fn secured(url: String, namespace: &str) -> RedisOptions {
    RedisOptions::new(url)
        .with_tls(mutual_tls())
        .with_namespace(namespace.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_credentials_the_server_says_a_password_is_required() {
    let session = coord_redis::connect(secured(secure_url(), &unique_namespace())).await;
    assert_unauthenticated(&session, "requires a password", &[]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_and_acls_give_typed_errors_over_tls() {
    let url = secure_url();
    let namespace = unique_namespace();
    let user = env("COORD_TEST_REDIS_SECURE_USER", "the secured server's user");
    let password = env("COORD_TEST_REDIS_SECURE_PASSWORD", "its password");
    let noeval = env("COORD_TEST_REDIS_SECURE_NOEVAL_USER", "a user without EVAL");
    let noeval_pw = env("COORD_TEST_REDIS_SECURE_NOEVAL_PASSWORD", "its password");
    let wrong = format!("wrong-{}", uuid::Uuid::new_v4().simple());
    try_accounts(Accounts {
        restricted: secured(with_user(&url, &user, &password), &namespace),
        wrong_password: secured(with_user(&url, &user, &wrong), &namespace),
        noeval: secured(with_user(&url, &noeval, &noeval_pw), &namespace),
        secrets: vec![password, wrong, noeval_pw],
    })
    .await
    .check();
}

//! Credentials and ACLs on the server at `COORD_TEST_REDIS`, through
//! throwaway ACL users this test makes (and deletes): a wrong password is
//! `Unauthenticated`, a user without a command coord needs is
//! `PermissionDenied`, and a user without `CONFIG` (the norm on managed
//! Redis) connects and works when keyspace notifications are on (the test
//! server starts with `notify-keyspace-events Kx`). A missing password
//! (`NOAUTH`) cannot be shown on this shared server without a password on
//! its default user; `src/error.rs` tests its mapping on the server's
//! reply.

#[allow(dead_code)] // the harness; this file uses a few of its helpers
mod common;

use coord_core::{CreateMode, Error};
use coord_redis::{KeyspaceEvents, RedisOptions};

/// `redis://user:password@…` for the test server's host and port.
fn with_user(url: &str, user: &str, password: &str) -> String {
    let (host, _) = common::via(url, "");
    format!("redis://{user}:{password}@{host}")
}

async fn admin() -> redis::aio::MultiplexedConnection {
    redis::Client::open(common::redis_url().as_str())
        .expect("the test server's URL")
        .get_multiplexed_async_connection()
        .await
        .expect("the Redis server at COORD_TEST_REDIS")
}

async fn acl(conn: &mut redis::aio::MultiplexedConnection, args: &[&str]) {
    let mut cmd = redis::cmd("ACL");
    for a in args {
        cmd.arg(*a);
    }
    let () = cmd
        .query_async(conn)
        .await
        .unwrap_or_else(|e| panic!("ACL {args:?}: {e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_and_acls_give_typed_errors() {
    let url = common::redis_url();
    let mut admin = admin().await;
    let id = uuid::Uuid::new_v4().simple().to_string();
    let namespace = format!("coord-test-{}", &id[..12]);
    let plain = format!("coord-acl-plain-{}", &id[..10]);
    let noeval = format!("coord-acl-noeval-{}", &id[..10]);
    let password = format!("pw-{}", &id[12..]);
    let wrong = format!("wrong-{}", &id[20..]);
    let pass_arg = format!(">{password}");
    // Everything but admin commands (CONFIG among them), as a managed
    // Redis gives an application.
    acl(
        &mut admin,
        &[
            "SETUSER", &plain, "on", &pass_arg, "~*", "&*", "+@all", "-@admin", "-config",
        ],
    )
    .await;
    acl(
        &mut admin,
        &[
            "SETUSER", &noeval, "on", &pass_arg, "~*", "&*", "+@all", "-@admin", "-config",
            "-evalsha", "-eval",
        ],
    )
    .await;
    let options = |user: &str, pw: &str| {
        RedisOptions::new(with_user(&url, user, pw)).namespace(namespace.clone())
    };

    // The user really has no CONFIG: the connect below cannot have used it.
    let config_get = async {
        let mut c = redis::Client::open(with_user(&url, &plain, &password).as_str())
            .expect("url")
            .get_multiplexed_async_connection()
            .await
            .expect("connect as the plain user");
        redis::cmd("CONFIG")
            .arg("GET")
            .arg("notify-keyspace-events")
            .query_async::<Vec<String>>(&mut c)
            .await
    }
    .await;
    let without_config = coord_redis::connect(options(&plain, &password)).await;
    let required =
        coord_redis::connect(options(&plain, &password).keyspace_events(KeyspaceEvents::Require))
            .await;
    let wrong_password = coord_redis::connect(options(&plain, &wrong)).await;
    let no_eval = coord_redis::connect(options(&noeval, &password)).await;
    let mut worked = None;
    if let Ok(s) = &without_config {
        let path = format!("/acl/{}", &id[..8]);
        let made = match s.ensure_dir("/acl").await {
            Ok(()) => s.create(&path, b"x", CreateMode::Ephemeral).await.map(drop),
            Err(e) => Err(e),
        };
        let read = s.get(&path).await;
        worked = Some((made, read.map(|n| n.map(|n| n.data))));
    }
    for s in [&without_config, &required].into_iter().flatten() {
        s.close().await.expect("close");
    }

    acl(&mut admin, &["DELUSER", &plain, &noeval]).await;

    let refused = config_get.expect_err("CONFIG GET as a user without +config");
    assert_eq!(refused.code(), Some("NOPERM"), "{refused}");
    if let Err(e) = &without_config {
        panic!("a user without CONFIG connects: {e}");
    }
    let (made, read) = worked.expect("the session was used");
    made.expect("create as a user without CONFIG");
    assert_eq!(read.expect("get"), Some(b"x".to_vec()));
    if let Err(e) = &required {
        panic!("Require without CONFIG: {e}");
    }

    match &wrong_password {
        Err(Error::Unauthenticated { backend, hint }) => {
            assert_eq!(*backend, "redis");
            assert!(hint.contains("user:password"), "{hint}");
        }
        Err(other) => panic!("a wrong password: expected Unauthenticated, got {other:?}"),
        Ok(_) => panic!("a wrong password was accepted"),
    }
    if let Err(e) = &wrong_password {
        for shown in [e.to_string(), format!("{e:?}")] {
            assert!(
                !shown.contains(&wrong) && !shown.contains(&password),
                "{shown}"
            );
        }
        assert!(!e.is_retryable());
    }

    match &no_eval {
        Err(Error::PermissionDenied { reason, .. }) => {
            assert!(
                reason.contains("evalsha") || reason.contains("eval"),
                "{reason}"
            );
        }
        Err(other) => panic!("a user without EVALSHA: expected PermissionDenied, got {other:?}"),
        Ok(_) => panic!("a user without EVALSHA opened a session"),
    }
}

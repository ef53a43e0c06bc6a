//! Credentials and ACLs on the server at `COORD_TEST_REDIS`, through
//! throwaway ACL users this test makes (and deletes): a wrong password is
//! `Unauthenticated`, a user without a command coord needs is
//! `PermissionDenied`, and a user without `CONFIG` (the norm on managed
//! Redis) connects and works when keyspace notifications are on (the test
//! server starts with `notify-keyspace-events Kx`). A missing password
//! (`NOAUTH`) cannot be shown on this shared server without a password on
//! its default user; `src/error.rs` tests its mapping on the server's
//! reply; tests/acl_secure.rs does, on the secured server. The checks
//! themselves are in tests/common/acl.rs, shared by both.

mod common;

use coord_redis::RedisOptions;

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
    let namespace = common::unique_namespace();
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
        RedisOptions::new(common::with_user(&url, user, pw)).with_namespace(namespace.clone())
    };
    let outcomes = common::acl::try_accounts(common::acl::Accounts {
        restricted: options(&plain, &password),
        wrong_password: options(&plain, &wrong),
        noeval: options(&noeval, &password),
        secrets: vec![password.clone(), wrong.clone()],
    })
    .await;
    acl(&mut admin, &["DELUSER", &plain, &noeval]).await;
    outcomes.check();
}

/// The narrowest grant coord works with, for namespace `ns` on database 0
/// (what the crate docs tell an operator): its keys, its channels and the
/// keyspace channel of its keys, and the commands it sends (those its Lua
/// scripts call included).
fn minimal_rule(ns: &str) -> Vec<String> {
    let mut rule: Vec<String> = [
        "resetkeys".to_owned(),
        format!("~{{{ns}}}:*"),
        "resetchannels".to_owned(),
        format!("&{{{ns}}}:*"),
        format!("&__keyspace@0__:{{{ns}}}:*"),
        // PSUBSCRIBE's pattern must appear literally.
        format!("&__keyspace@0__:{{{ns}}}:s:*"),
        "-@all".to_owned(),
    ]
    .into();
    for command in [
        "evalsha",
        "script|load",
        "set",
        "exists",
        "pexpire",
        "subscribe",
        "psubscribe",
        "unsubscribe",
        "punsubscribe",
        "ping",
        "del",
        "get",
        "hget",
        "hmget",
        "hset",
        "incr",
        "publish",
        "sadd",
        "smembers",
        "srem",
        "time",
        "zadd",
        "zcard",
        "zrange",
        "zrem",
    ] {
        rule.push(format!("+{command}"));
    }
    rule
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_minimal_grant_suffices() {
    use coord_core::CreateMode;
    use coord_redis::KeyspaceEvents;

    let url = common::redis_url();
    let mut admin = admin().await;
    let id = uuid::Uuid::new_v4().simple().to_string();
    let namespace = common::unique_namespace();
    let user = format!("coord-acl-min-{}", &id[..10]);
    let password = format!("pw-{}", &id[12..]);
    let mut setuser = vec![
        "SETUSER".to_owned(),
        user.clone(),
        "on".into(),
        format!(">{password}"),
    ];
    setuser.extend(minimal_rule(&namespace));
    acl(
        &mut admin,
        &setuser.iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .await;
    let options = RedisOptions::new(common::with_user(&url, &user, &password))
        .with_namespace(namespace.clone())
        .with_session_timeout(std::time::Duration::from_secs(1))
        .with_keyspace_events(KeyspaceEvents::Require);
    let outcome = async {
        // Connecting subscribes the keyspace pattern and observes a notice.
        let (a, hooks) = coord_redis::testing::connect_with_hooks(options.clone()).await?;
        let b = coord_redis::connect(options).await?;
        a.ensure_dir("/m").await?;
        a.create("/m/e", b"1", CreateMode::Ephemeral).await?;
        a.set("/m/e", b"2", None).await?;
        let seen = b.get("/m/e").await?.map(|n| n.data);
        let listed = b.children("/m").await?.len();
        // A crashed holder's node is reaped once its key expires.
        hooks.crash();
        tokio::time::timeout(std::time::Duration::from_secs(10), b.wait_gone("/m/e"))
            .await
            .map_err(|_| coord_core::Error::ConnectionLost("not reaped in 10 s".into()))??;
        b.delete("/m", None).await?;
        b.close().await?;
        drop(a);
        Ok::<_, coord_core::Error>((seen, listed))
    }
    .await;
    acl(&mut admin, &["DELUSER", &user]).await;
    let (seen, listed) = outcome.expect("a session as the minimally granted user");
    assert_eq!(seen, Some(b"2".to_vec()));
    assert_eq!(listed, 1);
}

//! Redis-specific behaviour, against the server at `COORD_TEST_REDIS`:
//! crashed clients, lost answers, watches that clean up after themselves.

mod common;

use std::time::Duration;

use common::{redis_url, RedisHarness};
use coord_core::{CreateMode, Error, SessionState};
use coord_redis::{testing, KeyspaceEvents, Options};

async fn raw(options: &Options) -> redis::aio::MultiplexedConnection {
    redis::Client::open(options.url())
        .expect("redis url")
        .get_multiplexed_async_connection()
        .await
        .expect("connect to COORD_TEST_REDIS")
}

async fn eventually<F, Fut>(what: &str, within: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + within;
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A client that dies without closing (no heartbeat, no close) has its
/// ephemeral nodes reaped once its TTL runs out, and the watchers of the
/// lock directory hear of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashed_client_ephemerals_reaped_after_ttl() {
    let h = RedisHarness::from_env();
    let ttl = Duration::from_millis(900);
    let (crashing, hooks) = testing::connect_with_hooks(h.options().session_ttl(ttl))
        .await
        .expect("connect");
    let other = coord_redis::connect(h.options()).await.expect("connect");
    let node = crashing
        .create(
            "/locks/job/_c_x-lock-",
            b"",
            CreateMode::EphemeralSequential,
        )
        .await
        .expect("create");
    let (kids, watch) = other.children_watch("/locks/job").await.expect("watch");
    assert_eq!(kids.len(), 1);
    hooks.crash();
    drop(crashing);
    let started = tokio::time::Instant::now();
    tokio::time::timeout(ttl * 10, watch)
        .await
        .expect("the watch fires once the crashed session's key expires")
        .expect("watch");
    assert!(
        started.elapsed() >= ttl / 3,
        "reaped before the TTL ran out"
    );
    assert!(other.get(&node.path).await.expect("get").is_none());
    assert!(other
        .children("/locks/job")
        .await
        .expect("children")
        .is_empty());
    other.close().await.expect("close");
}

/// Without any notice (the session key deleted behind everyone's back and
/// the owner crashed), the next read reaps the dead session's nodes before
/// it answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_reap_dead_sessions_lazily() {
    let h = RedisHarness::from_env();
    let (crashing, hooks) = testing::connect_with_hooks(h.options())
        .await
        .expect("connect");
    let other = coord_redis::connect(h.options()).await.expect("connect");
    let a = crashing
        .create("/q/a", b"1", CreateMode::Ephemeral)
        .await
        .expect("create");
    let b = crashing
        .create("/r/b-", b"2", CreateMode::EphemeralSequential)
        .await
        .expect("create");
    hooks.crash();
    let sid = crashing.id().0.clone();
    drop(crashing);
    let mut conn = raw(&h.options).await;
    let key = format!("{}s:{sid}", h.options.key_prefix());
    // DEL raises no notice coord-redis listens for: only a read can tell.
    let n: i64 = redis::cmd("DEL")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .expect("DEL");
    assert_eq!(n, 1);
    assert!(other.get(&a.path).await.expect("get").is_none());
    // Reaping the session took its other node too.
    let left: i64 = redis::cmd("EXISTS")
        .arg(format!("{}n:{}", h.options.key_prefix(), b.path))
        .query_async(&mut conn)
        .await
        .expect("EXISTS");
    assert_eq!(left, 0);
    assert!(other.children("/r").await.expect("children").is_empty());
    other.close().await.expect("close");
}

/// A protected sequential create whose answer is lost is found again by
/// its prefix, not made twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_create_answer_not_duplicated() {
    let h = RedisHarness::from_env();
    let (s, hooks) = testing::connect_with_hooks(h.options())
        .await
        .expect("connect");
    let name = format!("/jobs/_c_{}-lock-", uuid::Uuid::new_v4());
    hooks.lose_next_create_answer();
    let created = s
        .create(&name, b"x", CreateMode::EphemeralSequential)
        .await
        .expect("create recovers the node its lost answer made");
    let kids = s.children("/jobs").await.expect("children");
    assert_eq!(kids.len(), 1, "{kids:?}");
    assert_eq!(format!("/jobs/{}", kids[0].name), created.path);
    assert_eq!(kids[0].sequence, created.sequence);

    // An unprotected name is not retried: the caller hears of the loss.
    hooks.lose_next_create_answer();
    let lost = s
        .create("/jobs/plain-", b"", CreateMode::PersistentSequential)
        .await;
    assert!(matches!(lost, Err(Error::ConnectionLost(_))), "{lost:?}");
    s.close().await.expect("close");
}

/// Dropped watches unsubscribe; fired ones too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_waiters_unsubscribe() {
    let h = RedisHarness::from_env();
    let (s, hooks) = testing::connect_with_hooks(h.options())
        .await
        .expect("connect");
    s.ensure_dir("/w").await.expect("dir");
    let mut watches = Vec::new();
    for _ in 0..3 {
        watches.push(s.children_watch("/w").await.expect("watch").1);
    }
    let (_, fired) = s.children_watch("/w").await.expect("watch");
    assert_eq!(hooks.subscribed_channels().await, 1);
    drop(watches);
    s.create("/w/x", b"", CreateMode::Persistent)
        .await
        .expect("create");
    fired.await.expect("fires");
    eventually(
        "no channel left subscribed",
        Duration::from_secs(5),
        || async { hooks.subscribed_channels().await == 0 },
    )
    .await;
    // A watch on a missing directory leaves nothing set.
    assert!(matches!(
        s.children_watch("/nope").await,
        Err(Error::NotFound { .. })
    ));
    eventually(
        "no channel left subscribed",
        Duration::from_secs(5),
        || async { hooks.subscribed_channels().await == 0 },
    )
    .await;
    s.close().await.expect("close");
}

/// Heartbeats keep a session (and its nodes) alive well past its TTL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeat_keeps_session_alive() {
    let h = RedisHarness::from_env();
    let s = coord_redis::connect(h.options().session_ttl(Duration::from_millis(600)))
        .await
        .expect("connect");
    let node = s
        .create("/hb", b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(s.state(), SessionState::Connected);
    assert!(s.get(&node.path).await.expect("get").is_some());
    s.close().await.expect("close");
    assert_eq!(s.state(), SessionState::Closed);
    assert!(matches!(s.get("/hb").await, Err(Error::SessionClosed)));
}

/// A session whose key is gone learns it is Expired, and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_is_noticed() {
    let h = RedisHarness::from_env();
    let s = coord_redis::connect(h.options()).await.expect("connect");
    testing::expire(&h.options, &s.id()).await.expect("expire");
    let mut state = s.state_watch();
    tokio::time::timeout(
        Duration::from_secs(5),
        state.wait_for(|s| *s == SessionState::Expired),
    )
    .await
    .expect("noticed at once, not at the next heartbeat")
    .expect("state");
    assert!(matches!(s.get("/").await, Err(Error::SessionExpired)));
    s.close().await.expect("closing an expired session is Ok");
}

/// User and password in the URL (an ACL user); bad settings are typed errors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_credentials_and_bad_options() {
    let h = RedisHarness::from_env();
    let mut conn = raw(&h.options).await;
    let user = format!("coord-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg(&user)
        .arg("on")
        .arg(">s3cret")
        .arg("~*")
        .arg("&*")
        .arg("+@all")
        .query_async(&mut conn)
        .await
        .expect("ACL SETUSER");
    let url = redis_url().replacen("redis://", &format!("redis://{user}:s3cret@"), 1);
    let s = coord_redis::connect(
        Options::new(&url).namespace(h.options.key_prefix().trim_matches(|c| "{}:".contains(c))),
    )
    .await
    .expect("connect with user and password");
    s.create("/acl", b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    s.close().await.expect("close");

    let wrong = redis_url().replacen("redis://", &format!("redis://{user}:wrong@"), 1);
    let err = coord_redis::connect(wrong.as_str())
        .await
        .expect_err("bad password");
    assert!(matches!(err, Error::Backend { .. }), "{err:?}");
    let () = redis::cmd("ACL")
        .arg("DELUSER")
        .arg(&user)
        .query_async(&mut conn)
        .await
        .expect("ACL DELUSER");

    let bad_ns = coord_redis::connect(Options::new(redis_url()).namespace("a b")).await;
    assert!(
        matches!(bad_ns, Err(Error::InvalidArgument(_))),
        "{bad_ns:?}"
    );
    let bad_ttl =
        coord_redis::connect(Options::new(redis_url()).session_ttl(Duration::from_millis(10)))
            .await;
    assert!(
        matches!(bad_ttl, Err(Error::InvalidArgument(_))),
        "{bad_ttl:?}"
    );
    let bad_url = coord_redis::connect("http://nowhere").await;
    assert!(
        matches!(bad_url, Err(Error::InvalidArgument(_))),
        "{bad_url:?}"
    );
}

/// The test server has expired-key notices on, so `Require` accepts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyspace_events_required_and_present() {
    let h = RedisHarness::from_env();
    let s = coord_redis::connect(h.options().keyspace_events(KeyspaceEvents::Require))
        .await
        .expect("notify-keyspace-events has K and x on the test server");
    s.close().await.expect("close");
}

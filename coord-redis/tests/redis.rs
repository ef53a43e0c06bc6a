//! Redis-specific behaviour, against the server at `COORD_TEST_REDIS`:
//! crashed clients, lost answers and cut connections (through a fault proxy
//! of the session's own), watches that clean up after themselves.

mod common;

use std::time::Duration;

use common::{behind_proxy, redis_url, RedisHarness};
use coord_conformance::fault::Fault;
use coord_core::{CreateMode, Error, SessionState};
use coord_redis::{testing, KeyspaceEvents, RedisOptions};

async fn raw(options: &RedisOptions) -> redis::aio::MultiplexedConnection {
    redis::Client::open(options.url())
        .expect("redis url")
        .get_multiplexed_async_connection()
        .await
        .expect("connect to COORD_TEST_REDIS")
}

/// Delete session `sid`'s key behind everyone's back (no reap, no
/// notice), as if it had expired unseen; it must have been there.
async fn delete_session_key(
    conn: &mut redis::aio::MultiplexedConnection,
    options: &RedisOptions,
    sid: &str,
) {
    let key = format!("{}s:{sid}", options.key_prefix());
    let n: i64 = redis::cmd("DEL")
        .arg(&key)
        .query_async(conn)
        .await
        .expect("DEL");
    assert_eq!(n, 1, "session {sid}'s key was there");
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
    let (crashing, hooks) = testing::connect_with_hooks(h.options().with_session_timeout(ttl))
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
    // DEL raises no notice coord-redis listens for: only a read can tell.
    delete_session_key(&mut conn, &h.options, &sid).await;
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

/// An unprotected create whose answer is lost is not retried (that could
/// make the node twice): the caller hears of the loss, the node the server
/// made is there once, and the session carries on. (A protected one is
/// found again instead: conformance `fault_lost_create_answer_is_found`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_answer_of_unprotected_create_is_reported() {
    let h = RedisHarness::from_env();
    // A long TTL: no heartbeat goes out around the create, so the answer
    // the proxy loses is the create's.
    let (proxy, options) =
        behind_proxy(&h.options().with_session_timeout(Duration::from_secs(60))).await;
    let s = coord_redis::connect(options).await.expect("connect");
    let observer = coord_redis::connect(h.options()).await.expect("connect");
    s.ensure_dir("/jobs").await.expect("dir");
    // Let the sweep the session starts with answer first.
    tokio::time::sleep(Duration::from_millis(200)).await;
    proxy.lose_next_answer();
    let lost = s
        .create("/jobs/plain-", b"", CreateMode::PersistentSequential)
        .await;
    assert!(matches!(lost, Err(Error::ConnectionLost(_))), "{lost:?}");
    assert_eq!(proxy.lost_answers(), 1);
    let kids = observer.children("/jobs").await.expect("children");
    assert_eq!(kids.len(), 1, "the create was applied once: {kids:?}");
    assert!(kids[0].name.starts_with("plain-"), "{kids:?}");
    eventually(
        "the session reconnects",
        Duration::from_secs(10),
        || async { s.get("/jobs").await.is_ok() },
    )
    .await;
    assert_eq!(s.state(), SessionState::Connected);
    s.close().await.expect("close");
    observer.close().await.expect("close");
}

/// Both connections of a session cut (by its own proxy, for less than its
/// TTL): a pending watch wakes (spuriously), calls fail as retryable while
/// it lasts, and after the heal the session is back on its own, its
/// ephemeral node intact and watches working again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_survives_cut_connections() {
    let h = RedisHarness::from_env();
    let (proxy, options) = behind_proxy(&h.options()).await;
    let s = coord_redis::connect(options).await.expect("connect");
    let other = coord_redis::connect(h.options()).await.expect("connect");
    let node = s
        .create("/rc/e", b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    let (_, watch) = s.children_watch("/rc").await.expect("watch");

    proxy.cut();
    tokio::time::timeout(Duration::from_secs(10), watch)
        .await
        .expect("a watch wakes when its link drops")
        .expect("a spurious wake-up is Ok");
    let during = s.get(&node.path).await;
    assert!(
        matches!(&during, Err(e) if e.is_retryable()),
        "a call during the cut: {during:?}"
    );
    let mut state = s.state_watch();
    tokio::time::timeout(
        Duration::from_secs(10),
        state.wait_for(|st| *st == SessionState::Suspended),
    )
    .await
    .expect("Suspended during the cut")
    .expect("state");

    proxy.heal();
    let (_, watch) = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match s.children_watch("/rc").await {
                Ok(w) => return w,
                Err(e) if e.is_retryable() => tokio::time::sleep(Duration::from_millis(50)).await,
                Err(e) => panic!("children_watch after the heal: {e}"),
            }
        }
    })
    .await
    .expect("the links come back");
    other
        .create("/rc/x", b"", CreateMode::Persistent)
        .await
        .expect("create");
    tokio::time::timeout(Duration::from_secs(10), watch)
        .await
        .expect("a watch set after the reconnect fires")
        .expect("watch");
    assert!(
        s.get(&node.path).await.expect("get").is_some(),
        "the ephemeral node outlived the cut"
    );
    tokio::time::timeout(
        Duration::from_secs(10),
        state.wait_for(|st| *st == SessionState::Connected),
    )
    .await
    .expect("Connected again")
    .expect("state");
    s.close().await.expect("close");
    other.close().await.expect("close");
}

/// A session the client gives up while the server still hears it (its
/// answers lost, its heartbeats not) is ended on the server by the client
/// itself, at once: its key and its ephemeral node are gone even before
/// the fault heals, its state is `Expired` (not `Closed`), and nothing
/// renews it afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn given_up_session_is_ended_on_the_server() {
    let h = RedisHarness::from_env();
    let ttl = Duration::from_secs(2);
    let (proxy, options) = behind_proxy(&h.options().with_session_timeout(ttl)).await;
    let s = coord_redis::connect(options).await.expect("connect");
    let node = s
        .create("/gone/e", b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    let key = format!("{}s:{}", h.options.key_prefix(), s.id().0);
    let mut conn = raw(&h.options).await;
    proxy.silence();
    let lost_at = tokio::time::Instant::now();
    let why = tokio::time::timeout(ttl * 3, s.ended())
        .await
        .expect("the client gives the session up at its lease deadline");
    assert!(matches!(why, Error::SessionExpired), "{why:?}");
    // At 90 % of the TTL after the last answered heartbeat (plus slack for
    // a loaded machine).
    assert!(
        lost_at.elapsed() < ttl + ttl / 2,
        "given up {:?} after the answers stopped (TTL {ttl:?})",
        lost_at.elapsed()
    );
    // Still silenced: the END reached the server all the same.
    eventually("the session key deleted", ttl, || {
        let mut conn = conn.clone();
        let key = key.clone();
        async move {
            redis::cmd("EXISTS")
                .arg(&key)
                .query_async::<i64>(&mut conn)
                .await
                .expect("EXISTS")
                == 0
        }
    })
    .await;
    let left: i64 = redis::cmd("EXISTS")
        .arg(format!("{}n:{}", h.options.key_prefix(), node.path))
        .query_async(&mut conn)
        .await
        .expect("EXISTS");
    assert_eq!(left, 0, "the ephemeral node went with the session");
    proxy.heal();
    tokio::time::sleep(ttl).await;
    let back: i64 = redis::cmd("EXISTS")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .expect("EXISTS");
    assert_eq!(back, 0, "nothing renews a session given up");
    assert_eq!(s.state(), SessionState::Expired);
    s.close().await.expect("closing a given-up session is Ok");
    assert_eq!(s.state(), SessionState::Expired);
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
    let s = coord_redis::connect(h.options().with_session_timeout(Duration::from_millis(600)))
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
        RedisOptions::new(&url)
            .with_namespace(h.options.key_prefix().trim_matches(|c| "{}:".contains(c))),
    )
    .await
    .expect("connect with user and password");
    s.create("/acl", b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    s.close().await.expect("close");

    let wrong = redis_url().replacen("redis://", &format!("redis://{user}:wrong@"), 1);
    let err = coord_redis::connect(RedisOptions::new(wrong))
        .await
        .expect_err("bad password");
    assert!(
        matches!(
            err,
            Error::Unauthenticated {
                backend: "redis",
                ..
            }
        ),
        "{err:?}"
    );
    let () = redis::cmd("ACL")
        .arg("DELUSER")
        .arg(&user)
        .query_async(&mut conn)
        .await
        .expect("ACL DELUSER");

    let bad_ns = coord_redis::connect(RedisOptions::new(redis_url()).with_namespace("a b")).await;
    assert!(
        matches!(bad_ns, Err(Error::InvalidArgument(_))),
        "{bad_ns:?}"
    );
    let bad_ttl = coord_redis::connect(
        RedisOptions::new(redis_url()).with_session_timeout(Duration::from_millis(10)),
    )
    .await;
    assert!(
        matches!(bad_ttl, Err(Error::InvalidArgument(_))),
        "{bad_ttl:?}"
    );
    let bad_url = coord_redis::connect(RedisOptions::new("http://nowhere")).await;
    assert!(
        matches!(bad_url, Err(Error::InvalidArgument(_))),
        "{bad_url:?}"
    );
}

/// The test server has expired-key notices on, so `Require` accepts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyspace_events_required_and_present() {
    let h = RedisHarness::from_env();
    let s = coord_redis::connect(h.options().with_keyspace_events(KeyspaceEvents::Require))
        .await
        .expect("notify-keyspace-events has K and x on the test server");
    s.close().await.expect("close");
}

/// A dead session's contender nodes (its key deleted behind everyone's
/// back, nothing reaped yet) are never an answer of `place` or
/// `first_children`: the scripts reap them on the way, and answer what a
/// listing (which reaps too) gives afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn place_and_first_children_pass_over_dead_sessions_nodes() {
    use coord_core::backend::order::{first_in, place_in};
    use coord_core::{Blockers, Child, Place, Session};

    let h = RedisHarness::from_env();
    let other = coord_redis::connect(h.options()).await.expect("connect");
    let mut conn = raw(&h.options).await;
    // Contenders of `other` (o) and of a session that dies (d), in
    // sequence order: d d o d d o d o.
    async fn made(s: &Session, dir: &str) -> Child {
        let c = s
            .create(
                &format!("{dir}/_c_x-lock-"),
                b"",
                CreateMode::EphemeralSequential,
            )
            .await
            .expect("create");
        let name = c.path.rsplit('/').next().expect("a name");
        Child::new(name.to_owned(), c.sequence)
    }
    for (round, dir) in ["/ord-first", "/ord-place"].into_iter().enumerate() {
        let (dying, hooks) = testing::connect_with_hooks(h.options())
            .await
            .expect("connect");
        let mut ours = Vec::new();
        for who in "ddoddodo".chars() {
            if who == 'o' {
                ours.push(made(&other, dir).await);
            } else {
                made(&dying, dir).await;
            }
        }
        hooks.crash();
        let sid = dying.id().0.clone();
        drop(dying);
        delete_session_key(&mut conn, &h.options, &sid).await;
        if round == 0 {
            let got = other.first_children(dir, 2).await.expect("first_children");
            assert_eq!(got, ours[..2].to_vec());
            let kids = other.children(dir).await.expect("children");
            assert_eq!(kids, ours, "the dead session's nodes were reaped");
            assert_eq!(got, first_in(kids, 2));
        } else {
            let last = &ours[2];
            let got = other.place(dir, last, Blockers::All).await.expect("place");
            assert_eq!(got, Place::Behind(ours[1].clone()));
            let kids = other.children(dir).await.expect("children");
            assert_eq!(kids, ours, "the dead session's nodes were reaped");
            assert_eq!(got, place_in(&kids, last, Blockers::All));
        }
    }
    other.close().await.expect("close");
}

//! A Redis server restarting under coord: killed with `kill -9` and started
//! again on the same port, without its data (no persistence) or with it
//! (`appendonly yes`, `appendfsync always`).
//!
//! Each test starts its own `redis-server` (a `coord_conformance::server`
//! process, from `PATH`, on a free loopback port, in a directory of its
//! own) and kills exactly the process it started, so it may kill and
//! restart it at will; the shared server of `COORD_TEST_REDIS` is not used.
//! Without `redis-server` every test fails; none is skipped.
//!
//! What they show:
//! - on a server that keeps its data, the shared restart spec
//!   (`coord_conformance::server_restart`, as on ZooKeeper and etcd): a
//!   hold either survives (and nobody else can take the lock) or is over
//!   for its holder first, never two holders, and tokens keep growing; the
//!   recipes that come back (a rejoining latch, a group member, a cache
//!   that follows a client) are back after each restart;
//! - the same recipes come back after restarts that lose the data
//!   (`coord_conformance::restart_come_back`): the latch's next token is
//!   larger still, the member is made again with its data, the cache
//!   follows the tree written again;
//! - fencing tokens (stamps) keep growing across restarts that lose the
//!   data, which only Redis has: a stale holder's token never passes again;
//! - a session whose server lost it is reported `Expired` by the server's
//!   answer, before its own lease would have run out.

use std::time::Duration;

use coord_conformance::server::{Redis, ServerKind, ServerProcess, TestServer};
use coord_conformance::server_restart::StandaloneServer;
use coord_conformance::within_for as within;
use coord_core::recipes::{Lock, LockGuard};
use coord_core::{
    Client, ClientOptions, CreateMode, Error, Fence, Op, OpResult, Session, SessionState,
};
use coord_redis::RedisOptions;
use tokio::time::Instant;

/// The session timeout of every session of the Redis-only tests: short, so
/// a test that waits for the client's lease to run out stays fast.
const SESSION_TIMEOUT: Duration = Duration::from_secs(2);

type RedisServer = TestServer<Redis>;

/// A `redis-server` of the test's own, and how coord-redis opens sessions
/// on it: the shared restart spec runs on one that keeps its data, the
/// data-loss tests on one without persistence.
struct Standalone(RedisServer);

#[async_trait::async_trait]
impl StandaloneServer for Standalone {
    fn name(&self) -> &'static str {
        "redis"
    }
    async fn open(&self, session_timeout: Duration) -> Session {
        connect_with(&self.0, session_timeout).await
    }
    fn client(&self, session_timeout: Duration, options: ClientOptions) -> Client {
        let redis = options_with(&self.0, session_timeout);
        Client::start(move || coord_redis::connect(redis.clone()), options)
    }
    fn process(&mut self) -> &mut dyn ServerProcess {
        &mut self.0
    }
    /// The restarted server forgot the `CONFIG SET` of the keyspace
    /// notices; the sessions that came back set them again.
    async fn survived(&self) {
        let url = self.0.address();
        within(
            "the surviving session turns the keyspace notices back on",
            SESSION_TIMEOUT,
            async {
                loop {
                    let flags = keyspace_events(&url).await;
                    if flags.contains('K') && (flags.contains('x') || flags.contains('A')) {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
        )
        .await;
    }
}

coord_conformance::server_restart_tests!(Standalone(TestServer::start(Redis::append_only()).await));

coord_conformance::server_data_loss_tests!(Standalone(
    TestServer::start(Redis::without_persistence()).await
));

/// The raw value of the store-wide stamp counter (`None`: no such key).
async fn raw_counter(url: &str, options: &RedisOptions) -> Option<u64> {
    let client = redis::Client::open(url).expect("redis url");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("connect to the test's redis-server");
    let value: Option<String> = redis::cmd("GET")
        .arg(format!("{}stamp", options.key_prefix()))
        .query_async(&mut conn)
        .await
        .expect("GET the stamp counter");
    value.map(|v| v.parse().expect("the counter is a number"))
}

/// The server's `notify-keyspace-events` flags.
async fn keyspace_events(url: &str) -> String {
    let client = redis::Client::open(url).expect("redis url");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("connect to the test's redis-server");
    let pair: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("notify-keyspace-events")
        .query_async(&mut conn)
        .await
        .expect("CONFIG GET");
    pair.get(1).cloned().unwrap_or_default()
}

fn options(server: &RedisServer) -> RedisOptions {
    options_with(server, SESSION_TIMEOUT)
}

fn options_with(server: &RedisServer, session_timeout: Duration) -> RedisOptions {
    RedisOptions::new(server.address())
        .with_namespace("restart")
        .with_session_timeout(session_timeout)
}

async fn connect(server: &RedisServer) -> Session {
    connect_with(server, SESSION_TIMEOUT).await
}

async fn connect_with(server: &RedisServer, session_timeout: Duration) -> Session {
    match coord_redis::connect(options_with(server, session_timeout)).await {
        Ok(s) => s,
        Err(e) => panic!("cannot open a session on {}: {e}", server.address()),
    }
}

/// A resource protected by fencing tokens, as a resource should be: it
/// remembers the largest token it has accepted and refuses smaller ones.
#[derive(Debug, Default)]
struct Resource {
    largest: u64,
}

impl Resource {
    fn accept(&mut self, token: u64) -> bool {
        if token < self.largest {
            return false;
        }
        self.largest = token;
        true
    }
}

fn set_data(path: &str, data: &str) -> Op {
    Op::Set {
        path: path.to_owned(),
        data: data.as_bytes().to_vec(),
        version: None,
    }
}

/// The session is reported `Expired` within the session timeout, with no
/// request of ours to find it out (the background renewal does), and
/// before its lease deadline: the server's answer that the session key is
/// gone ended it, not the client's lease running out. How long that took.
async fn assert_expired_by_the_server(session: &Session) -> Duration {
    let started = Instant::now();
    let mut state = session.state_watch();
    within(
        "the session is reported Expired",
        SESSION_TIMEOUT,
        state.wait_for(|st| st.is_terminal()),
    )
    .await
    .expect("state");
    let reported = Instant::now();
    assert_eq!(session.state(), SessionState::Expired);
    assert!(
        reported < session.lease_deadline(),
        "Expired only when the client's lease ran out ({:?} late): the server's answer \
         that the session key is gone was not acted on",
        reported - session.lease_deadline()
    );
    reported - started
}

/// As [`assert_expired_by_the_server`], and the holder's `lost()` resolves
/// with `SessionExpired` at once.
async fn assert_hold_expired_by_the_server(holder: &LockGuard, session: &Session) -> Duration {
    let took = assert_expired_by_the_server(session).await;
    let lost = within(
        "lost() after the session's end",
        Duration::from_secs(1),
        holder.lost(),
    )
    .await;
    assert!(matches!(lost, Error::SessionExpired), "lost: {lost:?}");
    took
}

/// (a) A data-losing restart: the holder of token T is reported `Expired`
/// promptly; the next holder's token is larger than T, so a resource that
/// keeps the largest token refuses the stale holder; the stale fence is
/// refused by the guarded write too.
///
/// On the old derivation (stamp = `INCR` of the counter alone) this fails
/// at `t2 > t1`: the counter starts again from 1 after the restart (see
/// `the_counter_alone_would_go_back`), so the new holder's token was
/// smaller than the stale one's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_losing_restart_expires_holders_and_tokens_keep_growing() {
    let mut server = RedisServer::start(Redis::without_persistence()).await;
    let s1 = connect(&server).await;
    s1.ensure_dir("/data").await.expect("dir");
    s1.create("/data/x", b"", CreateMode::Persistent)
        .await
        .expect("data node");
    let lock1 = Lock::new(&s1, "/locks/job").expect("lock");
    let g1 = within("first acquire", SESSION_TIMEOUT, lock1.acquire())
        .await
        .expect("acquire");
    let t1 = g1.fencing_token();
    let mut resource = Resource::default();
    assert!(resource.accept(t1));
    let wrote = g1.write(set_data("/data/x", "by 1")).await;
    assert!(matches!(wrote, Ok(OpResult::Set(_))), "{wrote:?}");

    let started = Instant::now();
    server.restart().await;
    let restarted = started.elapsed();
    assert_eq!(
        raw_counter(&server.address(), &options(&server)).await,
        None,
        "the restart lost the data"
    );
    let expired_after = assert_hold_expired_by_the_server(&g1, &s1).await;

    let s2 = connect(&server).await;
    s2.ensure_dir("/data").await.expect("dir");
    s2.create("/data/x", b"", CreateMode::Persistent)
        .await
        .expect("data node");
    let lock2 = Lock::new(&s2, "/locks/job").expect("lock");
    let g2 = within("second acquire", SESSION_TIMEOUT, lock2.acquire())
        .await
        .expect("acquire");
    let t2 = g2.fencing_token();
    assert!(t2 > t1, "token {t2} after the restart is not above {t1}");
    assert!(resource.accept(t2), "the new holder is accepted");
    assert!(!resource.accept(t1), "the stale holder is refused");

    // The stale fence, from a live session, and from the stale holder.
    let stale = Fence {
        path: g1.node_path().to_owned(),
        stamp: t1,
    };
    let refused = s2.guarded(&stale, set_data("/data/x", "stale")).await;
    assert!(
        matches!(refused, Err(Error::LockLost { .. })),
        "{refused:?}"
    );
    let refused = g1.write(set_data("/data/x", "stale")).await;
    assert!(matches!(refused, Err(Error::SessionExpired)), "{refused:?}");
    let wrote = g2.write(set_data("/data/x", "by 2")).await;
    assert!(matches!(wrote, Ok(OpResult::Set(_))), "{wrote:?}");
    let node = s2
        .get("/data/x")
        .await
        .expect("get")
        .expect("the data node");
    assert_eq!(node.data, b"by 2");

    eprintln!(
        "tokens {t1} -> {t2}; restart took {restarted:?}, \
         the holder was reported Expired {expired_after:?} after it was back"
    );
    g2.release().await.expect("release");
    s2.close().await.expect("close");
}

/// (c) Several data-losing restarts in a row: every holder is reported
/// `Expired` by the server's answer, and the tokens strictly increase
/// across all of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_strictly_increase_across_repeated_data_losing_restarts() {
    let mut server = RedisServer::start(Redis::without_persistence()).await;
    let mut tokens = Vec::new();
    for round in 0..4 {
        let s = connect(&server).await;
        let lock = Lock::new(&s, "/locks/job").expect("lock");
        let g = within("acquire", SESSION_TIMEOUT, lock.acquire())
            .await
            .expect("acquire");
        let t = g.fencing_token();
        if let Some(&last) = tokens.last() {
            assert!(
                t > last,
                "round {round}: token {t} after {last} ({tokens:?})"
            );
        }
        tokens.push(t);
        server.restart().await;
        let took = assert_hold_expired_by_the_server(&g, &s).await;
        eprintln!("round {round}: token {t}, Expired {took:?} after the restart");
    }
    eprintln!("tokens across restarts: {tokens:?}");
}

/// (d) The control: the raw counter alone does go back across a
/// data-losing restart (so a token derived from it alone would repeat),
/// and a stale fence on a path made again after the restart is refused.
///
/// The same creates before and after the restart would give the remade
/// node exactly the stale token on the old derivation (stamp = `INCR` of
/// the counter alone), and the stale holder's guarded write would pass:
/// this test fails there at `remade.stamp > t` (checked by running it with
/// that derivation put back).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_counter_alone_would_go_back() {
    let mut server = RedisServer::start(Redis::without_persistence()).await;
    let s1 = connect(&server).await;
    let held = s1
        .create("/fence/holder", b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    let t = held.stamp;
    let before = raw_counter(&server.address(), &options(&server)).await;
    assert_eq!(before, Some(t), "the counter holds the last stamp");

    server.restart().await;
    let after = raw_counter(&server.address(), &options(&server)).await;
    // An `INCR` of the counter would now hand out 1: back below t.
    assert_eq!(after, None, "the counter is gone with the data");
    // A session with no hold and no watch: its renewal finds it gone.
    let took = assert_expired_by_the_server(&s1).await;
    eprintln!("a session without watches was reported Expired {took:?} after the restart");

    // The same creates again, by a new session.
    let s2 = connect(&server).await;
    let remade = s2
        .create("/fence/holder", b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    assert!(
        remade.stamp > t,
        "the node made again has stamp {} (stale token {t})",
        remade.stamp
    );
    let stale = Fence {
        path: "/fence/holder".to_owned(),
        stamp: t,
    };
    let refused = s2
        .guarded(
            &stale,
            Op::Create {
                path: "/fence/written".to_owned(),
                data: b"stale".to_vec(),
                mode: CreateMode::Persistent,
            },
        )
        .await;
    assert!(
        matches!(refused, Err(Error::LockLost { .. })),
        "{refused:?}"
    );
    assert!(s2.get("/fence/written").await.expect("get").is_none());
    s2.close().await.expect("close");
}

/// The test's own servers are gone when it ends (the `Drop` kills exactly
/// the pid it started), and `kill` really is `kill -9` of that pid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_test_server_is_killed_with_its_pid() {
    let server = RedisServer::start(Redis::without_persistence()).await;
    let (kind, ports) = (*server.kind(), server.ports().to_vec());
    let dir = server.dir().to_path_buf();
    let pid = server.pid().expect("it runs");
    assert!(kind.serving(&ports).await);
    drop(server);
    assert!(
        !kind.serving(&ports).await,
        "the server still answers after Drop"
    );
    assert!(!dir.exists(), "its directory is left behind");
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "pid {pid} is still there after Drop"
    );
}

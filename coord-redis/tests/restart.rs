//! A Redis server restarting under coord: killed with `kill -9` and started
//! again on the same port, without its data (no persistence) or with it
//! (`appendonly yes`, `appendfsync always`).
//!
//! Each test starts its own `redis-server` (from `PATH`, on a free loopback
//! port, in a directory of its own) and kills exactly the process it
//! started, so it may kill and restart it at will; the shared server of
//! `COORD_TEST_REDIS` is not used. Without `redis-server` every test fails;
//! none is skipped.
//!
//! What they show:
//! - fencing tokens (stamps) keep growing across restarts that lose the
//!   data: a stale holder's token never passes again;
//! - a session whose server lost it is reported `Expired` by the server's
//!   answer, before its own lease would have run out;
//! - on a server that keeps its data, a hold either survives (and nobody
//!   else can take the lock) or is over for its holder first: never two
//!   holders.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use coord_core::recipes::{Lock, LockGuard};
use coord_core::{CreateMode, Error, Fence, Op, OpResult, Session, SessionState};
use coord_redis::RedisOptions;
use tokio::time::Instant;

/// The session timeout of every session here: short, so a test that waits
/// for the client's lease to run out stays fast.
const SESSION_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a server may take to start (or to load its AOF).
const SERVER_START: Duration = Duration::from_secs(10);

/// Whether the server keeps its data across a restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Persistence {
    /// No RDB, no AOF: a restart starts empty.
    None,
    /// `appendonly yes`, `appendfsync always`: nothing acknowledged is lost.
    AofAlways,
}

/// A `redis-server` process this test started, and the only one it kills.
/// Dropped, it is killed (`SIGKILL`, by its pid) and its directory removed.
struct RedisServer {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    persistence: Persistence,
}

/// A free loopback port (the listener is closed again at once; the server
/// binds it right after).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    listener.local_addr().expect("local addr").port()
}

impl RedisServer {
    /// Start a server, and wait until it answers `PING`.
    async fn start(persistence: Persistence) -> Self {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let dir = std::env::temp_dir().join(format!("coord-redis-restart-{}", &id[..12]));
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot make {}: {e}", dir.display()));
        let mut server = RedisServer {
            child: None,
            port: free_port(),
            dir,
            persistence,
        };
        server.spawn().await;
        server
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
    }

    /// Run `redis-server` on our port and directory; wait until it answers.
    async fn spawn(&mut self) {
        assert!(self.child.is_none(), "the server is already running");
        let appendonly = match self.persistence {
            Persistence::None => "no",
            Persistence::AofAlways => "yes",
        };
        let child = Command::new("redis-server")
            .arg("--port")
            .arg(self.port.to_string())
            .args(["--bind", "127.0.0.1", "--save", "", "--daemonize", "no"])
            .args(["--appendonly", appendonly, "--appendfsync", "always"])
            .arg("--dir")
            .arg(&self.dir)
            .args(["--logfile", "redis.log"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start redis-server (it must be on PATH for these tests; \
                     Debian/Ubuntu: apt-get install redis-server): {e}"
                )
            });
        self.child = Some(child);
        self.wait_ready().await;
    }

    /// Wait until the server answers `PING` with `PONG` (not `LOADING`).
    async fn wait_ready(&mut self) {
        let deadline = Instant::now() + SERVER_START;
        let url = self.url();
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    self.child = None;
                    panic!(
                        "redis-server on port {} exited at start ({status}); its log:\n{}",
                        self.port,
                        self.log()
                    );
                }
            }
            if ping(&url).await {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "redis-server on port {} did not answer within {SERVER_START:?}; its log:\n{}",
                self.port,
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// `kill -9` the server we started (and reap it).
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // std's kill is SIGKILL on Unix, to this child's pid only.
            if let Err(e) = child.kill() {
                panic!("cannot kill redis-server pid {}: {e}", child.id());
            }
            let _ = child.wait();
        }
    }

    /// Kill the server and start it again on the same port and directory.
    async fn restart(&mut self) {
        self.kill();
        self.spawn().await;
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        if !self.dir.as_os_str().is_empty() && self.dir.starts_with(std::env::temp_dir()) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Whether the server at `url` answers `PING` with `PONG`.
async fn ping(url: &str) -> bool {
    let Ok(client) = redis::Client::open(url) else {
        return false;
    };
    let attempt = async {
        let mut conn = client.get_multiplexed_async_connection().await.ok()?;
        redis::cmd("PING")
            .query_async::<String>(&mut conn)
            .await
            .ok()
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(1), attempt).await,
        Ok(Some(pong)) if pong == "PONG"
    )
}

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
    RedisOptions::new(server.url())
        .with_namespace("restart")
        .with_session_timeout(SESSION_TIMEOUT)
}

async fn connect(server: &RedisServer) -> Session {
    match coord_redis::connect(options(server)).await {
        Ok(s) => s,
        Err(e) => panic!("cannot open a session on {}: {e}", server.url()),
    }
}

/// `fut`, or a failure naming `what` once `within` has passed.
async fn within<T>(what: &str, within: Duration, fut: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(within, fut).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: not within {within:?}"),
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
    let mut server = RedisServer::start(Persistence::None).await;
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
        raw_counter(&server.url(), &options(&server)).await,
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

/// (b) A restart on the same data (`appendonly yes`, `appendfsync
/// always`), quick enough for the session key to come back alive: the
/// holder either keeps its hold — its guarded write goes through, and
/// nobody else can take the lock — or it is `Expired` (on the client, before
/// anyone else could take the lock: the lease ends before the key can).
/// Never both holders.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_on_the_same_data_keeps_or_ends_the_hold_never_both() {
    let mut server = RedisServer::start(Persistence::AofAlways).await;
    let s1 = connect(&server).await;
    s1.create("/data/x", b"", CreateMode::Persistent)
        .await
        .expect("data node");
    let lock1 = Lock::new(&s1, "/locks/job").expect("lock");
    let g1 = within("first acquire", SESSION_TIMEOUT, lock1.acquire())
        .await
        .expect("acquire");
    let t1 = g1.fencing_token();

    let started = Instant::now();
    server.restart().await;
    let restarted = started.elapsed();

    // The holder's next guarded write, through the reconnect: Ok (the
    // session came back) or the session's end; nothing else.
    let held_on = within(
        "the holder's write after the restart",
        SESSION_TIMEOUT * 2,
        async {
            loop {
                match g1.write(set_data("/data/x", "by 1 after")).await {
                    Ok(_) => return true,
                    Err(e) if e.is_retryable() => {
                        tokio::time::sleep(Duration::from_millis(20)).await
                    }
                    Err(Error::SessionExpired) => return false,
                    Err(e) => panic!("the holder's write after the restart: {e}"),
                }
            }
        },
    )
    .await;

    if held_on {
        // The restarted server forgot the `CONFIG SET` of the keyspace
        // notices; the surviving session sets them again (before anyone
        // connects, which would too).
        within(
            "the surviving session turns the keyspace notices back on",
            SESSION_TIMEOUT,
            async {
                loop {
                    let flags = keyspace_events(&server.url()).await;
                    if flags.contains('K') && (flags.contains('x') || flags.contains('A')) {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
        )
        .await;
    }
    let s2 = connect(&server).await;
    let lock2 = Lock::new(&s2, "/locks/job").expect("lock");
    if held_on {
        // Survived: nobody else can take the lock while it holds.
        let other = lock2.try_acquire().await.expect("try_acquire");
        assert!(
            other.is_none(),
            "a second holder while the first still holds (tokens {t1} and {:?})",
            other.as_ref().map(LockGuard::fencing_token)
        );
        assert!(!s1.state().is_terminal(), "{:?}", s1.state());
        let again = g1.write(set_data("/data/x", "by 1 still")).await;
        assert!(matches!(again, Ok(OpResult::Set(_))), "{again:?}");
        let node = s2.get("/data/x").await.expect("get").expect("data node");
        assert_eq!(node.data, b"by 1 still");
        let holders = lock2.participants().await.expect("participants");
        assert_eq!(holders.len(), 1, "{holders:?}");
        assert_eq!(holders[0].stamp, t1);
        g1.release().await.expect("release");
    } else {
        // Over for the holder first; then the next holder has a larger token.
        let g2 = within("second acquire", SESSION_TIMEOUT * 2, lock2.acquire())
            .await
            .expect("acquire");
        assert!(s1.state().is_terminal(), "{:?}", s1.state());
        assert!(g2.fencing_token() > t1);
        let refused = g1.write(set_data("/data/x", "stale")).await;
        assert!(refused.is_err(), "{refused:?}");
        g2.release().await.expect("release");
    }
    eprintln!(
        "restart on the same data took {restarted:?}; the holder {}",
        if held_on {
            "kept its hold"
        } else {
            "was Expired"
        }
    );
    s1.close().await.expect("close");
    s2.close().await.expect("close");
}

/// (b, the other branch, made certain) The server stays down until the
/// holder's lease has run out, then comes back with its data: the holder
/// was `Expired` on the client first, its session key has expired on the
/// server, the next holder gets the lock with a larger token, and the stale
/// fence is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_on_the_same_data_after_the_session_timeout_expires_the_holder() {
    let mut server = RedisServer::start(Persistence::AofAlways).await;
    let s1 = connect(&server).await;
    s1.create("/data/x", b"", CreateMode::Persistent)
        .await
        .expect("data node");
    let lock1 = Lock::new(&s1, "/locks/job").expect("lock");
    let g1 = within("first acquire", SESSION_TIMEOUT, lock1.acquire())
        .await
        .expect("acquire");
    let t1 = g1.fencing_token();

    let killed = Instant::now();
    server.kill();
    // Down for longer than the session timeout: the client's lease runs
    // out first (it ends a margin before the key can expire).
    let lost = within(
        "the holder's lease runs out",
        SESSION_TIMEOUT * 2,
        g1.lost(),
    )
    .await;
    assert!(matches!(lost, Error::SessionExpired), "{lost:?}");
    assert!(
        Instant::now() < killed + SESSION_TIMEOUT,
        "the holder gave up only after its key could have expired"
    );
    // No renewal reached the server after the kill: by then its key has
    // expired by the server's clock (this host's), restart or not.
    tokio::time::sleep_until(killed + SESSION_TIMEOUT + Duration::from_millis(100)).await;
    server.spawn().await;

    let s2 = connect(&server).await;
    let lock2 = Lock::new(&s2, "/locks/job").expect("lock");
    let g2 = within("second acquire", SESSION_TIMEOUT * 2, lock2.acquire())
        .await
        .expect("acquire");
    assert!(g2.fencing_token() > t1);
    let stale = Fence {
        path: g1.node_path().to_owned(),
        stamp: t1,
    };
    let refused = s2.guarded(&stale, set_data("/data/x", "stale")).await;
    assert!(
        matches!(refused, Err(Error::LockLost { .. })),
        "{refused:?}"
    );
    let wrote = g2.write(set_data("/data/x", "by 2")).await;
    assert!(matches!(wrote, Ok(OpResult::Set(_))), "{wrote:?}");
    g2.release().await.expect("release");
    s2.close().await.expect("close");
}

/// (c) Several data-losing restarts in a row: every holder is reported
/// `Expired` by the server's answer, and the tokens strictly increase
/// across all of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_strictly_increase_across_repeated_data_losing_restarts() {
    let mut server = RedisServer::start(Persistence::None).await;
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
    let mut server = RedisServer::start(Persistence::None).await;
    let s1 = connect(&server).await;
    let held = s1
        .create("/fence/holder", b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    let t = held.stamp;
    let before = raw_counter(&server.url(), &options(&server)).await;
    assert_eq!(before, Some(t), "the counter holds the last stamp");

    server.restart().await;
    let after = raw_counter(&server.url(), &options(&server)).await;
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
    let server = RedisServer::start(Persistence::None).await;
    let url = server.url();
    let dir: PathBuf = server.dir.clone();
    assert!(ping(&url).await);
    drop(server);
    assert!(!ping(&url).await, "the server still answers after Drop");
    assert!(!Path::new(&dir).exists(), "its directory is left behind");
}

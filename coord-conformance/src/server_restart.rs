//! A standalone server restarted on the same data dir: `kill -9` (or the
//! server's own shutdown, where its [`ServerKind`](crate::server::ServerKind)
//! stops it so: PostgreSQL's fast and immediate shutdowns), then started
//! again on the same port(s). Sessions live in the server's data: a
//! holder's session either comes back with its hold, or is reported
//! `Expired` on its client before anyone else is granted the lock. Never two
//! holders; tokens never go back.
//!
//! A backend's test file starts its own server (a
//! [`TestServer`](crate::server::TestServer), so it can kill it), wraps it
//! with its way to open sessions in a [`StandaloneServer`], and runs every
//! test here with one line, [`server_restart_tests!`](crate::server_restart_tests);
//! each test panics, saying what broke, when the backend does not keep
//! these promises. Every test is cancel safe in the suite's sense (see the
//! crate docs).
//!
//! The same macro runs [`crate::restart_come_back`]'s test of the recipes
//! that come back (on a supervised client, [`StandaloneServer::client`]);
//! a server that can lose its data when restarted (Redis without
//! persistence) also runs [`server_data_loss_tests!`](crate::server_data_loss_tests).

use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use coord_core::recipes::{Lock, LockGuard};
use coord_core::{Client, ClientOptions, CreateMode, Error, Fence, Op, Result, Session};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::server::ServerProcess;
use crate::{await_children, within};

/// A standalone server a test started and may kill and restart, on the
/// same port(s) and data dir, with the backend's way to open sessions on
/// it.
#[async_trait]
pub trait StandaloneServer: Send + Sync {
    /// The backend, for messages.
    fn name(&self) -> &'static str;
    /// Open a session on the server; panics if it cannot.
    async fn open(&self, session_timeout: Duration) -> Session;
    /// A supervised client whose every session is opened on the server as
    /// [`StandaloneServer::open`] opens one (an open that fails, the
    /// server being down, is retried by the client).
    fn client(&self, session_timeout: Duration, options: ClientOptions) -> Client;
    /// The server process (usually a [`TestServer`](crate::server::TestServer)).
    fn process(&mut self) -> &mut dyn ServerProcess;
    /// The backend's own checks once a holder's session came back from a
    /// quick restart with its hold (Redis: the settings the restarted
    /// server forgot are set again). None by default.
    async fn survived(&self) {}
    /// Stop the server process as its kind says (`kill -9` unless the kind
    /// uses the server's own shutdown) and reap it.
    fn kill(&mut self) {
        self.process().kill()
    }
    /// Start it again on the same port(s) and data; returns once it serves.
    async fn spawn(&mut self) {
        self.process().spawn().await
    }
    /// [`StandaloneServer::kill`], then [`StandaloneServer::spawn`].
    async fn restart(&mut self) {
        self.process().restart().await
    }
}

const HOLDER_TIMEOUT: Duration = Duration::from_secs(4);
/// The holder's in (b): the server stays down longer than this.
const SHORT_TIMEOUT: Duration = Duration::from_secs(2);
/// The waiter's: long enough to outlive the outage and the reconnect
/// (backing off) on a loaded machine; nothing waits for it to run out.
const WAITER_TIMEOUT: Duration = Duration::from_secs(20);
const LOCK: &str = "/restart/lock";
const DATA: &str = "/restart/data";

fn set(data: &str) -> Op {
    Op::Set {
        path: DATA.to_owned(),
        data: data.as_bytes().to_vec(),
        version: None,
    }
}

/// The data node made, `holder` takes the lock.
async fn hold(holder: &Session) -> (Lock, LockGuard) {
    holder.ensure_dir("/restart").await.expect("dir");
    holder
        .create(DATA, b"", CreateMode::Persistent)
        .await
        .expect("data");
    let lock = Lock::new(holder, LOCK).expect("lock");
    let guard = within("acquire", lock.acquire()).await.expect("acquire");
    (lock, guard)
}

type Grant = (Instant, Result<LockGuard>);

/// `session` queues for the lock; the receiver gets when, and what.
async fn queue_waiter(session: &Session) -> oneshot::Receiver<Grant> {
    let (tx, rx) = oneshot::channel();
    let lock = Lock::new(session, LOCK).expect("lock");
    tokio::spawn(async move {
        let got = lock.acquire().await;
        let _ = tx.send((Instant::now(), got));
    });
    await_children(session, LOCK, "the waiter queued", |k| k.len() == 2).await;
    rx
}

fn assert_not_granted(when: &str, granted: &mut oneshot::Receiver<Grant>) {
    match granted.try_recv() {
        Err(oneshot::error::TryRecvError::Empty) => {}
        Ok((_, Ok(g))) => panic!(
            "double grant: the waiter got the lock (token {}) {when}",
            g.fencing_token()
        ),
        Ok((_, Err(e))) => panic!("the waiter's acquire failed {when}: {e}"),
        Err(_) => panic!("the waiter's task died {when}"),
    }
}

/// When `session` is reported over (Expired or Closed), from a task.
fn end_of(session: &Session) -> JoinHandle<Instant> {
    let mut states = session.state_watch();
    tokio::spawn(async move {
        let _ = states.wait_for(|s| s.is_terminal()).await;
        Instant::now()
    })
}

/// The holder's guarded write, retried through the reconnect: `true` once
/// it lands (the session came back with its hold), `false` when the
/// session is reported over. Any other answer fails the test.
async fn write_through_restart(guard: &LockGuard) -> bool {
    within("the holder's write after the restart", async {
        loop {
            match guard.write(set("by the holder, after")).await {
                Ok(_) => return true,
                Err(e) if e.is_retryable() => tokio::time::sleep(Duration::from_millis(20)).await,
                Err(Error::SessionExpired) => return false,
                Err(e) => panic!("the holder's write after the restart: {e}"),
            }
        }
    })
    .await
}

/// (a) Down for well under the holder's session timeout: the holder comes
/// back with its hold — its write lands, its node and token are the same,
/// and the waiter was not granted meanwhile — or it is reported `Expired`
/// strictly before the waiter's grant. Either way, one holder at a time.
pub async fn quick_restart_keeps_the_hold_or_expires_it_first(server: &mut dyn StandaloneServer) {
    let name = server.name();
    let holder = server.open(HOLDER_TIMEOUT).await;
    let waiter = server.open(WAITER_TIMEOUT).await;
    let (lock, guard) = hold(&holder).await;
    let t1 = guard.fencing_token();
    guard.write(set("by the holder")).await.expect("write");
    let mut granted = queue_waiter(&waiter).await;
    let ended = end_of(&holder);

    let killed = Instant::now();
    server.restart().await;
    let back = killed.elapsed();
    let survived = write_through_restart(&guard).await;
    let answered = killed.elapsed();
    let (granted_at, got) = if survived {
        assert_not_granted("while the holder's session survived", &mut granted);
        assert!(!holder.state().is_terminal(), "{:?}", holder.state());
        let queue = lock.participants().await.expect("participants");
        assert_eq!(queue.len(), 2, "{queue:?}");
        assert!(queue[0].is_holding() && !queue[1].is_holding(), "{queue:?}");
        assert_eq!(
            queue[0].node,
            guard.node_path(),
            "the holder's node changed"
        );
        assert_eq!(queue[0].stamp, t1, "the holder's token changed");
        server.survived().await;
        guard
            .write(set("by the holder, again"))
            .await
            .expect("write");
        // Nobody else can take it while it holds, and another session reads
        // what it wrote.
        let other = server.open(WAITER_TIMEOUT).await;
        let taken = Lock::new(&other, LOCK)
            .expect("lock")
            .try_acquire()
            .await
            .expect("try_acquire");
        assert!(
            taken.is_none(),
            "a second holder while the first still holds (tokens {t1} and {:?})",
            taken.as_ref().map(LockGuard::fencing_token)
        );
        let node = other.get(DATA).await.expect("get").expect("the data node");
        assert_eq!(node.data, b"by the holder, again");
        other.close().await.expect("close");
        assert_not_granted("while the holder held", &mut granted);
        guard.release().await.expect("release");
        within("the waiter's grant", &mut granted)
            .await
            .expect("task")
    } else {
        let why = within("the holder's lost()", guard.lost()).await;
        assert!(matches!(why, Error::SessionExpired), "lost(): {why:?}");
        let refused = guard.write(set("stale")).await;
        assert!(refused.is_err(), "a lost holder's write: {refused:?}");
        let grant = within("the waiter's grant", &mut granted)
            .await
            .expect("task");
        let ended_at = within("the holder's end", ended).await.expect("task");
        assert!(
            ended_at < grant.0,
            "double grant: the waiter was granted {:?} before the holder was reported Expired",
            ended_at - grant.0
        );
        grant
    };
    let next = got.unwrap_or_else(|e| {
        panic!(
            "the waiter's acquire: {e} (its session {:?})",
            waiter.state()
        )
    });
    assert!(
        next.fencing_token() > t1,
        "{} after {t1}",
        next.fencing_token()
    );
    next.write(set("by the waiter")).await.expect("write");
    eprintln!(
        "{name} restart (a): the holder's session {} (timeout {HOLDER_TIMEOUT:?}); server serving \
         {back:?} after the kill, the holder's write answered {answered:?} after, the waiter \
         granted {:?} after; tokens {t1} -> {}",
        if survived { "SURVIVED" } else { "EXPIRED" },
        granted_at - killed,
        next.fencing_token()
    );
    next.release().await.expect("release");
    let _ = holder.close().await;
    waiter.close().await.expect("close");
}

/// (b) Down longer than the holder's session timeout: the holder is
/// reported `Expired` on its client while the server is down (so before the
/// waiter's grant), the waiter's token is larger, and the old holder's
/// writes are refused, by its client and, with its fence, by the server.
pub async fn long_outage_expires_the_holder_before_the_waiter_is_granted(
    server: &mut dyn StandaloneServer,
) {
    let name = server.name();
    let holder = server.open(SHORT_TIMEOUT).await;
    let waiter = server.open(WAITER_TIMEOUT).await;
    let (_, guard) = hold(&holder).await;
    let t1 = guard.fencing_token();
    let mut granted = queue_waiter(&waiter).await;

    let killed = Instant::now();
    server.kill();
    let why = within("the holder's lost()", guard.lost()).await;
    let lost_at = Instant::now();
    assert!(matches!(why, Error::SessionExpired), "lost(): {why:?}");
    assert!(
        lost_at < killed + SHORT_TIMEOUT,
        "the holder gave up {:?} after the kill, past its session timeout",
        lost_at - killed
    );
    assert_not_granted("while the server was down", &mut granted);
    // The outage's length is the point of the test.
    tokio::time::sleep_until(killed + SHORT_TIMEOUT + Duration::from_millis(200)).await;
    server.spawn().await;
    let back = killed.elapsed();

    let (granted_at, got) = within("the waiter's grant", &mut granted)
        .await
        .expect("task");
    let next = got.unwrap_or_else(|e| {
        panic!(
            "the waiter's acquire: {e} (its session {:?})",
            waiter.state()
        )
    });
    assert!(
        lost_at < granted_at,
        "the waiter was granted before the holder's lost()"
    );
    assert!(
        next.fencing_token() > t1,
        "{} after {t1}",
        next.fencing_token()
    );
    let refused = guard.write(set("stale")).await;
    assert!(
        matches!(refused, Err(Error::SessionExpired | Error::LockLost { .. })),
        "{refused:?}"
    );
    let stale = Fence {
        path: guard.node_path().to_owned(),
        stamp: t1,
    };
    let refused = waiter.guarded(&stale, set("stale")).await;
    assert!(
        matches!(refused, Err(Error::LockLost { .. })),
        "{refused:?}"
    );
    next.write(set("by the waiter")).await.expect("write");
    eprintln!(
        "{name} restart (b): the holder Expired {:?} after the kill; server down {back:?}; the \
         waiter granted {:?} after the holder's lost(); tokens {t1} -> {}",
        lost_at - killed,
        granted_at - lost_at,
        next.fencing_token()
    );
    next.release().await.expect("release");
    waiter.close().await.expect("close");
}

/// (c) Rounds of kill and restart, each with a new holder that still holds
/// at the kill: every token is larger than all before it.
pub async fn tokens_keep_growing_across_restarts(server: &mut dyn StandaloneServer) {
    let name = server.name();
    let mut tokens: Vec<u64> = Vec::new();
    for round in 0..4 {
        let session = server.open(HOLDER_TIMEOUT).await;
        let lock = Lock::new(&session, LOCK).expect("lock");
        let guard = within("acquire", lock.acquire()).await.expect("acquire");
        let token = guard.fencing_token();
        if let Some(&last) = tokens.last() {
            assert!(
                token > last,
                "round {round}: token {token} after {tokens:?}"
            );
        }
        tokens.push(token);
        if round == 3 {
            break;
        }
        server.restart().await;
        // Released through the reconnect, or gone with its session.
        let released = within("the release after the restart", guard.release()).await;
        eprintln!("{name} restart (c): round {round}, token {token}, released: {released:?}");
        let _ = session.close().await;
    }
    eprintln!("{name} restart (c): tokens across restarts {tokens:?}");
}

#[doc(hidden)]
pub fn __run<F: Future<Output = ()>>(fut: F) {
    // As `#[tokio::test(flavor = "multi_thread", worker_threads = 2)]`; no
    // deadline: a JVM's restart on a loaded machine may take a minute.
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("build a tokio runtime")
        .block_on(fut);
}

#[doc(hidden)]
#[macro_export]
macro_rules! __server_restart_each {
    ($make:expr; $($module:ident :: $name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                $crate::server_restart::__run(async {
                    let mut server = $make;
                    $crate::$module::$name(&mut server).await;
                });
            }
        )*
    };
}

/// Instantiate every restart test for a backend: one `#[test]` each, each
/// on a server of its own. `$make` is an expression, evaluated inside the
/// test's async runtime (it may `.await`), that starts the server and
/// gives a [`StandaloneServer`] that keeps its data across a restart.
#[macro_export]
macro_rules! server_restart_tests {
    ($make:expr) => {
        $crate::__server_restart_each!($make;
            server_restart::quick_restart_keeps_the_hold_or_expires_it_first,
            server_restart::long_outage_expires_the_holder_before_the_waiter_is_granted,
            server_restart::tokens_keep_growing_across_restarts,
            restart_come_back::recipes_come_back_after_restart,
        );
    };
}

/// Instantiate the restart tests of a server that loses its data when
/// restarted (Redis without persistence): `$make` gives a
/// [`StandaloneServer`] whose restart starts empty.
#[macro_export]
macro_rules! server_data_loss_tests {
    ($make:expr) => {
        $crate::__server_restart_each!($make;
            restart_come_back::recipes_come_back_after_data_loss,
        );
    };
}

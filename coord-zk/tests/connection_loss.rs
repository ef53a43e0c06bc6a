//! Connection loss, made on purpose: the session talks to ZooKeeper
//! (`COORD_TEST_ZK`) through the conformance suite's
//! [`FaultProxy`]. What every backend must do under a fault is in the
//! conformance suite's `fault_*` tests; these are the ZooKeeper-specific
//! parts (which writes fail fast, which creates are retried, how the
//! lease is kept and given up).

mod common;

use std::sync::Arc;
use std::time::Duration;

use coord_conformance::fault::{Fault, FaultProxy};
use coord_core::backend::PrimitiveSession;
use coord_core::{CreateMode, Error, Session, SessionState};
use coord_zk::ZkSession;

/// A session behind its own proxy, with a fresh directory to work in.
async fn open_faulty(session_timeout: Duration) -> (FaultProxy, Arc<ZkSession>, Session, String) {
    let direct = common::options_from_env();
    let proxy = FaultProxy::start(direct.hosts()).await;
    let options =
        coord_zk::ZkOptions::new(&proxy.addr().to_string()).with_session_timeout(session_timeout);
    let zk = Arc::new(common::connect(&options).await);
    let session = Session::new(zk.clone());
    let id = uuid::Uuid::new_v4().simple().to_string();
    let dir = format!("/coord-connection-loss/{}", &id[..12]);
    session.ensure_dir(&dir).await.expect("dir");
    (proxy, zk, session, dir)
}

async fn open_through_proxy() -> (FaultProxy, Session, String) {
    let (proxy, _, session, dir) = open_faulty(Duration::from_secs(8)).await;
    (proxy, session, dir)
}

async fn await_state(session: &Session, want: SessionState, what: &str) {
    let mut states = session.state_watch();
    tokio::time::timeout(Duration::from_secs(20), states.wait_for(|s| *s == want))
        .await
        .unwrap_or_else(|_| panic!("{what}: still {:?}", session.state()))
        .expect("state");
}

/// Run `op` with the answer to its (first) request lost: the proxy relays
/// the request, throws the answer away and closes the connection; the
/// client reconnects.
async fn lose_answer<T: Send + 'static>(
    proxy: &FaultProxy,
    op: impl std::future::Future<Output = T> + Send + 'static,
) -> T {
    let lost = proxy.lost_answers();
    proxy.lose_next_answer();
    let result = tokio::time::timeout(Duration::from_secs(30), op)
        .await
        .expect("the operation finishes after the reconnect");
    assert!(proxy.lost_answers() > lost, "no answer was lost");
    result
}

/// While suspended, writes fail at once with `ConnectionLost`; reads wait
/// for the connection to come back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suspended_writes_fail_fast_reads_wait() {
    let (proxy, session, dir) = open_through_proxy().await;
    let path = format!("{dir}/n");
    session
        .create(&path, b"v", CreateMode::Persistent)
        .await
        .expect("create");
    proxy.cut();
    await_state(&session, SessionState::Suspended, "Suspended after the cut").await;
    let started = std::time::Instant::now();
    let set = session.set(&path, b"w", None).await;
    assert!(matches!(set, Err(Error::ConnectionLost(_))), "{set:?}");
    let del = session.delete(&path, None).await;
    assert!(matches!(del, Err(Error::ConnectionLost(_))), "{del:?}");
    let made = session
        .create(&format!("{dir}/m"), b"", CreateMode::Persistent)
        .await;
    assert!(matches!(made, Err(Error::ConnectionLost(_))), "{made:?}");
    assert!(started.elapsed() < Duration::from_secs(1));
    let s = session.clone();
    let p = path.clone();
    let read = tokio::spawn(async move { s.get(&p).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!read.is_finished());
    proxy.heal();
    let node = read.await.expect("join").expect("get").expect("node");
    assert_eq!(node.data, b"v");
    await_state(&session, SessionState::Connected, "Connected again").await;
    session.close().await.expect("close");
}

/// A read whose answer is lost is sent again on the next connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_are_retried() {
    let (proxy, session, dir) = open_through_proxy().await;
    session
        .create(&format!("{dir}/n"), b"v", CreateMode::Persistent)
        .await
        .expect("create");
    let connections = proxy.connections();
    let s = session.clone();
    let path = format!("{dir}/n");
    let got = lose_answer(&proxy, async move { s.get(&path).await }).await;
    assert_eq!(got.expect("get").expect("node").data, b"v");
    let s = session.clone();
    let d = dir.clone();
    let kids = lose_answer(&proxy, async move { s.children(&d).await }).await;
    assert_eq!(kids.expect("children").len(), 1);
    assert!(
        proxy.connections() > connections,
        "the reads were answered without a reconnect"
    );
    session.close().await.expect("close");
}

/// A sequential create without a protected name cannot be found again:
/// its lost answer is `ConnectionLost`, and it is not retried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_unprotected_create_is_not_retried() {
    let (proxy, session, dir) = open_through_proxy().await;
    let s = session.clone();
    let p = format!("{dir}/item-");
    let result = lose_answer(&proxy, async move {
        s.create(&p, b"", CreateMode::PersistentSequential).await
    })
    .await;
    assert!(
        matches!(result, Err(Error::ConnectionLost(_))),
        "{result:?}"
    );
    await_state(&session, SessionState::Connected, "Connected again").await;
    let kids = session.children(&dir).await.expect("children");
    assert_eq!(kids.len(), 1, "{kids:?}");
    session.close().await.expect("close");
}

/// An ephemeral create whose answer is lost is retried and recognised as
/// ours by its owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_ephemeral_create_is_claimed() {
    let (proxy, session, dir) = open_through_proxy().await;
    let s = session.clone();
    let p = format!("{dir}/leader");
    let created = lose_answer(&proxy, async move {
        s.create(&p, b"me", CreateMode::Ephemeral).await
    })
    .await
    .expect("our own ephemeral is ours");
    assert_eq!(created.path, format!("{dir}/leader"));
    session.close().await.expect("close");
}

/// Cut off for longer than the session timeout: the client gives the
/// session up at its lease deadline (`Expired`, its ephemerals no longer
/// counted on), the server ends it by its timeout, and every operation
/// fails with `SessionExpired` from then on, even once the server is
/// reachable again; closing it is `Ok` and it stays `Expired`, on the
/// `Session` and in the backend.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_while_cut_off_is_final() {
    let timeout = Duration::from_secs(2);
    let (proxy, zk, session, dir) = open_faulty(timeout).await;
    let observer = coord_zk::connect(common::options_from_env())
        .await
        .expect("connect");
    let path = format!("{dir}/eph");
    session
        .create(&path, b"", CreateMode::Ephemeral)
        .await
        .expect("create");

    let cut = tokio::time::Instant::now();
    proxy.cut();
    await_state(&session, SessionState::Expired, "the client gives up").await;
    let gave_up = cut.elapsed();
    assert!(
        gave_up < timeout,
        "the client gave the session up {gave_up:?} after the cut, not before the server could"
    );
    tokio::time::timeout(Duration::from_secs(20), observer.wait_gone(&path))
        .await
        .expect("the server ends the session")
        .expect("wait_gone");
    proxy.heal();
    assert!(matches!(
        session.get(&path).await,
        Err(Error::SessionExpired)
    ));
    assert!(matches!(
        session.create(&path, b"", CreateMode::Ephemeral).await,
        Err(Error::SessionExpired)
    ));
    assert!(matches!(session.ended().await, Error::SessionExpired));
    session
        .close()
        .await
        .expect("closing an expired session is Ok");
    assert_eq!(session.state(), SessionState::Expired);
    assert_eq!(
        *PrimitiveSession::state(&*zk).borrow(),
        SessionState::Expired
    );
    observer.close().await.expect("close");
}

/// Answers lost while the server still hears the session (a one-way
/// partition): the client gives the session up at its lease deadline and,
/// once the server is reachable again, closes it there, so its ephemerals
/// go at once rather than a session timeout later. The backend's state is
/// `Expired` (given up), never `Closed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_session_is_closed_on_the_server() {
    let timeout = Duration::from_secs(4);
    let (proxy, zk, session, dir) = open_faulty(timeout).await;
    let observer = coord_zk::connect(common::options_from_env())
        .await
        .expect("connect");
    let path = format!("{dir}/eph");
    session
        .create(&path, b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    proxy.silence();
    await_state(&session, SessionState::Expired, "the client gives up").await;
    // The backend is told right after the `Session` says so.
    let mut backend = PrimitiveSession::state(&*zk);
    tokio::time::timeout(
        Duration::from_secs(1),
        backend.wait_for(|s| *s == SessionState::Expired),
    )
    .await
    .expect("the backend's state is Expired once the session is given up")
    .expect("state");
    assert!(
        observer.exists(&path).await.expect("exists"),
        "the server still hears the session: its ephemeral stays until it is closed"
    );
    let healed = tokio::time::Instant::now();
    proxy.heal();
    tokio::time::timeout(timeout / 2, observer.wait_gone(&path))
        .await
        .expect("the abandoned session is closed on the server once it is reached")
        .expect("wait_gone");
    println!(
        "abandoned session's ephemeral gone {:?} after the heal",
        healed.elapsed()
    );
    session.close().await.expect("close");
    assert_eq!(session.state(), SessionState::Expired);
    assert_eq!(
        *PrimitiveSession::state(&*zk).borrow(),
        SessionState::Expired
    );
    observer.close().await.expect("close");
}

/// An idle session stays alive on the client: the lease pings renew its
/// deadline, and they are not counted as requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_session_keeps_its_lease_uncounted() {
    let (_proxy, zk, session, _dir) = open_faulty(Duration::from_secs(2)).await;
    let before = zk.requests_sent();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(session.state(), SessionState::Connected);
    assert!(session.lease_deadline() > tokio::time::Instant::now());
    assert_eq!(zk.requests_sent(), before, "lease pings were counted");
    session.close().await.expect("close");
    assert_eq!(session.state(), SessionState::Closed);
}

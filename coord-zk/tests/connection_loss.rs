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

/// A proxy in front of the plaintext server that relays every connection
/// until [`HandshakeCut::arm`]; then it closes them, relays the next one
/// only until the server accepted the session (its first answer, the
/// ConnectResponse, is delivered, and the client's next request, the ping
/// it sends once it says `SyncConnected`, has arrived), closes it there,
/// before the handshake is over, and stops listening: every later
/// connection is refused, as by a server that went down.
struct HandshakeCut {
    addr: std::net::SocketAddr,
    armed: Arc<tokio::sync::Notify>,
    kill: tokio::sync::watch::Sender<u64>,
    /// Handshakes cut so far.
    cut: tokio::sync::watch::Receiver<usize>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for HandshakeCut {
    fn drop(&mut self) {
        self.accept.abort();
        self.kill.send_modify(|g| *g += 1);
    }
}

impl HandshakeCut {
    async fn start(upstream: &str) -> HandshakeCut {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let armed = Arc::new(tokio::sync::Notify::new());
        let kill = tokio::sync::watch::Sender::new(0);
        let (cut_tx, cut) = tokio::sync::watch::channel(0);
        let (upstream, arm, k) = (upstream.to_owned(), armed.clone(), kill.clone());
        let accept = tokio::spawn(async move {
            let mut is_armed = std::pin::pin!(arm.notified());
            loop {
                let client = tokio::select! {
                    accepted = listener.accept() => accepted.expect("accept").0,
                    () = &mut is_armed => break,
                };
                let server = tokio::net::TcpStream::connect(&upstream)
                    .await
                    .expect("upstream");
                let mut killed = k.subscribe();
                tokio::spawn(async move {
                    let (mut client, mut server) = (client, server);
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = killed.changed() => {}
                    }
                });
            }
            // Armed: the next connection's handshake is cut, then nothing
            // listens any more.
            let (mut client, _) = listener.accept().await.expect("accept");
            drop(listener);
            let mut server = tokio::net::TcpStream::connect(&upstream)
                .await
                .expect("upstream");
            let mut request = vec![0; 64 * 1024];
            let n = client.read(&mut request).await.expect("the ConnectRequest");
            server.write_all(&request[..n]).await.expect("relay it");
            let len = server.read_u32().await.expect("the ConnectResponse");
            let mut body = vec![0; len as usize];
            server.read_exact(&mut body).await.expect("its body");
            client.write_u32(len).await.expect("relay it");
            client.write_all(&body).await.expect("relay it");
            // The client's ping: it said SyncConnected.
            let n = client.read(&mut request).await.expect("the ping");
            assert!(n > 0, "the client closed instead of pinging");
            drop((client, server));
            cut_tx.send_modify(|c| *c += 1);
        });
        HandshakeCut {
            addr,
            armed,
            kill,
            cut,
            accept,
        }
    }

    fn arm(&self) {
        self.armed.notify_one();
        self.kill.send_modify(|g| *g += 1);
    }
}

/// A connection lost in the handshake, after the server accepted the
/// session (zookeeper-client then says `SyncConnected`) but before the
/// handshake is over, with no server to reach after it: the session stays
/// `Suspended`, never `Connected`, until its lease runs out (`Expired`).
/// The client reports no change then (it tries the next connections,
/// still saying `SyncConnected`); taken at its word, the session would
/// claim a connection it does not have until the lease ran out, and a
/// fault waiting for the loss to be noticed would never end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handshake_cut_after_the_connect_response_is_no_connection() {
    let direct = common::options_from_env();
    let proxy = HandshakeCut::start(direct.hosts()).await;
    let options = coord_zk::ZkOptions::new(&proxy.addr.to_string())
        .with_session_timeout(Duration::from_secs(2));
    let session = Session::new(Arc::new(common::connect(&options).await));
    session.exists("/").await.expect("exists");
    let mut states = session.state_watch();
    states.borrow_and_update();
    proxy.arm();
    let mut seen = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), async {
        while states.changed().await.is_ok() {
            let s = *states.borrow_and_update();
            seen.push(s);
            if s.is_terminal() {
                break;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the session never ended: {seen:?}"));
    assert_eq!(*proxy.cut.borrow(), 1, "no handshake was cut: {seen:?}");
    assert_eq!(
        seen,
        [SessionState::Suspended, SessionState::Expired],
        "connected without a connection"
    );
    let _ = session.close().await;
}

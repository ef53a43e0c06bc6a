//! Connection loss, made on purpose: the session talks to ZooKeeper
//! (`COORD_TEST_ZK`) through a TCP proxy the test can silence and cut.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coord_core::{CreateMode, Error, Session, SessionState};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A loopback proxy to the server. `silence` drops the server's replies
/// (requests still reach it); `cut` closes every open connection; `down`
/// refuses new ones.
struct Proxy {
    addr: String,
    silent: Arc<AtomicBool>,
    down: Arc<AtomicBool>,
    cut: watch::Sender<u64>,
}

impl Proxy {
    async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy addr").to_string();
        let silent = Arc::new(AtomicBool::new(false));
        let down = Arc::new(AtomicBool::new(false));
        let (cut, _) = watch::channel(0u64);
        let proxy = Proxy {
            addr,
            silent: silent.clone(),
            down: down.clone(),
            cut: cut.clone(),
        };
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if down.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    continue;
                };
                let silent = silent.clone();
                let mut cut = cut.subscribe();
                tokio::spawn(async move {
                    let (mut cr, mut cw) = client.into_split();
                    let (mut sr, mut sw) = server.into_split();
                    let up = async {
                        let mut buf = vec![0u8; 64 * 1024];
                        loop {
                            let n = cr.read(&mut buf).await.unwrap_or(0);
                            if n == 0 || sw.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                        }
                    };
                    let down = async {
                        let mut buf = vec![0u8; 64 * 1024];
                        loop {
                            let n = sr.read(&mut buf).await.unwrap_or(0);
                            if n == 0 {
                                break;
                            }
                            if silent.load(Ordering::SeqCst) {
                                continue;
                            }
                            if cw.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                        }
                    };
                    tokio::select! {
                        _ = up => {}
                        _ = down => {}
                        _ = cut.changed() => {}
                    }
                });
            }
        });
        proxy
    }

    fn silence(&self) {
        self.silent.store(true, Ordering::SeqCst);
    }

    fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// Close every connection, and let replies through again.
    fn cut(&self) {
        self.silent.store(false, Ordering::SeqCst);
        self.cut.send_modify(|n| *n += 1);
    }
}

async fn open_through_proxy() -> (Proxy, Session, String) {
    let (proxy, _, session, dir) = open_counted().await;
    (proxy, session, dir)
}

async fn open_counted() -> (Proxy, Arc<coord_zk::ZkSession>, Session, String) {
    let direct = common::options_from_env();
    let proxy = Proxy::start(direct.hosts().to_owned()).await;
    let options = coord_zk::ZkOptions::new(&proxy.addr)
        .expect("proxy connect string")
        .session_timeout(Duration::from_secs(8));
    let zk = Arc::new(common::connect(&options).await);
    let session = Session::new(zk.clone());
    let id = uuid::Uuid::new_v4().simple().to_string();
    let dir = format!("/coord-connection-loss/{}", &id[..12]);
    session.ensure_dir(&dir).await.expect("dir");
    (proxy, zk, session, dir)
}

/// Lose the answer to whatever `op` sends: silence the proxy, start `op`,
/// give the request time to reach the server, then cut the connection.
async fn lose_answer<T: Send + 'static>(
    proxy: &Proxy,
    op: impl std::future::Future<Output = T> + Send + 'static,
) -> T {
    proxy.silence();
    let task = tokio::spawn(op);
    tokio::time::sleep(Duration::from_millis(300)).await;
    proxy.cut();
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("the operation finishes after the reconnect")
        .expect("join")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suspended_then_connected_again() {
    let (proxy, session, _dir) = open_through_proxy().await;
    let mut states = session.state_watch();
    proxy.cut();
    tokio::time::timeout(
        Duration::from_secs(10),
        states.wait_for(|s| *s == SessionState::Suspended),
    )
    .await
    .expect("Suspended after the cut")
    .expect("state");
    tokio::time::timeout(
        Duration::from_secs(10),
        states.wait_for(|s| *s == SessionState::Connected),
    )
    .await
    .expect("Connected again")
    .expect("state");
    session.close().await.expect("close");
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
    proxy.set_down(true);
    proxy.cut();
    let mut states = session.state_watch();
    tokio::time::timeout(
        Duration::from_secs(10),
        states.wait_for(|s| *s == SessionState::Suspended),
    )
    .await
    .expect("Suspended after the cut")
    .expect("state");
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
    proxy.set_down(false);
    let node = read.await.expect("join").expect("get").expect("node");
    assert_eq!(node.data, b"v");
    tokio::time::timeout(
        Duration::from_secs(10),
        states.wait_for(|s| *s == SessionState::Connected),
    )
    .await
    .expect("Connected again")
    .expect("state");
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
    let s = session.clone();
    let path = format!("{dir}/n");
    let got = lose_answer(&proxy, async move { s.get(&path).await }).await;
    assert_eq!(got.expect("get").expect("node").data, b"v");
    let s = session.clone();
    let d = dir.clone();
    let kids = lose_answer(&proxy, async move { s.children(&d).await }).await;
    assert_eq!(kids.expect("children").len(), 1);
    session.close().await.expect("close");
}

/// A protected sequential create whose answer is lost is found again by its
/// prefix, not made twice (seed 000 `findPrefixInChildren`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_protected_create_is_found_not_duplicated() {
    let (proxy, zk, session, dir) = open_counted().await;
    let before = zk.requests_sent();
    let prefix = format!("{dir}/{}", coord_core::recipes::names::protected("lock-"));
    let s = session.clone();
    let p = prefix.clone();
    let created = lose_answer(&proxy, async move {
        s.create(&p, b"", CreateMode::EphemeralSequential).await
    })
    .await
    .expect("the create is found after its answer was lost");
    // create, then getChildren + getData to find it; no second create.
    assert_eq!(zk.requests_sent() - before, 3);
    assert!(created.path.starts_with(&prefix), "{}", created.path);
    assert!(created.sequence.is_some());
    let kids = session.children(&dir).await.expect("children");
    assert_eq!(kids.len(), 1, "made twice: {kids:?}");
    assert_eq!(coord_core::path::name(&created.path), kids[0].name);
    let node = session
        .get(&created.path)
        .await
        .expect("get")
        .expect("node");
    assert_eq!(node.stat.stamp, created.stamp);
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

/// Cut off for longer than the session timeout: the server expires the
/// session (its ephemerals go), the client says `Expired`, and every
/// operation fails with `SessionExpired` from then on, even once the
/// server is reachable again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_while_cut_off_is_final() {
    let direct = common::options_from_env();
    let proxy = Proxy::start(direct.hosts().to_owned()).await;
    let options = coord_zk::ZkOptions::new(&proxy.addr)
        .expect("proxy connect string")
        .session_timeout(Duration::from_secs(2));
    let session = Session::new(Arc::new(common::connect(&options).await));
    let observer = coord_zk::connect(&direct).await.expect("connect");
    let id = uuid::Uuid::new_v4().simple().to_string();
    let path = format!("/coord-connection-loss/expiry-{}", &id[..12]);
    session
        .create(&path, b"", CreateMode::Ephemeral)
        .await
        .expect("create");

    proxy.set_down(true);
    proxy.cut();
    tokio::time::timeout(Duration::from_secs(20), observer.wait_gone(&path))
        .await
        .expect("the server expires the session")
        .expect("wait_gone");
    let mut states = session.state_watch();
    tokio::time::timeout(
        Duration::from_secs(20),
        states.wait_for(|s| *s == SessionState::Expired),
    )
    .await
    .expect("the client learns of the expiry")
    .expect("state");
    proxy.set_down(false);
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
    observer.close().await.expect("close");
}

//! What the conformance suite cannot do to a real server: lose answers and
//! connections. A TCP proxy between one session and etcd cuts a request's
//! answer, or swallows all traffic, while a second session (direct) checks
//! what the server really holds.
//!
//! Needs `COORD_TEST_ETCD` (scripts/test-all sets it).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coord_core::{CreateMode, Error, Session, SessionState};
use coord_etcd::EtcdOptions;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

const WAIT: Duration = Duration::from_secs(30);

fn endpoints() -> String {
    match std::env::var("COORD_TEST_ETCD") {
        Ok(e) if !e.trim().is_empty() => e,
        _ => panic!(
            "COORD_TEST_ETCD is not set: these tests need a running etcd \
             (run scripts/test-all, or set COORD_TEST_ETCD=http://127.0.0.1:<port>)"
        ),
    }
}

/// The first endpoint as host:port, for the proxy to dial.
fn upstream() -> String {
    let first = endpoints()
        .split(',')
        .next()
        .map(str::trim)
        .unwrap_or_default()
        .to_owned();
    first
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .to_owned()
}

fn root(test: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("/coord-faults/{test}-{}", &id[..12])
}

async fn direct() -> Session {
    coord_etcd::connect(EtcdOptions::from_endpoint_list(&endpoints()))
        .await
        .expect("direct session")
}

/// What the proxy does to traffic.
struct Ctl {
    /// The next client → server bytes on any connection are relayed, and
    /// then that connection's answers are swallowed and it is closed.
    cut_next: AtomicBool,
    /// Relay nothing either way.
    blackhole: AtomicBool,
    /// How many connections were cut.
    cuts: AtomicUsize,
    /// Bumped to close every open connection.
    kill: watch::Sender<u64>,
}

struct Proxy {
    addr: SocketAddr,
    ctl: Arc<Ctl>,
}

impl Proxy {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy address");
        let (kill, _) = watch::channel(0);
        let ctl = Arc::new(Ctl {
            cut_next: AtomicBool::new(false),
            blackhole: AtomicBool::new(false),
            cuts: AtomicUsize::new(0),
            kill,
        });
        let upstream = upstream();
        let c = ctl.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    continue;
                };
                tokio::spawn(relay(client, server, c.clone()));
            }
        });
        Proxy { addr, ctl }
    }

    fn options(&self) -> EtcdOptions {
        EtcdOptions::new([format!("http://{}", self.addr)])
    }

    fn kill_all(&self) {
        self.ctl.kill.send_modify(|g| *g += 1);
    }
}

async fn relay(client: TcpStream, server: TcpStream, ctl: Arc<Ctl>) {
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let cut = Arc::new(AtomicBool::new(false));
    let mut killed = ctl.kill.subscribe();
    let up = {
        let (ctl, cut) = (ctl.clone(), cut.clone());
        async move {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = match cr.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                if ctl.blackhole.load(Ordering::SeqCst) {
                    continue;
                }
                if sw.write_all(&buf[..n]).await.is_err() {
                    return;
                }
                if ctl.cut_next.swap(false, Ordering::SeqCst) {
                    ctl.cuts.fetch_add(1, Ordering::SeqCst);
                    cut.store(true, Ordering::SeqCst);
                }
            }
        }
    };
    let down = {
        let (ctl, cut) = (ctl.clone(), cut.clone());
        async move {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = match sr.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                if cut.load(Ordering::SeqCst) || ctl.blackhole.load(Ordering::SeqCst) {
                    continue;
                }
                if cw.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    };
    // A cut connection lives on long enough for the server to apply the
    // request and answer into the void, then closes.
    let cut_then_close = async {
        while !cut.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    tokio::select! {
        () = up => {}
        () = down => {}
        () = cut_then_close => {}
        _ = killed.changed() => {}
    }
}

async fn await_state(session: &Session, want: SessionState) {
    let mut rx = session.state_watch();
    let got = tokio::time::timeout(WAIT, rx.wait_for(|s| *s == want)).await;
    assert!(
        matches!(got, Ok(Ok(_))),
        "session never reached {want:?} (now {:?})",
        session.state()
    );
}

/// A create whose answer is lost is found again, not made twice: the
/// sequential node exists once, at the path the create returned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_create_answer_is_found_not_duplicated() {
    let proxy = Proxy::start().await;
    // A long TTL: no keep-alive crosses the proxy while a request is cut.
    let options = proxy
        .options()
        .ttl(Duration::from_secs(30))
        .request_timeout(Duration::from_secs(2));
    let session = coord_etcd::connect(options)
        .await
        .expect("session via proxy");
    let observer = direct().await;
    let dir = root("lost-create");
    session.ensure_dir(&dir).await.expect("ensure_dir");

    // Sequential, ephemeral: the recipes' case.
    proxy.ctl.cut_next.store(true, Ordering::SeqCst);
    let prefix = format!("{dir}/_c_{}-lock-", uuid::Uuid::new_v4());
    let created = session
        .create(&prefix, b"x", CreateMode::EphemeralSequential)
        .await
        .expect("a create whose answer was lost still succeeds");
    assert_eq!(
        proxy.ctl.cuts.load(Ordering::SeqCst),
        1,
        "no request was cut"
    );
    let kids = observer.children(&dir).await.expect("children");
    assert_eq!(kids.len(), 1, "the create was duplicated: {kids:?}");
    assert_eq!(format!("{dir}/{}", kids[0].name), created.path);
    assert_eq!(kids[0].sequence, created.sequence);
    let node = observer
        .get(&created.path)
        .await
        .expect("get")
        .expect("node");
    assert_eq!(node.stat.stamp, created.stamp);
    assert!(node.stat.ephemeral);

    // Ephemeral, not sequential: recognised by our lease.
    proxy.ctl.cut_next.store(true, Ordering::SeqCst);
    let eph = format!("{dir}/member");
    let created = session
        .create(&eph, b"y", CreateMode::Ephemeral)
        .await
        .expect("an ephemeral create whose answer was lost still succeeds");
    assert_eq!(created.path, eph);
    assert_eq!(proxy.ctl.cuts.load(Ordering::SeqCst), 2);

    // Persistent, not sequential: whose node it is cannot be known, so the
    // answer is success or ConnectionLost, never a false AlreadyExists.
    proxy.ctl.cut_next.store(true, Ordering::SeqCst);
    let pers = format!("{dir}/config");
    match session.create(&pers, b"z", CreateMode::Persistent).await {
        Ok(c) => assert_eq!(c.path, pers),
        Err(Error::ConnectionLost(_)) => {}
        Err(e) => panic!("unexpected error for a lost persistent create: {e}"),
    }
    assert!(observer.exists(&pers).await.expect("exists"));
    assert_eq!(observer.children(&dir).await.expect("children").len(), 3);

    observer.delete(&pers, None).await.expect("cleanup");
    session.close().await.expect("close");
    observer.close().await.expect("close");
}

/// Keep-alives that fail suspend the session; one that succeeds within the
/// TTL brings it back, ephemeral nodes intact; and a watch whose connection
/// broke meanwhile still sees the change made during the outage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outage_shorter_than_ttl_suspends_then_reconnects() {
    let proxy = Proxy::start().await;
    let options = proxy
        .options()
        .ttl(Duration::from_secs(9))
        .request_timeout(Duration::from_secs(1));
    let session = coord_etcd::connect(options)
        .await
        .expect("session via proxy");
    let observer = direct().await;
    let dir = root("outage");
    let mine = session
        .create(&format!("{dir}/mine"), b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    let theirs = observer
        .create(&format!("{dir}/theirs"), b"", CreateMode::Persistent)
        .await
        .expect("create");
    let gone = {
        let session = session.clone();
        let path = theirs.path.clone();
        tokio::spawn(async move { session.wait_gone(&path).await })
    };
    // Let the watch open before the outage.
    tokio::time::sleep(Duration::from_millis(500)).await;

    proxy.ctl.blackhole.store(true, Ordering::SeqCst);
    await_state(&session, SessionState::Suspended).await;
    observer
        .delete(&theirs.path, None)
        .await
        .expect("delete during the outage");
    assert!(
        matches!(session.get(&mine.path).await, Err(Error::ConnectionLost(_))),
        "a read while suspended is ConnectionLost"
    );
    proxy.ctl.blackhole.store(false, Ordering::SeqCst);
    proxy.kill_all();

    await_state(&session, SessionState::Connected).await;
    tokio::time::timeout(WAIT, gone)
        .await
        .expect("wait_gone missed a delete made during the outage")
        .expect("join")
        .expect("wait_gone");
    assert!(
        observer.exists(&mine.path).await.expect("exists"),
        "ephemeral lost"
    );
    session.close().await.expect("close");
    assert!(!observer.exists(&mine.path).await.expect("exists"));
    observer.close().await.expect("close");
}

/// Keep-alives failing for a whole TTL expire the session: final, and every
/// operation then says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outage_longer_than_ttl_expires() {
    let proxy = Proxy::start().await;
    let options = proxy
        .options()
        .ttl(Duration::from_secs(3))
        .request_timeout(Duration::from_secs(1));
    let session = coord_etcd::connect(options)
        .await
        .expect("session via proxy");
    let observer = direct().await;
    let dir = root("expire");
    let mine = session
        .create(&format!("{dir}/mine"), b"", CreateMode::Ephemeral)
        .await
        .expect("create");

    proxy.ctl.blackhole.store(true, Ordering::SeqCst);
    await_state(&session, SessionState::Expired).await;
    proxy.ctl.blackhole.store(false, Ordering::SeqCst);
    proxy.kill_all();
    assert!(matches!(
        session
            .create(&format!("{dir}/x"), b"", CreateMode::Persistent)
            .await,
        Err(Error::SessionExpired)
    ));
    // The server let the lease run out too.
    observer
        .wait_gone(&mine.path)
        .await
        .expect("ephemeral node reaped");
    assert_eq!(session.state(), SessionState::Expired);
    session
        .close()
        .await
        .expect("closing an expired session is Ok");
    observer.close().await.expect("close");
}

/// With several endpoints, one that is down does not stop the session: the
/// client balances over the members that answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_endpoint_among_several_is_skipped() {
    // A port nothing listens on: bind, note it, close.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("address")
    };
    let mut list = vec![format!("http://{dead}")];
    list.extend(
        EtcdOptions::from_endpoint_list(&endpoints())
            .endpoints()
            .iter()
            .cloned(),
    );
    let options = EtcdOptions::new(list)
        .ttl(Duration::from_secs(3))
        .request_timeout(Duration::from_secs(3));
    let session = coord_etcd::connect(options)
        .await
        .expect("session with a dead endpoint listed first");
    // Keep-alives (every second) never suspend the session either.
    let mut states = session.state_watch();
    let suspended = tokio::spawn(async move {
        tokio::time::timeout(
            Duration::from_millis(3500),
            states.wait_for(|s| *s != SessionState::Connected),
        )
        .await
        .is_ok()
    });
    let dir = root("dead-endpoint");
    for i in 0..10 {
        session
            .create(&format!("{dir}/n{i}"), b"", CreateMode::Ephemeral)
            .await
            .expect("create");
    }
    assert_eq!(session.children(&dir).await.expect("children").len(), 10);
    assert!(
        !suspended.await.expect("join"),
        "the session left Connected: {:?}",
        session.state()
    );
    session.close().await.expect("close");
}

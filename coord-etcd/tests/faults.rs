//! etcd-specific faults the conformance suite's `fault_*` tests do not
//! cover (those run on every backend: lost answers, short and long
//! outages, partitions, one-way silence). Where a test needs to break one
//! session's connection it uses the suite's shared
//! [`coord_conformance::fault::FaultProxy`]; a second session (direct)
//! checks what the server really holds.
//!
//! Needs `COORD_TEST_ETCD` (scripts/test-all sets it).

mod common;

use std::time::Duration;

use common::endpoints;
use coord_conformance::fault::{Fault, FaultProxy};
use coord_core::{CreateMode, Error, Session, SessionState};
use coord_etcd::EtcdOptions;

const WAIT: Duration = Duration::from_secs(30);

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
        .trim_end_matches('/')
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

async fn data(session: &Session, path: &str) -> Vec<u8> {
    session
        .get(path)
        .await
        .expect("get")
        .expect("the node")
        .data
}

/// A session through a fresh fault proxy: 9 s session, 1 s requests.
async fn behind_proxy() -> (FaultProxy, Session) {
    let proxy = FaultProxy::start(&upstream()).await;
    let options = EtcdOptions::new([format!("http://{}", proxy.addr())])
        .with_session_timeout(Duration::from_secs(9))
        .with_request_timeout(Duration::from_secs(1));
    let session = coord_etcd::connect(options)
        .await
        .expect("session via proxy");
    (proxy, session)
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

/// The shared fault proxy does to etcd's HTTP/2 connection what the
/// conformance suite assumes. A partition stalls requests both ways (they
/// fail by the request timeout, nothing reaches the server) and keeps the
/// connection: after the heal the same connection carries on. Silence lets
/// requests reach the server and loses their answers; the heal closes that
/// connection and the client opens another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fault_proxy_partitions_and_silences_http2() {
    let proxy = FaultProxy::start(&upstream()).await;
    let timeout = Duration::from_secs(1);
    let options = EtcdOptions::new([format!("http://{}", proxy.addr())])
        .with_session_timeout(Duration::from_secs(30))
        .with_request_timeout(timeout);
    let session = coord_etcd::connect(options)
        .await
        .expect("session via proxy");
    let observer = direct().await;
    let dir = root("proxy-modes");
    session.ensure_dir(&dir).await.expect("ensure_dir");
    let connections = proxy.connections();
    assert!(connections >= 1, "no connection crossed the proxy");

    proxy.partition();
    let started = tokio::time::Instant::now();
    let stalled = session.get(&dir).await;
    assert!(
        matches!(stalled, Err(Error::ConnectionLost(_))),
        "a read during a partition: {stalled:?}"
    );
    assert!(
        started.elapsed() >= timeout,
        "a partitioned request failed after {:?}, before its timeout: the connection was not stalled",
        started.elapsed()
    );
    // A write (a set is sent once) does not cross it either.
    let set = session.set(&dir, b"partition", None).await;
    assert!(
        matches!(set, Err(Error::ConnectionLost(_))),
        "a write during a partition: {set:?}"
    );
    assert_eq!(
        data(&observer, &dir).await,
        b"",
        "a request crossed the partition"
    );
    proxy.heal();
    session
        .get(&dir)
        .await
        .expect("a read after the partition healed");
    assert_eq!(
        proxy.connections(),
        connections,
        "the partition did not keep the connection"
    );

    proxy.silence();
    let set = session.set(&dir, b"silence", None).await;
    assert!(
        matches!(set, Err(Error::ConnectionLost(_))),
        "a write during silence: {set:?}"
    );
    assert_eq!(
        data(&observer, &dir).await,
        b"silence",
        "a request sent during silence did not reach the server"
    );
    proxy.heal();
    session
        .get(&dir)
        .await
        .expect("a read after the silence healed");
    assert!(
        proxy.connections() > connections,
        "the heal after silence did not replace the connection"
    );
    assert_eq!(session.state(), SessionState::Connected);
    session.close().await.expect("close");
    observer.delete(&dir, None).await.expect("cleanup");
    observer.close().await.expect("close");
}

/// A watch whose stream broke with its connection is opened again from the
/// revision it had reached: a delete made while the connection was cut is
/// seen once it is back (etcd replays it), neither missed nor needing a
/// read of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_broken_by_a_cut_sees_the_delete_made_meanwhile() {
    let (proxy, session) = behind_proxy().await;
    let observer = direct().await;
    let dir = root("watch-cut");
    let mine = session
        .create(&format!("{dir}/mine"), b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    let theirs = observer
        .create(&format!("{dir}/theirs"), b"", CreateMode::Persistent)
        .await
        .expect("create");
    let gone = session
        .watch_gone(&theirs.path)
        .await
        .expect("watch_gone")
        .expect("the node exists");
    let gone = tokio::spawn(gone);
    // Let the watch stream open before the cut.
    tokio::time::sleep(Duration::from_millis(500)).await;

    proxy.cut();
    await_state(&session, SessionState::Suspended).await;
    observer
        .delete(&theirs.path, None)
        .await
        .expect("delete during the outage");
    assert!(
        matches!(session.get(&mine.path).await, Err(Error::ConnectionLost(_))),
        "a read while the connection is cut is ConnectionLost"
    );
    proxy.heal();

    await_state(&session, SessionState::Connected).await;
    tokio::time::timeout(WAIT, gone)
        .await
        .expect("the watch missed a delete made during the outage")
        .expect("join")
        .expect("wait_gone");
    assert!(
        observer.exists(&mine.path).await.expect("exists"),
        "ephemeral lost to an outage shorter than the TTL"
    );
    session.close().await.expect("close");
    assert!(!observer.exists(&mine.path).await.expect("exists"));
    observer.close().await.expect("close");
}

async fn next_change(w: &mut coord_core::TreeWatch) -> coord_core::TreeChange {
    tokio::time::timeout(WAIT, w.next())
        .await
        .expect("a tree change within 30 s")
        .expect("the tree watch has not ended")
        .expect("the tree watch runs")
}

/// A tree watch whose stream is broken while etcd compacts past the last
/// revision it delivered cannot replay what it missed: it says so with
/// `Resync` (the caller reads everything again) and goes on reporting
/// changes. Broken without a compaction, it replays from where it stopped
/// (the conformance suite's `cache_converges_after_cut`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_watch_compacted_past_resyncs() {
    use coord_core::TreeChange;
    let (proxy, session) = behind_proxy().await;
    let observer = direct().await;
    let dir = root("tree-compacted");
    let mut w = session.watch_tree(&dir).await.expect("watch_tree");
    let a = format!("{dir}/a");
    observer
        .create(&a, b"0", CreateMode::Persistent)
        .await
        .expect("create");
    // The parent first (made by the create), then the node.
    assert_eq!(next_change(&mut w).await, TreeChange::Changed(dir.clone()));
    assert_eq!(next_change(&mut w).await, TreeChange::Changed(a.clone()));

    proxy.cut();
    await_state(&session, SessionState::Suspended).await;
    observer.set(&a, b"1", None).await.expect("set");
    observer.set(&a, b"2", None).await.expect("set");
    let mut raw = etcd_client::Client::connect([endpoints()], None)
        .await
        .expect("raw etcd client");
    let rev = raw
        .get("compact-probe", None)
        .await
        .expect("get")
        .header()
        .expect("header")
        .revision();
    raw.compact(rev, None).await.expect("compact");
    proxy.heal();

    assert_eq!(
        next_change(&mut w).await,
        TreeChange::Resync,
        "the changes lost to the compaction were not flagged"
    );
    let b = format!("{dir}/b");
    observer
        .create(&b, b"", CreateMode::Persistent)
        .await
        .expect("create");
    loop {
        match next_change(&mut w).await {
            TreeChange::Changed(p) if p == b => break,
            TreeChange::Changed(p) => assert_eq!(p, a, "only a's last set may repeat"),
            other => panic!("unexpected {other:?}"),
        }
    }
    session.close().await.expect("close");
    observer.close().await.expect("close");
}

/// A session given up on the client (no keep-alive answered before the
/// lease deadline) revokes its lease once a member answers: the server
/// does not keep it (and its keys) for a TTL more. A one-way silence keeps
/// the server hearing the keep-alives meanwhile, so only the revoke can
/// end the lease this early.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_given_up_revokes_its_lease() {
    let proxy = FaultProxy::start(&upstream()).await;
    let ttl = Duration::from_secs(4);
    let options = EtcdOptions::new([format!("http://{}", proxy.addr())])
        .with_session_timeout(ttl)
        .with_request_timeout(Duration::from_secs(1));
    let session = coord_etcd::connect(options)
        .await
        .expect("session via proxy");
    let lease = coord_etcd::lease_id(&session.id()).expect("lease id");
    let observer = direct().await;
    let path = format!("{}/mine", root("given-up"));
    session
        .create(&path, b"", CreateMode::Ephemeral)
        .await
        .expect("create");

    proxy.silence();
    let silenced = tokio::time::Instant::now();
    assert!(matches!(
        tokio::time::timeout(WAIT, session.ended()).await,
        Ok(Error::SessionExpired)
    ));
    let detect = silenced.elapsed();
    assert!(
        detect < ttl,
        "the session was given up {detect:?} after the silence began: not before the server could drop it"
    );
    proxy.heal();
    let healed = tokio::time::Instant::now();
    tokio::time::timeout(WAIT, observer.wait_gone(&path))
        .await
        .expect("the ephemeral node outlived the session")
        .expect("wait_gone");
    assert!(
        healed.elapsed() < ttl / 2,
        "the node went {:?} after the heal: the lease was not revoked",
        healed.elapsed()
    );
    let mut raw = etcd_client::Client::connect(
        EtcdOptions::from_endpoint_list(&endpoints()).endpoints(),
        None,
    )
    .await
    .expect("raw client");
    let left = raw
        .lease_time_to_live(lease, None)
        .await
        .expect("time to live");
    assert_eq!(left.ttl(), -1, "the lease outlived the session given up");
    assert_eq!(session.state(), SessionState::Expired);
    session
        .close()
        .await
        .expect("closing an expired session is Ok");
    assert_eq!(session.state(), SessionState::Expired);
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
        .with_session_timeout(Duration::from_secs(3))
        .with_request_timeout(Duration::from_secs(3));
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

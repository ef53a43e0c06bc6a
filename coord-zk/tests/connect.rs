//! Connecting: several hosts, a chroot, an unreachable ensemble
//! (`COORD_TEST_ZK`).

mod common;

use std::sync::Arc;
use std::time::Duration;

use coord_core::{CreateMode, Error, Session, SessionState};
use coord_zk::ZkOptions;

fn unique(name: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("{name}-{}", &id[..12])
}

/// A chroot roots every path of the session; it is made when missing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chroot_roots_every_path() {
    let direct = common::options_from_env();
    let chroot = format!("/coord-chroot/{}", unique("app"));
    let rooted = ZkOptions::new(&format!("{}{chroot}", direct.hosts()));
    assert_eq!(rooted.chroot(), Some(chroot.as_str()));
    let inside = coord_zk::connect(rooted.clone())
        .await
        .expect("connect with a chroot");
    let outside = coord_zk::connect(direct.clone()).await.expect("connect");

    let made = inside
        .create("/jobs/a", b"x", CreateMode::Persistent)
        .await
        .expect("create under the chroot");
    assert_eq!(made.path, "/jobs/a");
    let seen = outside
        .get(&format!("{chroot}/jobs/a"))
        .await
        .expect("get")
        .expect("the node lives under the chroot");
    assert_eq!(seen.data, b"x");
    let kids = inside.children("/").await.expect("children of the chroot");
    assert_eq!(kids.len(), 1);
    assert_eq!(kids[0].name, "jobs");
    let seq = inside
        .create(
            "/jobs/_c_7b0d8c1e-4f8a-4c3e-9a55-0c1b2d3e4f50-lock-",
            b"",
            CreateMode::EphemeralSequential,
        )
        .await
        .expect("sequential create under the chroot");
    assert!(seq.path.starts_with("/jobs/_c_"), "{}", seq.path);
    assert!(seq.sequence.is_some());

    inside.close().await.expect("close");
    outside.close().await.expect("close");
}

/// Hosts that do not answer are skipped for one that does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_hosts() {
    let direct = common::options_from_env();
    // Port 1 on loopback refuses connections.
    let options = ZkOptions::new(&format!("127.0.0.1:1,{},127.0.0.1:1", direct.hosts()))
        .with_session_timeout(Duration::from_secs(4));
    let session = coord_zk::connect(options.clone())
        .await
        .expect("connect through the live host");
    assert_eq!(session.state(), SessionState::Connected);
    assert!(session.exists("/").await.expect("exists"));
    session.close().await.expect("close");
    assert_eq!(session.state(), SessionState::Closed);
    assert!(matches!(session.get("/").await, Err(Error::SessionClosed)));
}

/// No live host: `ConnectionLost` after about the session timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_ensemble() {
    let options = ZkOptions::new("127.0.0.1:1").with_session_timeout(Duration::from_secs(1));
    let started = std::time::Instant::now();
    let result = tokio::time::timeout(Duration::from_secs(30), coord_zk::connect(options.clone()))
        .await
        .expect("connect gives up");
    assert!(
        matches!(result, Err(Error::ConnectionLost(_))),
        "{result:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
}

/// Dropping every handle closes the session: its ephemerals go at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_session_closes_it() {
    let direct = common::options_from_env();
    let watcher: Session = coord_zk::connect(direct.clone()).await.expect("connect");
    let owner = Session::new(Arc::new(common::connect(&direct).await));
    let path = format!("/coord-drop/{}", unique("eph"));
    owner
        .create(&path, b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    drop(owner);
    tokio::time::timeout(Duration::from_secs(3), watcher.wait_gone(&path))
        .await
        .expect("the ephemeral goes well before the session timeout")
        .expect("wait_gone");
    watcher.close().await.expect("close");
}

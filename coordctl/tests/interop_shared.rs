//! Curator 5.4's `SharedCount` and coord's `SharedCount` on one ZooKeeper
//! node (COORD_TEST_ZK): each reads the other's writes, byte for byte and
//! version for version, and adds from both sides at once all count (both
//! compare-and-set on the node's version). The Curator side is
//! tests/interop/SharedCountPeer.java (Debian's libcurator-recipes-java),
//! compiled here with javac beside Peers.java (its watchdog); a missing JDK or jar fails the test and says
//! how to install it (scripts/test-all does).

mod common;

use std::sync::OnceLock;
use std::time::Duration;

use common::unique;
use coordination::{SharedCount, Versioned};

const PEER_JAVA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/interop/SharedCountPeer.java"
);
/// Compiled with it: its watchdog (a peer exits once the test is gone).
const PEERS_JAVA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/Peers.java");
const INSTALL: &str = "scripts/test-all installs the peers (see scripts/servers/zk.sh): \
    apt-get install default-jdk-headless libcurator-recipes-java";
/// Adds on each side in [`zk_shared_count_coord_and_curator`].
const ADDS: i32 = 20;

fn zk_hosts() -> String {
    common::server_url("COORD_TEST_ZK", str::to_owned)
}

/// The class path of the compiled peer, compiled once per test run.
fn classpath() -> &'static str {
    static CP: OnceLock<String> = OnceLock::new();
    CP.get_or_init(|| {
        common::javac(
            "interop-shared-java",
            &["curator-recipes"],
            &[PEER_JAVA, PEERS_JAVA],
            INSTALL,
        )
    })
}

/// Run the Curator peer on `path` with `args`; its one line of output.
/// Panics when it fails (it gives up by itself after 60 s, or once this
/// process is gone).
async fn curator(path: &str, args: &[&str]) -> String {
    let out = tokio::process::Command::new("java")
        .args(["-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
        .args(["-cp", classpath(), "SharedCountPeer", &zk_hosts(), path])
        .args(args)
        .kill_on_drop(true)
        .output()
        .await
        .unwrap_or_else(|e| panic!("java: {e}. {INSTALL}"));
    assert!(
        out.status.success(),
        "Curator peer {args:?}: {} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_shared_count_coord_and_curator() {
    let path = unique("shared-count");
    let session = coordination::connect(&format!("zk://{}", zk_hosts()))
        .await
        .expect("connect");
    let count = SharedCount::new(&session, &path).expect("count");

    // Curator writes, coord reads: the value, and Curator's 4 bytes.
    assert_eq!(curator(&path, &["set", "41"]).await, "set 41");
    let read = count.get().await.expect("get");
    assert_eq!(read.value, 41);
    let raw = session.get(&path).await.expect("get").expect("node");
    assert_eq!(raw.data, [0, 0, 0, 41]);

    // coord writes, Curator reads it, at the same version.
    let version = count.set(-7).await.expect("set");
    assert_eq!(
        curator(&path, &["get"]).await,
        format!("count -7 version {version}")
    );

    // A Curator listener sees coord's write (or its first read does, if
    // the write comes first); a coord watcher sees Curator's.
    let awaiting = tokio::spawn({
        let path = path.clone();
        async move { curator(&path, &["await", "1000"]).await }
    });
    let mut watcher = count.watch();
    let first = watcher.next().await.expect("not ended").expect("next");
    assert_eq!(first.map(|v| v.value), Some(-7));
    count.set(1000).await.expect("set");
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(60), awaiting)
            .await
            .expect("the Curator listener in time")
            .expect("task"),
        "saw 1000"
    );
    let curator_set = tokio::spawn({
        let path = path.clone();
        async move { curator(&path, &["set", "0"]).await }
    });
    let mut last = None;
    while last != Some(0) {
        last = tokio::time::timeout(Duration::from_secs(60), watcher.next())
            .await
            .expect("Curator's set seen in time")
            .expect("not ended")
            .expect("next")
            .map(|v| v.value);
    }
    assert_eq!(curator_set.await.expect("task"), "set 0");

    // Both sides add at once, each by compare-and-set on the version: no
    // add is lost.
    let curator_adds = tokio::spawn({
        let path = path.clone();
        async move { curator(&path, &["add", &ADDS.to_string()]).await }
    });
    for _ in 0..ADDS {
        count.add(1).await.expect("add");
    }
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(60), curator_adds)
            .await
            .expect("Curator's adds in time")
            .expect("task"),
        format!("added {ADDS}")
    );
    let now = count.get().await.expect("get");
    assert_eq!(now.value, 2 * ADDS, "an add was lost");
    let Versioned { value, version } = now;
    assert_eq!(
        curator(&path, &["get"]).await,
        format!("count {value} version {version}")
    );
    let _ = session.close().await;
}

//! The peers the interop storms run beside coordctl: where the servers
//! are, and how to check for (and compile) Curator, kazoo and etcdctl.

use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use crate::common::server_url;

pub(crate) const PEERS_PY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/peers.py");
pub(crate) const PEERS_JAVA: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/Peers.java");
/// Session timeout of every participant (the ZooKeeper server allows
/// 1 s .. 10 s): a killed holder's hold ends soon.
pub(crate) const SESSION: &str = "2s";
/// How long each storm runs at least ...
pub(crate) const STORM: Duration = Duration::from_secs(15);
/// ... and at most: past [`STORM`] it goes on until every implementation
/// has held [`MIN_HOLDS`] times and a holder has been killed.
pub(crate) const STORM_MAX: Duration = Duration::from_secs(30);
/// The first part of a storm, without kills: the participants all run, so
/// whatever overlap they can have shows (the controls find theirs here).
pub(crate) const CALM: Duration = Duration::from_secs(4);
/// The key of [`Storm::holds`] that counts holds shared with another
/// implementation (a holder that saw another implementation's marker).
pub(crate) const ACROSS: &str = "across";
/// Holds each implementation (and kind, where the test says) must have had.
pub(crate) const MIN_HOLDS: usize = 2;
/// Participants give up by themselves this long after their storm's end,
/// should this test be killed before it can stop them.
pub(crate) const LEFTOVER: Duration = Duration::from_secs(60);

pub(crate) const INSTALL: &str =
    "scripts/test-all installs the peers (see scripts/servers/zk.sh): \
    apt-get install default-jdk-headless libcurator-recipes-java etcd-client; \
    python3 -m pip install kazoo";

// ---------------------------------------------------------------- peers

pub(crate) fn zk_hosts() -> String {
    server_url("COORD_TEST_ZK", str::to_owned)
}

pub(crate) fn zk_url() -> String {
    format!("zk://{}", zk_hosts())
}

pub(crate) fn etcd_endpoints() -> String {
    server_url("COORD_TEST_ETCD", str::to_owned)
}

pub(crate) fn etcd_url() -> String {
    format!("etcd://{}", etcd_endpoints().trim_start_matches("http://"))
}

/// Runs `cmd` to completion; false if it cannot start or fails.
pub(crate) fn works(cmd: &mut Command) -> bool {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The class path of the compiled Peers.java, compiled once per test run.
pub(crate) fn curator_classpath() -> &'static str {
    static CP: OnceLock<String> = OnceLock::new();
    CP.get_or_init(|| {
        crate::common::javac(
            "interop-peers-java",
            &[
                "curator-recipes",
                "curator-framework",
                "curator-client",
                "zookeeper",
                "guava",
                "slf4j-api",
            ],
            &[PEERS_JAVA],
            INSTALL,
        )
    })
}

pub(crate) fn require_kazoo() {
    assert!(
        works(Command::new("python3").args(["-c", "import kazoo"])),
        "python3 cannot import kazoo: {INSTALL}"
    );
}

pub(crate) fn require_etcdctl() {
    assert!(
        works(Command::new("etcdctl").arg("version")),
        "`etcdctl version` failed: {INSTALL}"
    );
}

//! The peers the interop storms run beside coordctl: where the servers
//! are, and how to check for (and compile) Curator, kazoo and etcdctl.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use crate::common::server_url;

pub(crate) const PEERS_PY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/peers.py");
pub(crate) const PEERS_JAVA: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/Peers.java");
/// Where Debian puts the Curator jars (their manifests name their own
/// dependencies: curator-framework, curator-client, zookeeper, guava, slf4j).
pub(crate) const JARS: &str = "/usr/share/java";
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
        for tool in ["java", "javac"] {
            assert!(
                works(Command::new(tool).arg("-version")),
                "`{tool} -version` failed: the Curator interop tests need a JDK. {INSTALL}"
            );
        }
        for jar in [
            "curator-recipes",
            "curator-framework",
            "curator-client",
            "zookeeper",
            "guava",
            "slf4j-api",
        ] {
            let p = Path::new(JARS).join(format!("{jar}.jar"));
            assert!(p.exists(), "{} is missing: {INSTALL}", p.display());
        }
        // Under the target directory, a fresh directory per run; those of
        // runs long over are removed.
        let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("interop-peers-java");
        if let Ok(old) = std::fs::read_dir(&base) {
            for d in old.filter_map(|e| e.ok()) {
                let stale = d
                    .metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| t.elapsed().unwrap_or_default() > Duration::from_secs(3600));
                if stale {
                    let _ = std::fs::remove_dir_all(d.path());
                }
            }
        }
        let out = base.join(uuid::Uuid::new_v4().simple().to_string());
        std::fs::create_dir_all(&out).unwrap_or_else(|e| panic!("mkdir {}: {e}", out.display()));
        let recipes = format!("{JARS}/curator-recipes.jar");
        let o = Command::new("javac")
            .args(["-nowarn", "-d"])
            .arg(&out)
            .args(["-cp", &recipes, PEERS_JAVA])
            .output()
            .unwrap_or_else(|e| panic!("javac: {e}. {INSTALL}"));
        assert!(
            o.status.success(),
            "javac {PEERS_JAVA} failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        // slf4j-nop (from libslf4j-java, which Curator depends on) keeps
        // the JVMs quiet; without it slf4j only warns.
        format!("{}:{recipes}:{JARS}/slf4j-nop.jar", out.display())
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

//! Service discovery across coord and Apache Curator's own x-discovery
//! (5.4, Debian's libcurator-discovery-java, driven by
//! tests/interop/Discovery.java, compiled here with javac) on the real
//! ZooKeeper (COORD_TEST_ZK). A missing JDK or jar fails the test and says
//! how to install it (scripts/test-all does).
//!
//! - [`zk_discovery_coordctl_and_curator_see_each_other`]: an instance
//!   registered by `coordctl discover register` and one registered by a
//!   Curator `ServiceDiscovery` under one base path: Curator's
//!   `queryForInstances` sees coordctl's with its address, port and
//!   payload; `coordctl discover list` sees Curator's; the node Curator
//!   wrote is, byte for byte, what coord writes for the same instance
//!   (read by [`ServiceInstance::from_json`], written by `to_json`); a
//!   Curator `ServiceProvider` (round robin) picks each of two coordctl
//!   instances.
//! - [`zk_discovery_killed_instances_disappear_from_both`]: a coordctl and
//!   a Curator registration, both on 2 s sessions, killed with SIGKILL:
//!   each is gone from a Curator `ServiceCache` and from a coord
//!   `ServiceCache` within the session timeout plus 2 s (the server's
//!   expiry tick, slack for a loaded machine); the times are printed
//!   (`discovery kill figures`: 2.07 s and 2.09 s on the dev machine).

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{coordctl, run, server_url, stdout, Running};
use coordination::{ServiceCache, ServiceCacheEvent, ServiceInstance};

const DISCOVERY_JAVA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/Discovery.java");
/// Compiled with it: its watchdog (a peer exits once the test is gone).
const PEERS_JAVA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/Peers.java");
/// Every participant's session timeout.
const SESSION: Duration = Duration::from_secs(2);
const INSTALL: &str = "scripts/test-all installs the peers (see scripts/servers/zk.sh): \
    apt-get install default-jdk-headless libcurator-recipes-java libcurator-discovery-java";

fn zk_hosts() -> String {
    server_url("COORD_TEST_ZK", str::to_owned)
}

fn zk_url() -> String {
    format!("zk://{}", zk_hosts())
}

/// The class path of the compiled Discovery.java, compiled once per run.
fn classpath() -> &'static str {
    static CP: OnceLock<String> = OnceLock::new();
    CP.get_or_init(|| {
        common::javac(
            "interop-discovery-java",
            &["curator-x-discovery", "curator-recipes"],
            &[DISCOVERY_JAVA, PEERS_JAVA],
            INSTALL,
        )
    })
}

/// `java Discovery ROLE CONNECT BASE NAME ARGS…`.
fn curator(role: &str, base: &str, name: &str, args: &[&str]) -> Command {
    let mut c = Command::new("java");
    c.args([
        "-cp",
        classpath(),
        "Discovery",
        role,
        &zk_hosts(),
        base,
        name,
    ])
    .args(args)
    .stdin(Stdio::null())
    .stderr(Stdio::inherit());
    c
}

/// `coordctl discover register` on a 2 s session, started; its
/// `registered ID` line read.
fn coordctl_register(base: &str, name: &str, id: &str, port: &str, payload: &str) -> Running {
    let mut c = coordctl(
        &zk_url(),
        &[
            "--session-timeout",
            "2s",
            "discover",
            "register",
            name,
            "--address",
            "127.0.0.1",
            "--port",
            port,
            "--payload",
            payload,
            "--id",
            id,
            "--base",
            base,
        ],
    );
    c.stdin(Stdio::null()).stderr(Stdio::inherit());
    let r = Running::start(c);
    assert_eq!(r.line(30), format!("registered {id}"));
    r
}

/// A started process whose stdout lines arrive, with when they did, in a
/// channel; killed on drop.
struct Lines {
    child: Child,
    rx: mpsc::Receiver<(Instant, String)>,
}

impl Lines {
    fn start(mut cmd: Command) -> Self {
        let mut child = cmd
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawning {cmd:?}: {e}. {INSTALL}"));
        let out = child.stdout.take().expect("stdout pipe");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { return };
                if tx.send((Instant::now(), line)).is_err() {
                    return;
                }
            }
        });
        Lines { child, rx }
    }

    /// The first line (within `secs`) for which `ok` holds, and when it
    /// was printed.
    fn until(&self, secs: u64, what: &str, ok: impl Fn(&str) -> bool) -> Instant {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok((at, line)) if ok(&line) => return at,
                Ok(_) => {}
                Err(e) => panic!("{what}: not within {secs}s ({e})"),
            }
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Run a Curator role to its end; its stdout lines.
fn curator_output(role: &str, base: &str, name: &str, args: &[&str]) -> Vec<String> {
    let o = run(curator(role, base, name, args), 60);
    assert!(o.status.success(), "Discovery {role}: {o:?}");
    stdout(&o).lines().map(str::to_owned).collect()
}

/// The node at `path`, read with the coord library.
fn node(path: &str) -> Vec<u8> {
    common::with_session(&zk_url(), async |s| {
        s.get(path)
            .await
            .unwrap_or_else(|e| panic!("get {path}: {e}"))
            .unwrap_or_else(|| panic!("no node at {path}"))
            .data
    })
}

#[test]
fn zk_discovery_coordctl_and_curator_see_each_other() {
    let base = common::unique("discovery");
    let mut ours = coordctl_register(&base, "api", "coord-1", "8081", r#"{"zone":"eu-1"}"#);
    let mut theirs = Lines::start(curator(
        "register",
        &base,
        "api",
        &["cur-1", "127.0.0.2", "9001"],
    ));
    theirs.until(60, "Curator registers", |l| l == "registered cur-1");

    // Curator sees coordctl's instance: address, port, payload.
    let seen = curator_output("query", &base, "api", &[]);
    assert_eq!(
        seen,
        [
            r#"instance coord-1 127.0.0.1 8081 {"zone":"eu-1"}"#,
            r#"instance cur-1 127.0.0.2 9001 {"zone":"curator"}"#,
            "end"
        ],
        "what Curator's queryForInstances sees"
    );
    // coordctl sees Curator's.
    let listed = run(
        coordctl(&zk_url(), &["discover", "list", "api", "--base", &base]),
        30,
    );
    assert!(listed.status.success(), "{listed:?}");
    assert_eq!(
        stdout(&listed),
        "coord-1 127.0.0.1 8081\ncur-1 127.0.0.2 9001\n"
    );
    let all = run(
        coordctl(&zk_url(), &["discover", "list", "--base", &base]),
        30,
    );
    assert_eq!(
        stdout(&all),
        "api coord-1 127.0.0.1 8081\napi cur-1 127.0.0.2 9001\n"
    );
    // Curator's node is, byte for byte, what coord writes for it.
    let written = node(&format!("{base}/api/cur-1"));
    let read = ServiceInstance::from_json(&written).expect("Curator's instance");
    assert_eq!(
        String::from_utf8_lossy(&read.to_json()),
        String::from_utf8_lossy(&written),
        "coord does not write Curator's layout"
    );
    assert_eq!(
        read.payload,
        Some(serde_json::json!({"@class": "java.util.LinkedHashMap", "zone": "curator"}))
    );
    let json = run(
        coordctl(
            &zk_url(),
            &["discover", "list", "api", "--base", &base, "--json"],
        ),
        30,
    );
    assert_eq!(
        stdout(&json).lines().nth(1),
        Some(String::from_utf8_lossy(&written).as_ref())
    );

    // A Curator ServiceProvider picks coordctl's instances, each in turn.
    let mut second = coordctl_register(&base, "pay", "coord-b", "8083", "null");
    let mut first = coordctl_register(&base, "pay", "coord-a", "8082", r#"{"tags":["a",1]}"#);
    let picks = curator_output("pick", &base, "pay", &["4"]);
    let mut ids: Vec<&str> = picks
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            assert_eq!(f.len(), 4, "{l}");
            assert_eq!(f[2], "127.0.0.1", "{l}");
            f[1]
        })
        .collect();
    assert_eq!(ids.len(), 4, "{picks:?}");
    assert_eq!(ids[0..2], ids[2..4], "not round robin: {picks:?}");
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids, ["coord-a", "coord-b"], "{picks:?}");

    for r in [&mut ours, &mut first, &mut second] {
        let status = r.signal_and_wait(nix::sys::signal::Signal::SIGTERM, 30);
        assert_eq!(status.code(), Some(143), "coordctl on SIGTERM");
    }
    theirs.kill();
    // coordctl unregistered on SIGTERM: gone at once.
    let after = curator_output("query", &base, "pay", &[]);
    assert_eq!(after, ["end"]);
}

#[test]
fn zk_discovery_killed_instances_disappear_from_both() {
    let base = common::unique("discovery-kill");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let session = rt.block_on(async {
        coordination::connect(&zk_url())
            .await
            .unwrap_or_else(|e| panic!("connect: {e}"))
    });
    // The cache's task runs on the runtime's workers, also while this
    // thread waits on the processes.
    let _in_runtime = rt.enter();
    let mut cache = ServiceCache::start(&session, &base, "web").expect("cache");
    let watcher = Lines::start(curator("watch", &base, "web", &[]));
    watcher.until(60, "Curator's cache starts", |l| l == "instances ");

    let mut ours = coordctl_register(&base, "web", "coord-1", "8081", "{}");
    let mut theirs = Lines::start(curator(
        "register",
        &base,
        "web",
        &["cur-1", "127.0.0.2", "9001"],
    ));
    theirs.until(60, "Curator registers", |l| l == "registered cur-1");
    watcher.until(30, "Curator's cache sees both", |l| {
        l == "instances coord-1,cur-1"
    });
    let mut added = 0;
    rt.block_on(async {
        while added < 2 {
            match tokio::time::timeout(Duration::from_secs(30), cache.next()).await {
                Ok(Some(Ok(ServiceCacheEvent::Added(_)))) => added += 1,
                Ok(Some(Ok(_))) => {}
                other => panic!("coord's cache: {other:?}"),
            }
        }
    });

    // SIGKILL both: neither can unregister; their sessions end on the
    // server after the timeout.
    let killed = Instant::now();
    ours.child.kill().expect("kill coordctl");
    let _ = ours.child.wait();
    theirs.kill();
    let curator_saw = watcher.until(30, "Curator's cache loses both", |l| l == "instances ");
    let mut gone = Vec::new();
    rt.block_on(async {
        while gone.len() < 2 {
            match tokio::time::timeout(Duration::from_secs(30), cache.next()).await {
                Ok(Some(Ok(ServiceCacheEvent::Removed { id }))) => gone.push((id, Instant::now())),
                Ok(Some(Ok(_))) => {}
                other => panic!("coord's cache: {other:?}"),
            }
        }
    });
    gone.sort();
    assert_eq!(
        gone.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
        ["coord-1", "cur-1"]
    );
    let coord_saw = gone.iter().map(|(_, at)| *at).max().expect("two");
    let bound = SESSION + Duration::from_secs(2);
    let (c, k) = (curator_saw - killed, coord_saw - killed);
    println!(
        "discovery kill figures: session {SESSION:?}; gone from Curator's cache after {c:?}, \
         from coord's after {k:?}"
    );
    assert!(c <= bound, "Curator's cache saw them go after {c:?}");
    assert!(k <= bound, "coord's cache saw them go after {k:?}");
    rt.block_on(async {
        let _ = session.close().await;
    });
}

//! Running the real coordctl binary: URLs from the environment, processes
//! with deadlines, reading their output line by line.
#![allow(dead_code)] // each test file uses its own part of this

use std::io::{BufRead, BufReader};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_coordctl");

/// The URL of the server named by `var`, made from its value by `to_url`.
/// Panics when the variable is unset or the server does not answer a TCP
/// connect: these tests never skip.
pub fn server_url(var: &str, to_url: impl Fn(&str) -> String) -> String {
    let value = std::env::var(var).unwrap_or_else(|_| {
        panic!(
            "{var} is not set: run these tests through scripts/test-all, which starts \
             ZooKeeper, etcd, Redis and PostgreSQL and sets COORD_TEST_ZK, COORD_TEST_ETCD, \
             COORD_TEST_REDIS and COORD_TEST_PG"
        )
    });
    let hostport = value
        .trim_start_matches("redis://")
        .trim_start_matches("http://")
        .trim_start_matches("postgres://")
        .trim_start_matches("postgresql://")
        .split(['/', '?'])
        .next()
        .unwrap_or_default()
        .rsplit('@')
        .next()
        .unwrap_or_default()
        .to_owned();
    let reachable = hostport
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .is_some_and(|a| TcpStream::connect_timeout(&a, Duration::from_secs(3)).is_ok());
    assert!(reachable, "{var}={value}: nothing answers at {hostport}");
    to_url(&value)
}

pub fn zk_url() -> String {
    server_url("COORD_TEST_ZK", |v| format!("zk://{v}"))
}

pub fn etcd_url() -> String {
    server_url("COORD_TEST_ETCD", |v| {
        format!("etcd://{}", v.trim_start_matches("http://"))
    })
}

pub fn redis_url() -> String {
    server_url("COORD_TEST_REDIS", str::to_owned)
}

/// COORD_TEST_PG is a whole `postgres://user:password@host:port/db` URL.
pub fn pg_url() -> String {
    server_url("COORD_TEST_PG", str::to_owned)
}

/// A path no other test (or earlier run) uses.
pub fn unique(what: &str) -> String {
    format!("/coordctl-test/{}/{what}", uuid::Uuid::new_v4().simple())
}

/// A fresh temporary directory.
pub fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("coordctl-test-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
    dir
}

/// `coordctl --url URL ARGS…`, not yet started.
pub fn coordctl(url: &str, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("COORD_URL").arg("--url").arg(url).args(args);
    c
}

/// Run to completion within `secs`, capturing output; kills and panics on
/// the deadline.
pub fn run(mut cmd: Command, secs: u64) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {cmd:?}: {e}"));
    finish(child, secs)
}

/// Wait for a started child within `secs`, capturing what it printed.
pub fn finish(mut child: Child, secs: u64) -> Output {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let out = child.wait_with_output();
                panic!("coordctl still running after {secs}s: {out:?}");
            }
            Err(e) => panic!("waiting for coordctl: {e}"),
        }
    }
    child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("collecting coordctl's output: {e}"))
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn code(status: ExitStatus) -> Option<i32> {
    status.code()
}

/// A started coordctl whose stdout is read line by line in a thread.
pub struct Running {
    pub child: Child,
    lines: mpsc::Receiver<String>,
}

impl Running {
    /// Start `cmd` (its stderr goes where `cmd` says: inherited unless set).
    pub fn start(mut cmd: Command) -> Self {
        let mut child = cmd
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawning {cmd:?}: {e}"));
        let out = child
            .stdout
            .take()
            .unwrap_or_else(|| panic!("no stdout pipe"));
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Running { child, lines }
    }

    /// The next line printed, within `secs`.
    pub fn line(&self, secs: u64) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(secs))
            .unwrap_or_else(|e| panic!("no line from coordctl within {secs}s: {e}"))
    }

    /// Send `sig` and wait (within `secs`) for the exit status.
    pub fn signal_and_wait(&mut self, sig: nix::sys::signal::Signal, secs: u64) -> ExitStatus {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).unwrap_or(i32::MAX));
        nix::sys::signal::kill(pid, sig).unwrap_or_else(|e| panic!("kill {pid}: {e}"));
        self.wait(secs)
    }

    /// Wait (within `secs`) for the exit status.
    pub fn wait(&mut self, secs: u64) -> ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            match self.child.try_wait() {
                Ok(Some(s)) => return s,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Ok(None) => {
                    let _ = self.child.kill();
                    panic!("coordctl still running after {secs}s");
                }
                Err(e) => panic!("waiting for coordctl: {e}"),
            }
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A failed test must not leave a coordctl behind.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Wait until `path` exists (within `secs`) and return its content.
pub fn wait_for_file(path: &std::path::Path, secs: u64) -> String {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Ok(s) = std::fs::read_to_string(path) {
            if s.ends_with('\n') {
                return s;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{} did not appear within {secs}s",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A CMD for `sh -c SCRIPT sh FILE`: prints `ready`, then runs until
/// SIGTERM, which it records by writing `term` to FILE before exiting 0.
pub const TRAPS_TERM: &str =
    r#"trap 'echo term > "$1"; exit 0' TERM; echo ready; while true; do sleep 0.05; done"#;

/// The member name of a `join` that printed `joined NAME` first.
pub fn joined_name(out: &Output) -> String {
    stdout(out)
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("joined "))
        .unwrap_or_else(|| panic!("no `joined NAME` line: {out:?}"))
        .to_owned()
}

/// Wait until `ok()` holds, checking every 50 ms; panics naming `what`
/// after `secs`.
pub fn wait_until(secs: u64, what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !ok() {
        assert!(Instant::now() < deadline, "{what}: not within {secs}s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Run `f` with a session of the coord library on `url` (the test's own,
/// not coordctl's), on a runtime of its own.
pub fn with_session<T>(url: &str, f: impl AsyncFnOnce(&coordination::Session) -> T) -> T {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    rt.block_on(async {
        let session = coordination::connect(url)
            .await
            .unwrap_or_else(|e| panic!("connect: {e}"));
        let r = f(&session).await;
        let _ = session.close().await;
        r
    })
}

/// The names of the nodes under `path` (none if it does not exist).
pub fn children(url: &str, path: &str) -> Vec<String> {
    with_session(url, async |s| match s.children(path).await {
        Ok(c) => c.into_iter().map(|c| c.name).collect(),
        Err(coordination::Error::NotFound { .. }) => Vec::new(),
        Err(e) => panic!("children of {path}: {e}"),
    })
}

/// Delete every node under `path` (one level), as an operator might.
pub fn delete_children(url: &str, path: &str) -> usize {
    with_session(url, async |s| {
        let nodes = s
            .children(path)
            .await
            .unwrap_or_else(|e| panic!("children of {path}: {e}"));
        for n in &nodes {
            s.delete(&coordination::path::join(path, &n.name), None)
                .await
                .unwrap_or_else(|e| panic!("delete: {e}"));
        }
        nodes.len()
    })
}

/// The suite's shared fault proxy ([`coord_conformance::fault::FaultProxy`])
/// in front of a server, on a small runtime of its own (these tests are
/// synchronous): [`Blackhole::cut`] partitions it — every connection, open
/// or new, stays open, but nothing gets through any more, as when a
/// network partition cuts the client off without closing anything.
pub struct Blackhole {
    /// Where clients connect: `127.0.0.1:PORT`.
    pub addr: String,
    proxy: coord_conformance::fault::FaultProxy,
    _runtime: tokio::runtime::Runtime,
}

impl Blackhole {
    /// Start forwarding to `upstream` (`host:port`).
    pub fn start(upstream: &str) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("a runtime for the fault proxy: {e}"));
        let proxy = runtime.block_on(coord_conformance::fault::FaultProxy::start(upstream));
        Blackhole {
            addr: proxy.addr().to_string(),
            proxy,
            _runtime: runtime,
        }
    }

    /// From now on nothing gets through, either way.
    pub fn cut(&self) {
        use coord_conformance::fault::Fault;
        self.proxy.partition();
    }

    /// Let traffic through again (the connections carry on).
    pub fn heal(&self) {
        use coord_conformance::fault::Fault;
        self.proxy.heal();
    }
}

/// `url` with its `host:port` replaced by `addr`.
pub fn via(url: &str, addr: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let userinfo = authority
        .rsplit_once('@')
        .map_or(String::new(), |(u, _)| format!("{u}@"));
    format!("{scheme}://{userinfo}{addr}{}", &rest[end..])
}

/// The `host:port` of `url`.
pub fn host_port(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..end];
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, h)| h)
        .to_owned()
}

/// A small seeded generator (splitmix64), for tests that print their seed.
pub struct Rng(pub u64);

impl Rng {
    /// The seed from `COORD_TEST_SEED`, or a fresh one.
    pub fn seed() -> u64 {
        std::env::var("COORD_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(7)
            })
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0), near enough.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The first lines of `coordctl watch ROOT` over ROOT and its one child
/// `a` (data `one`): both added, in either order, then `initialized`.
pub fn expect_initial_load(watch: &Running, root: &str, a: &str) {
    let mut initial = vec![watch.line(20), watch.line(20)];
    initial.sort();
    assert_eq!(
        initial,
        [format!("added {root} "), format!("added {a} one")]
    );
    assert_eq!(watch.line(20), "initialized");
}

/// Where Debian puts the Curator jars (each jar's manifest names its own
/// dependencies).
pub const CURATOR_JARS: &str = "/usr/share/java";

/// Compile the Java `sources` against the `jars` of [`CURATOR_JARS`] (by
/// name, without `.jar`) into a fresh directory under the test's target
/// directory, named after `label`; the class path to run them with (slf4j-nop
/// added, which keeps the JVMs quiet). Panics, saying how to install them
/// (`install`), when a jar, java or javac is missing or the build fails.
/// Directories of runs over an hour old are removed.
pub fn javac(label: &str, jars: &[&str], sources: &[&str], install: &str) -> String {
    for tool in ["java", "javac"] {
        let works = Command::new(tool)
            .arg("-version")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            works,
            "`{tool} -version` failed: the Curator interop tests need a JDK. {install}"
        );
    }
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(label);
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
    let jars: Vec<String> = jars
        .iter()
        .map(|j| format!("{CURATOR_JARS}/{j}.jar"))
        .collect();
    for j in &jars {
        assert!(
            std::path::Path::new(j).exists(),
            "{j} is missing: {install}"
        );
    }
    let jars = jars.join(":");
    let out = base.join(uuid::Uuid::new_v4().simple().to_string());
    std::fs::create_dir_all(&out).unwrap_or_else(|e| panic!("mkdir {}: {e}", out.display()));
    let o = Command::new("javac")
        .args(["-nowarn", "-d"])
        .arg(&out)
        .args(["-cp", &jars])
        .args(sources)
        .output()
        .unwrap_or_else(|e| panic!("javac: {e}. {install}"));
    assert!(
        o.status.success(),
        "javac {sources:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    format!("{}:{jars}:{CURATOR_JARS}/slf4j-nop.jar", out.display())
}

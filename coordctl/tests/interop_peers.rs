//! Interop storms: coordctl and the real peer libraries on one path, on the
//! real servers (COORD_TEST_ZK, COORD_TEST_ETCD), while participants are
//! killed with SIGKILL and restarted.
//!
//! Peers: Apache Curator 5.4 (Debian's libcurator-recipes-java, driven by
//! tests/interop/Peers.java, compiled here with javac), kazoo (PyPI; driven
//! by tests/interop/peers.py), and etcd's Go `concurrency` package as
//! `etcdctl elect` / `etcdctl lock` (Debian's etcd-client). A missing peer
//! fails the test and says how to install it (scripts/test-all does).
//!
//! How holding is observed, the same for every implementation: right after
//! a participant gets the hold (lock, lease, leadership) it creates
//! `holders/<KIND>.<IMPL>.<ID>` exclusively in the storm's directory (KIND
//! W: exclusive, R: shared), lists the directory and, if it sees a W
//! marker next to any other or more markers than the recipe allows, logs a
//! violation; it logs the hold, holds 100..300 ms, removes its marker and
//! releases. For coordctl the marker protocol is the command run under the
//! hold (`peers.py hold`). After the harness kills a participant (its whole
//! process group, and waits until none of it runs) it removes that
//! participant's marker: a dead process does not act, while what it held
//! stays held until its session ends (2 s) — which is what is tested.
//!
//! Each storm runs at least 15 s, then on until every implementation (and
//! kind, for the read/write locks) has held twice and a holder has been
//! killed with SIGKILL (30 s at most), and asserts: no violation, those
//! holds, that kill. The first 4 s are calm (everyone runs); then every
//! 0.7..1.4 s a participant is stopped and started again: every other time
//! the one holding (or next to hold), otherwise any that has run for 2 s.
//! Sessions are 2 s everywhere (coordctl `--session-timeout 2s`, Curator
//! `newClient(.., 2000, ..)`, kazoo `timeout=2.0`, `etcdctl lock --ttl 2`)
//! but etcdctl elect's (see below). What each proves:
//!
//! - [`zk_election_coordctl_and_curator_leader_latch`]: `coordctl elect`
//!   (default layout, `_c_<uuid>-latch-<seq>`) and Curator `LeaderLatch`
//!   are one election: at most one leader at any moment.
//! - [`zk_election_coordctl_and_kazoo_election`]: the same with kazoo's
//!   `Election`, whose lock is replaced by `client.Lock(path, id,
//!   extra_lock_patterns=("-latch-",))` (Election takes no patterns; it
//!   runs on that Lock).
//! - [`zk_election_selector_coordctl_and_curator_leader_selector`]:
//!   `coordctl elect --layout selector` (`_c_<uuid>-lock-<seq>`) and Curator
//!   `LeaderSelector`: at most one leader.
//! - [`zk_rwlock_coordctl_and_curator`]: `coordctl lock --shared/--write`
//!   and Curator `InterProcessReadWriteLock` readers and writers are one
//!   read/write lock: a writer never holds with anyone else.
//! - [`zk_rwlock_coordctl_and_kazoo`]: the same with kazoo's `ReadLock`
//!   (`extra_lock_patterns=("__WRIT__",)`) and `WriteLock`
//!   (`extra_lock_patterns=("__READ__", "__WRIT__")`). Curator and kazoo are
//!   not mixed in one storm: Curator does not know kazoo's node names.
//! - [`zk_lock_coordctl_and_curator_mutex`],
//!   [`zk_lock_coordctl_and_kazoo_lock`]: `coordctl lock` (`_c_<uuid>-lock-<seq>`)
//!   with Curator's `InterProcessMutex`, and with kazoo's `Lock` given
//!   `extra_lock_patterns=("-lock-",)`: one holder at a time.
//! - [`zk_counter_coordctl_and_kazoo_counter`]: `coordctl counter add` and
//!   kazoo's `Counter` adding to one node at once: no add lost, each reads
//!   the other's value (not a kill storm: an add cut off mid-way may or may
//!   not have counted, by design).
//! - [`zk_semaphore_coordctl_and_curator`]: `coordctl lock --leases 2` and
//!   Curator `InterProcessSemaphoreV2(client, path, 2)`: at most 2 holders,
//!   and the two leases are held by one of each at once (twice at least).
//! - [`etcd_election_coordctl_and_etcdctl_elect`]: `coordctl elect` and
//!   `etcdctl elect`: at most one leader. etcdctl elect's session has a
//!   fixed 60 s TTL (no --ttl), so etcdctl participants are stopped with
//!   SIGTERM (it resigns) rather than SIGKILL; coordctl ones are killed.
//! - [`etcd_lock_coordctl_and_etcdctl_lock`]: `coordctl lock` and
//!   `etcdctl lock --ttl 2`: one holder at a time, both sides SIGKILLed.
//!
//! And two controls, storms like the others that end at the first
//! violation, which show the harness sees an overlap when there is one
//! (each asserts that violations were seen; without the calm start, the
//! selector one found none in 30 s once in five runs: kills make the two
//! sides' live moments rarer):
//!
//! - [`control_plain_lock_and_curator_readers_overlap`]: a plain `coordctl
//!   lock` (`-lock-` nodes) is not a writer to Curator's read lock.
//! - [`control_selector_layout_and_curator_leader_latch_overlap`] shows
//!   that Curator's `LeaderLatch` does not order `--layout selector` offers.
//!
//! Storms on one server run one at a time (a ZooKeeper and an etcd storm
//! may run together).

mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{server_url, BIN};
use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

const PEERS_PY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/peers.py");
const PEERS_JAVA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/Peers.java");
/// Where Debian puts the Curator jars (their manifests name their own
/// dependencies: curator-framework, curator-client, zookeeper, guava, slf4j).
const JARS: &str = "/usr/share/java";
/// Session timeout of every participant (the ZooKeeper server allows
/// 1 s .. 10 s): a killed holder's hold ends soon.
const SESSION: &str = "2s";
/// How long each storm runs at least ...
const STORM: Duration = Duration::from_secs(15);
/// ... and at most: past [`STORM`] it goes on until every implementation
/// has held [`MIN_HOLDS`] times and a holder has been killed.
const STORM_MAX: Duration = Duration::from_secs(30);
/// The first part of a storm, without kills: the participants all run, so
/// whatever overlap they can have shows (the controls find theirs here).
const CALM: Duration = Duration::from_secs(4);
/// The key of [`Storm::holds`] that counts holds shared with another
/// implementation (a holder that saw another implementation's marker).
const ACROSS: &str = "across";
/// Holds each implementation (and kind, where the test says) must have had.
const MIN_HOLDS: usize = 2;
/// Participants give up by themselves this long after their storm's end,
/// should this test be killed before it can stop them.
const LEFTOVER: Duration = Duration::from_secs(60);

const INSTALL: &str = "scripts/test-all installs the peers (see scripts/servers/zk.sh): \
    apt-get install default-jdk-headless libcurator-recipes-java etcd-client; \
    python3 -m pip install kazoo";

// ---------------------------------------------------------------- peers

fn zk_hosts() -> String {
    server_url("COORD_TEST_ZK", str::to_owned)
}

fn zk_url() -> String {
    format!("zk://{}", zk_hosts())
}

fn etcd_endpoints() -> String {
    server_url("COORD_TEST_ETCD", str::to_owned)
}

fn etcd_url() -> String {
    format!("etcd://{}", etcd_endpoints().trim_start_matches("http://"))
}

/// Runs `cmd` to completion; false if it cannot start or fails.
fn works(cmd: &mut Command) -> bool {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The class path of the compiled Peers.java, compiled once per test run.
fn curator_classpath() -> &'static str {
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

fn require_kazoo() {
    assert!(
        works(Command::new("python3").args(["-c", "import kazoo"])),
        "python3 cannot import kazoo: {INSTALL}"
    );
}

fn require_etcdctl() {
    assert!(
        works(Command::new("etcdctl").arg("version")),
        "`etcdctl version` failed: {INSTALL}"
    );
}

// ---------------------------------------------------------------- storms

/// At most one storm per server at a time (so at most two at once, one
/// on etcd without JVMs): the machine may have 2 cores, the JVMs are
/// hungry, and a starved participant could miss its session's heartbeats.
static ZK_STORM: Mutex<()> = Mutex::new(());
static ETCD_STORM: Mutex<()> = Mutex::new(());

/// When a storm ends.
#[derive(Clone, Copy)]
enum Until {
    /// At the first violation (the controls).
    Violation,
    /// Once each of these (`coordctl`, `curator/W`: see [`Storm::holds`])
    /// has held [`MIN_HOLDS`] times and a holder has been killed.
    Exercised(&'static [&'static str]),
}

/// How a participant is stopped when it is the storm's victim.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// SIGKILL to its process group: it cannot release.
    Kill,
    /// SIGTERM to it: it releases (for etcdctl elect, whose session would
    /// otherwise hold the election for 60 s).
    Term,
}

struct Participant {
    id: String,
    imp: &'static str,
    cmd: Box<dyn Fn() -> Command>,
    stop: Stop,
    child: Option<Child>,
    started: Instant,
}

/// What a storm did.
#[derive(Debug, Default)]
struct Report {
    /// Holds per implementation and per implementation and kind (see
    /// [`Storm::holds`]).
    holds: BTreeMap<String, usize>,
    /// The most markers any holder saw at once.
    max_seen: usize,
    /// Holds that saw markers of another implementation (allowed for
    /// shared holds; a violation for exclusive ones).
    mixed: usize,
    /// Participants killed with SIGKILL, and how many of them held.
    kills: usize,
    holder_kills: usize,
    /// Participants stopped with SIGTERM, and how many of them held.
    terms: usize,
    holder_terms: usize,
    /// Participants that exited by themselves (and were restarted).
    exits: usize,
    violations: Vec<String>,
    errors: String,
    /// What was queued at the path when a storm ran out of time.
    queued: String,
    wall: Duration,
    /// The storm's directory (markers, logs, participants' output): kept
    /// for a look when the test fails, removed by [`Report::passed`].
    dir: PathBuf,
}

impl Report {
    fn passed(self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A storm: participants on one path, a directory for their markers and
/// logs; every participant is killed when it is dropped.
struct Storm {
    name: String,
    dir: PathBuf,
    deadline: f64,
    parts: Vec<Participant>,
    rng: u64,
    report: Report,
    /// The server URL and the path, to list what is queued there when a
    /// storm ends without having exercised everyone.
    watch: Option<(String, String)>,
    _one: std::sync::MutexGuard<'static, ()>,
}

fn epoch_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl Storm {
    fn new(name: &str, server: &'static Mutex<()>) -> Self {
        let one = server.lock().unwrap_or_else(|e| e.into_inner());
        let dir = common::temp_dir();
        std::fs::create_dir_all(dir.join("holders")).expect("holders dir");
        std::fs::create_dir_all(dir.join("out")).expect("out dir");
        let seed = (uuid::Uuid::new_v4().as_u128() as u64) | 1;
        Storm {
            name: name.to_owned(),
            dir,
            deadline: epoch_secs() + (STORM_MAX + LEFTOVER).as_secs_f64(),
            parts: Vec::new(),
            rng: seed,
            report: Report::default(),
            watch: None,
            _one: one,
        }
    }

    /// A path of its own on the server at `url`.
    fn path(&mut self, url: &str) -> String {
        let path = format!(
            "/coord-interop/{}/{}",
            self.name,
            uuid::Uuid::new_v4().simple()
        );
        self.watch = Some((url.to_owned(), path.clone()));
        path
    }

    fn random(&mut self, n: usize) -> usize {
        // xorshift64
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        usize::try_from(self.rng % (n.max(1) as u64)).unwrap_or(0)
    }

    /// `peers.py SUB --dir … --id … --impl … --kind … --max … --deadline …`.
    fn py(&self, sub: &str, id: &str, imp: &str, kind: &str, max: usize) -> Vec<String> {
        vec![
            PEERS_PY.to_owned(),
            sub.to_owned(),
            "--dir".to_owned(),
            self.dir.display().to_string(),
            "--id".to_owned(),
            id.to_owned(),
            "--impl".to_owned(),
            imp.to_owned(),
            "--kind".to_owned(),
            kind.to_owned(),
            "--max".to_owned(),
            max.to_string(),
            "--deadline".to_owned(),
            format!("{:.0}", self.deadline),
        ]
    }

    fn add(&mut self, id: &str, imp: &'static str, stop: Stop, argv: Vec<String>) {
        let out = self.dir.join("out").join(id);
        let cmd = move || {
            let mut c = Command::new(&argv[0]);
            c.args(&argv[1..])
                .env_remove("COORD_URL")
                .env("ETCDCTL_API", "3")
                .stdin(Stdio::null())
                .process_group(0);
            let log = File::options().create(true).append(true).open(&out);
            match log.and_then(|f| Ok((f.try_clone()?, f))) {
                Ok((a, b)) => {
                    c.stdout(a).stderr(b);
                }
                Err(_) => {
                    c.stdout(Stdio::null()).stderr(Stdio::null());
                }
            }
            c
        };
        self.parts.push(Participant {
            id: id.to_owned(),
            imp,
            cmd: Box::new(cmd),
            stop,
            child: None,
            started: Instant::now(),
        });
    }

    /// A coordctl participant: `coordctl ARGS -- peers.py hold`, again and
    /// again (each a new coordctl process, so a new session).
    fn coordctl(&mut self, id: &str, url: &str, args: &[&str], kind: &str, max: usize) {
        let mut argv = vec!["python3".to_owned()];
        argv.extend(self.py("loop", id, "coordctl", kind, max));
        argv.extend(
            [BIN, "--url", url, "--session-timeout", SESSION]
                .iter()
                .chain(args)
                .map(|s| (*s).to_owned()),
        );
        argv.push("--".to_owned());
        argv.push("python3".to_owned());
        argv.extend(self.py("hold", id, "coordctl", kind, max));
        self.add(id, "coordctl", Stop::Kill, argv);
    }

    /// A Curator participant (Peers.java): ROLE latch, selector, read,
    /// write or lease (with `leases`).
    fn curator(&mut self, id: &str, role: &str, path: &str, leases: usize) {
        let argv = vec![
            "java".to_owned(),
            "-Xmx64m".to_owned(),
            "-Xss512k".to_owned(),
            "-XX:+UseSerialGC".to_owned(),
            "-XX:TieredStopAtLevel=1".to_owned(),
            "-cp".to_owned(),
            curator_classpath().to_owned(),
            "Peers".to_owned(),
            role.to_owned(),
            zk_hosts(),
            path.to_owned(),
            self.dir.display().to_string(),
            id.to_owned(),
            format!("{:.0}", self.deadline * 1000.0),
            leases.to_string(),
        ];
        self.add(id, "curator", Stop::Kill, argv);
    }

    /// A kazoo participant: ROLE election, read or write.
    fn kazoo(&mut self, id: &str, role: &str, path: &str, kind: &str, max: usize) {
        let mut argv = vec!["python3".to_owned()];
        argv.extend(self.py("kazoo", id, "kazoo", kind, max));
        argv.extend(["--hosts".to_owned(), zk_hosts()]);
        argv.extend(["--path".to_owned(), path.to_owned()]);
        argv.extend(["--role".to_owned(), role.to_owned()]);
        self.add(id, "kazoo", Stop::Kill, argv);
    }

    /// An `etcdctl elect` participant (stopped with SIGTERM, see [`Stop`]).
    fn etcdctl_elect(&mut self, id: &str, path: &str) {
        let mut argv = vec!["python3".to_owned()];
        argv.extend(self.py("etcd-elect", id, "etcdctl", "W", 1));
        argv.extend(["--endpoints".to_owned(), etcd_endpoints()]);
        argv.extend(["--path".to_owned(), path.to_owned()]);
        self.add(id, "etcdctl", Stop::Term, argv);
    }

    /// An `etcdctl lock --ttl 2 PATH -- peers.py hold` participant, again
    /// and again.
    fn etcdctl_lock(&mut self, id: &str, path: &str) {
        let mut argv = vec!["python3".to_owned()];
        argv.extend(self.py("loop", id, "etcdctl", "W", 1));
        argv.extend(
            [
                "etcdctl",
                "--endpoints",
                &etcd_endpoints(),
                "lock",
                "--ttl",
                "2",
                path,
                "--",
                "python3",
            ]
            .map(str::to_owned),
        );
        argv.extend(self.py("hold", id, "etcdctl", "W", 1));
        self.add(id, "etcdctl", Stop::Kill, argv);
    }

    fn start(&mut self, i: usize) {
        let p = &mut self.parts[i];
        p.started = Instant::now();
        let mut cmd = (p.cmd)();
        p.child = Some(
            cmd.spawn()
                .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}. {INSTALL}")),
        );
    }

    /// The ids (`IMPL.ID`) of the participants whose markers are present.
    fn markers(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.dir.join("holders")) else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.split_once('.').map(|(_, who)| who.to_owned())
            })
            .collect()
    }

    /// A participant that holds now, or the next to hold before `until`.
    fn next_holder(&mut self, until: Instant) -> Option<usize> {
        loop {
            let held = self.markers();
            let holders: Vec<usize> = (0..self.parts.len())
                .filter(|&i| held.contains(&format!("{}.{}", self.parts[i].imp, self.parts[i].id)))
                .collect();
            if !holders.is_empty() {
                return Some(holders[self.random(holders.len())]);
            }
            if Instant::now() >= until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn remove_marker(&self, p: usize) -> bool {
        let who = format!("{}.{}", self.parts[p].imp, self.parts[p].id);
        let mut removed = false;
        for kind in ["W", "R"] {
            let f = self.dir.join("holders").join(format!("{kind}.{who}"));
            removed |= std::fs::remove_file(f).is_ok();
        }
        removed
    }

    /// Stop participant `i` as its [`Stop`] says and wait until nothing of
    /// it runs; a SIGKILLed participant's marker is then removed.
    fn stop(&mut self, i: usize, how: Stop) {
        let (_, holding) = self.end(i, how);
        match how {
            Stop::Kill => {
                self.report.kills += 1;
                self.report.holder_kills += usize::from(holding);
            }
            Stop::Term => {
                self.report.terms += 1;
                self.report.holder_terms += usize::from(holding);
            }
        }
    }

    /// End participant `i` (see [`Storm::stop`]): whether it was running,
    /// and whether it held.
    fn end(&mut self, i: usize, how: Stop) -> (bool, bool) {
        let Some(mut child) = self.parts[i].child.take() else {
            return (false, false);
        };
        let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
        let holding = self
            .markers()
            .contains(&format!("{}.{}", self.parts[i].imp, self.parts[i].id));
        match how {
            Stop::Kill => {
                let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
            }
            Stop::Term => {
                let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
                let deadline = Instant::now() + Duration::from_secs(15);
                while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
        let _ = child.wait();
        wait_group_gone(pid);
        let removed = self.remove_marker(i);
        assert!(
            !(removed && how == Stop::Term),
            "{} left its marker after SIGTERM",
            self.parts[i].id
        );
        (true, holding || removed)
    }

    /// Run the storm: after [`CALM`], every 0.7..1.4 s stop a participant (every other
    /// time a holder: the next one to hold within 1.5 s; otherwise anyone
    /// that has run for 2 s) and start it again. It ends as `until` says,
    /// and after [`STORM_MAX`] in any case.
    fn run(mut self, until: Until) -> Report {
        let began = Instant::now();
        for i in 0..self.parts.len() {
            self.start(i);
        }
        while began.elapsed() < STORM_MAX {
            let pause = 700 + self.random(700);
            std::thread::sleep(Duration::from_millis(pause as u64));
            let done = match until {
                Until::Violation => self.dir.join("violations.log").exists(),
                Until::Exercised(goals) => {
                    began.elapsed() >= STORM && self.report.holder_kills >= 1 && {
                        let holds = self.holds();
                        goals
                            .iter()
                            .all(|g| holds.get(*g).copied().unwrap_or(0) >= MIN_HOLDS)
                    }
                }
            };
            if done {
                break;
            }
            // Whoever ended by itself (it should not) starts again.
            for i in 0..self.parts.len() {
                let exited = self.parts[i]
                    .child
                    .as_mut()
                    .is_some_and(|c| !matches!(c.try_wait(), Ok(None)));
                if exited {
                    self.end(i, Stop::Kill);
                    self.report.exits += 1;
                    self.start(i);
                }
            }
            if began.elapsed() < CALM {
                continue;
            }
            let victim = if self.random(2) == 0 {
                self.next_holder(Instant::now() + Duration::from_millis(1500))
            } else {
                let settled: Vec<usize> = (0..self.parts.len())
                    .filter(|&i| self.parts[i].started.elapsed() >= Duration::from_secs(2))
                    .collect();
                (!settled.is_empty()).then(|| settled[self.random(settled.len())])
            };
            if let Some(victim) = victim {
                let how = self.parts[victim].stop;
                self.stop(victim, how);
                self.start(victim);
            }
        }
        if began.elapsed() >= STORM_MAX {
            // Not exercised in time: what is queued at the path, for the
            // failure's message.
            if let Some((url, path)) = &self.watch {
                let listed = std::panic::catch_unwind(|| common::children(url, path));
                let _ = writeln!(self.report.queued, "under {path} at the end: {listed:?}");
            }
        }
        for i in 0..self.parts.len() {
            self.end(i, Stop::Kill);
        }
        self.report.wall = began.elapsed();
        self.collect()
    }

    /// Holds so far, per implementation (`curator`), per implementation
    /// and kind (`curator/W`), and shared across implementations
    /// ([`ACROSS`]), from holds.log.
    fn holds(&self) -> BTreeMap<String, usize> {
        let log = std::fs::read_to_string(self.dir.join("holds.log")).unwrap_or_default();
        let mut holds = BTreeMap::new();
        for line in log.lines() {
            if let [imp, _id, kind, _n, _time, markers] =
                line.split_whitespace().collect::<Vec<_>>()[..]
            {
                *holds.entry(imp.to_owned()).or_default() += 1;
                *holds.entry(format!("{imp}/{kind}")).or_default() += 1;
                // Markers are KIND.IMPL.ID: another IMPL among them makes
                // this a hold shared across implementations.
                let mut imps: Vec<&str> = markers
                    .split(',')
                    .filter_map(|m| m.split('.').nth(1))
                    .collect();
                imps.sort_unstable();
                imps.dedup();
                if imps.len() > 1 {
                    *holds.entry(ACROSS.to_owned()).or_default() += 1;
                }
            }
        }
        holds
    }

    fn collect(&mut self) -> Report {
        let read = |f: &str| std::fs::read_to_string(self.dir.join(f)).unwrap_or_default();
        let mut r = std::mem::take(&mut self.report);
        r.holds = self.holds();
        r.dir = self.dir.clone();
        for line in read("holds.log").lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if let Some(seen) = f.get(3) {
                r.max_seen = r.max_seen.max(seen.parse().unwrap_or(0));
            }
        }
        r.mixed = r.holds.get(ACROSS).copied().unwrap_or(0);
        r.violations = read("violations.log").lines().map(str::to_owned).collect();
        r.errors = read("errors.log");
        for p in &self.parts {
            let out = read(&format!("out/{}", p.id));
            if !out.trim().is_empty() {
                let tail: Vec<&str> = out.lines().rev().take(5).collect();
                let _ = writeln!(r.errors, "{} ({}) printed: {:?}", p.id, p.imp, tail);
            }
        }
        println!(
            "storm {} (in {}): {:.1}s wall; holds {:?}; most holding at once {}; \
             holds shared across implementations {}; SIGKILLs {} ({} of holders); \
             SIGTERMs {} ({} of holders); exited by themselves {}; errors logged {}; violations {}",
            self.name,
            self.dir.display(),
            r.wall.as_secs_f64(),
            r.holds,
            r.max_seen,
            r.mixed,
            r.kills,
            r.holder_kills,
            r.terms,
            r.holder_terms,
            r.exits,
            read("errors.log").lines().count(),
            r.violations.len()
        );
        r
    }
}

impl Drop for Storm {
    fn drop(&mut self) {
        for p in &mut self.parts {
            if let Some(mut c) = p.child.take() {
                let pid = i32::try_from(c.id()).unwrap_or(i32::MAX);
                let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
                let _ = c.wait();
            }
        }
    }
}

/// Wait until no process of group `pgid` runs (zombies do not run: an
/// orphan's may wait for a reaper that never comes).
fn wait_group_gone(pgid: i32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let alive = running_in_group(pgid);
        if alive.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "processes {alive:?} of group {pgid} still run 10 s after SIGKILL"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn running_in_group(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            // /proc/PID/stat: `pid (comm) state ppid pgrp …`; comm may hold
            // anything, so read after its last ')'.
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let f: Vec<&str> = rest.split_whitespace().collect();
            matches!(f[..], [state, _ppid, pgrp, ..] if state != "Z" && state != "X" && pgrp == pgid.to_string())
        })
        .collect()
}

/// The storm held up: no violation, each of `goals` held at least
/// [`MIN_HOLDS`] times, and at least one holder was killed.
fn assert_clean(r: &Report, goals: &[&str]) {
    assert!(
        r.violations.is_empty(),
        "{} violations: {:#?}\nerrors: {}",
        r.violations.len(),
        r.violations,
        r.errors
    );
    for goal in goals {
        let n = r.holds.get(*goal).copied().unwrap_or(0);
        assert!(
            n >= MIN_HOLDS,
            "{goal} held {n} times: the storm did not exercise it ({r:?})"
        );
    }
    assert!(
        r.holder_kills >= 1,
        "no holder was killed with SIGKILL ({r:?})"
    );
}

/// Run `s` until each of `goals` has held (see [`Until::Exercised`]) and
/// assert it held up.
fn storm(s: Storm, goals: &'static [&'static str]) -> Report {
    let r = s.run(Until::Exercised(goals));
    assert_clean(&r, goals);
    r
}

// ---------------------------------------------------------------- tests

/// `coordctl elect` (default layout: Curator's LeaderLatch names) and
/// Curator's `LeaderLatch`: at most one leader at any moment.
#[test]
fn zk_election_coordctl_and_curator_leader_latch() {
    let url = zk_url();
    let mut s = Storm::new("election-latch", &ZK_STORM);
    let path = s.path(&url);
    s.coordctl("c1", &url, &["elect", &path, "c1"], "W", 1);
    s.coordctl("c2", &url, &["elect", &path, "c2"], "W", 1);
    s.curator("j1", "latch", &path, 1);
    s.curator("j2", "latch", &path, 1);
    storm(s, &["coordctl", "curator"]).passed();
}

/// `coordctl elect` and kazoo's `Election`, whose lock is replaced by
/// `client.Lock(path, id, extra_lock_patterns=("-latch-",))` so that it
/// counts coord's offers (kazoo's Election takes no patterns itself; it
/// is that Lock underneath): at most one leader at any moment.
#[test]
fn zk_election_coordctl_and_kazoo_election() {
    require_kazoo();
    let url = zk_url();
    let mut s = Storm::new("election-kazoo", &ZK_STORM);
    let path = s.path(&url);
    s.coordctl("c1", &url, &["elect", &path, "c1"], "W", 1);
    s.coordctl("c2", &url, &["elect", &path, "c2"], "W", 1);
    s.kazoo("k1", "election", &path, "W", 1);
    s.kazoo("k2", "election", &path, "W", 1);
    storm(s, &["coordctl", "kazoo"]).passed();
}

/// `coordctl elect --layout selector` (`_c_<uuid>-lock-<seq>`, the names of
/// Curator's InterProcessMutex) and Curator's `LeaderSelector`: at most one
/// leader at any moment.
#[test]
fn zk_election_selector_coordctl_and_curator_leader_selector() {
    let url = zk_url();
    let mut s = Storm::new("election-selector", &ZK_STORM);
    let path = s.path(&url);
    for id in ["c1", "c2"] {
        s.coordctl(
            id,
            &url,
            &["elect", "--layout", "selector", &path, id],
            "W",
            1,
        );
    }
    s.curator("j1", "selector", &path, 1);
    s.curator("j2", "selector", &path, 1);
    storm(s, &["coordctl", "curator"]).passed();
}

/// `coordctl lock --shared` / `--write` and Curator's
/// `InterProcessReadWriteLock` read and write locks on one path: a writer
/// never holds with anyone else.
#[test]
fn zk_rwlock_coordctl_and_curator() {
    let url = zk_url();
    let mut s = Storm::new("rwlock-curator", &ZK_STORM);
    let path = s.path(&url);
    s.coordctl("c-r1", &url, &["lock", "--shared", &path], "R", 1000);
    s.coordctl("c-r2", &url, &["lock", "--shared", &path], "R", 1000);
    s.coordctl("c-w1", &url, &["lock", "--write", &path], "W", 1);
    s.curator("j-r1", "read", &path, 1);
    s.curator("j-w1", "write", &path, 1);
    storm(s, &["coordctl/R", "coordctl/W", "curator/R", "curator/W"]).passed();
}

/// `coordctl lock --shared` / `--write` and kazoo's `ReadLock` (with
/// `extra_lock_patterns=("__WRIT__",)`) and `WriteLock` (with
/// `extra_lock_patterns=("__READ__", "__WRIT__")`): a writer never holds
/// with anyone else.
#[test]
fn zk_rwlock_coordctl_and_kazoo() {
    require_kazoo();
    let url = zk_url();
    let mut s = Storm::new("rwlock-kazoo", &ZK_STORM);
    let path = s.path(&url);
    s.coordctl("c-r1", &url, &["lock", "--shared", &path], "R", 1000);
    s.coordctl("c-r2", &url, &["lock", "--shared", &path], "R", 1000);
    s.coordctl("c-w1", &url, &["lock", "--write", &path], "W", 1);
    s.kazoo("k-r1", "read", &path, "R", 1000);
    s.kazoo("k-w1", "write", &path, "W", 1);
    storm(s, &["coordctl/R", "coordctl/W", "kazoo/R", "kazoo/W"]).passed();
}

/// `coordctl lock` and Curator's `InterProcessMutex` on one path: one
/// holder at a time.
#[test]
fn zk_lock_coordctl_and_curator_mutex() {
    let url = zk_url();
    let mut s = Storm::new("lock-curator", &ZK_STORM);
    let path = s.path(&url);
    s.coordctl("c1", &url, &["lock", &path], "W", 1);
    s.coordctl("c2", &url, &["lock", &path], "W", 1);
    s.curator("j1", "mutex", &path, 1);
    s.curator("j2", "mutex", &path, 1);
    storm(s, &["coordctl", "curator"]).passed();
}

/// `coordctl lock` and kazoo's `Lock` given
/// `extra_lock_patterns=("-lock-",)`: one holder at a time. (Not mixed with
/// Curator: Curator's mutex does not order kazoo's `__lock__` nodes.)
#[test]
fn zk_lock_coordctl_and_kazoo_lock() {
    require_kazoo();
    let url = zk_url();
    let mut s = Storm::new("lock-kazoo", &ZK_STORM);
    let path = s.path(&url);
    s.coordctl("c1", &url, &["lock", &path], "W", 1);
    s.coordctl("c2", &url, &["lock", &path], "W", 1);
    s.kazoo("k1", "lock", &path, "W", 1);
    s.kazoo("k2", "lock", &path, "W", 1);
    storm(s, &["coordctl", "kazoo"]).passed();
}

/// kazoo's `Counter` and `coordctl counter` on one node, adding at once:
/// the value is stored as kazoo stores it (decimal text), each reads what
/// the other wrote, and no add of either is lost (both retry on a version
/// conflict).
#[test]
fn zk_counter_coordctl_and_kazoo_counter() {
    require_kazoo();
    const ADDS: usize = 15;
    let _one = ZK_STORM.lock().unwrap_or_else(|e| e.into_inner());
    let url = zk_url();
    let path = format!("/coord-interop/counter/{}", uuid::Uuid::new_v4().simple());
    let kazoo = |n: usize| {
        Command::new("python3")
            .args([
                "-c",
                "import sys\n\
                 from kazoo.client import KazooClient\n\
                 zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=15)\n\
                 c = zk.Counter(sys.argv[2])\n\
                 for _ in range(int(sys.argv[3])):\n    c += 1\n\
                 print(c.value); zk.stop()\n",
                &zk_hosts(),
                &path,
                &n.to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start python3")
    };
    let coordctl = |path: String, url: String| {
        std::thread::spawn(move || {
            for _ in 0..ADDS {
                let o = Command::new(BIN)
                    .args(["--url", &url, "-q", "counter", &path, "add", "1"])
                    .stdin(Stdio::null())
                    .output()
                    .expect("run coordctl");
                assert!(
                    o.status.success(),
                    "coordctl counter add: {}",
                    String::from_utf8_lossy(&o.stderr)
                );
            }
        })
    };
    let k = [kazoo(ADDS), kazoo(ADDS)];
    let c = [
        coordctl(path.clone(), url.clone()),
        coordctl(path.clone(), url.clone()),
    ];
    for h in c {
        h.join().expect("coordctl adds");
    }
    for p in k {
        let o = p.wait_with_output().expect("kazoo counter");
        assert!(
            o.status.success(),
            "kazoo Counter: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let o = Command::new(BIN)
        .args(["--url", &url, "-q", "counter", &path, "get"])
        .output()
        .expect("coordctl counter get");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        (4 * ADDS).to_string(),
        "every add of both implementations counted once"
    );
    let o = Command::new("python3")
        .args([
            "-c",
            "import sys\n\
             from kazoo.client import KazooClient\n\
             zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=15)\n\
             print(zk.Counter(sys.argv[2]).value); zk.stop()\n",
            &zk_hosts(),
            &path,
        ])
        .output()
        .expect("kazoo read");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        (4 * ADDS).to_string(),
        "kazoo reads the same value: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `coordctl lock --leases 2` and Curator's `InterProcessSemaphoreV2` with
/// 2 leases, 3 of each: never more than 2 holders, and a coordctl and a
/// Curator holder do hold leases at once (twice at least).
#[test]
fn zk_semaphore_coordctl_and_curator() {
    let url = zk_url();
    let mut s = Storm::new("semaphore-curator", &ZK_STORM);
    let path = s.path(&url);
    for i in 1..=3 {
        s.coordctl(
            &format!("c{i}"),
            &url,
            &["lock", "--leases", "2", &path],
            "R",
            2,
        );
        s.curator(&format!("j{i}"), "lease", &path, 2);
    }
    let r = storm(s, &["coordctl", "curator", ACROSS]);
    assert_eq!(r.max_seen, 2, "{r:?}");
    r.passed();
}

/// `coordctl elect` and `etcdctl elect` on one election: at most one
/// leader. etcdctl participants are stopped with SIGTERM (see [`Stop`]).
#[test]
fn etcd_election_coordctl_and_etcdctl_elect() {
    require_etcdctl();
    let url = etcd_url();
    let mut s = Storm::new("election-etcdctl", &ETCD_STORM);
    let path = s.path(&url);
    s.coordctl("c1", &url, &["elect", &path, "c1"], "W", 1);
    s.coordctl("c2", &url, &["elect", &path, "c2"], "W", 1);
    s.etcdctl_elect("e1", &path);
    s.etcdctl_elect("e2", &path);
    let r = storm(s, &["coordctl", "etcdctl"]);
    assert!(r.terms >= 1, "no etcdctl participant was stopped: {r:?}");
    r.passed();
}

/// `coordctl lock` and `etcdctl lock --ttl 2` on one lock: one holder at a
/// time, with both sides killed.
#[test]
fn etcd_lock_coordctl_and_etcdctl_lock() {
    require_etcdctl();
    let url = etcd_url();
    let mut s = Storm::new("lock-etcdctl", &ETCD_STORM);
    let path = s.path(&url);
    s.coordctl("c1", &url, &["lock", &path], "W", 1);
    s.coordctl("c2", &url, &["lock", &path], "W", 1);
    s.etcdctl_lock("e1", &path);
    s.etcdctl_lock("e2", &path);
    storm(s, &["coordctl", "etcdctl"]).passed();
}

/// Control: a plain `coordctl lock` (`-lock-` nodes) is a different
/// recipe from Curator's read lock, which does not count its nodes as
/// writers, so the two hold at once. The harness must see that.
#[test]
fn control_plain_lock_and_curator_readers_overlap() {
    let url = zk_url();
    let mut s = Storm::new("control-lock-vs-readers", &ZK_STORM);
    let path = s.path(&url);
    s.coordctl("c1", &url, &["lock", &path], "W", 1);
    s.coordctl("c2", &url, &["lock", &path], "W", 1);
    s.curator("j-r1", "read", &path, 1);
    s.curator("j-r2", "read", &path, 1);
    let r = s.run(Until::Violation);
    assert!(
        !r.violations.is_empty(),
        "no overlap seen where one must be: the harness cannot see violations ({r:?})"
    );
    r.passed();
}

/// Control: `coordctl elect --layout selector` offers (`-lock-`) are not
/// LeaderLatch offers (`-latch-`): Curator's LeaderLatch does not order
/// them, so two leaders overlap. The harness must see that; the default
/// layout (the LeaderLatch storm above) is the one to use with LeaderLatch.
#[test]
fn control_selector_layout_and_curator_leader_latch_overlap() {
    let url = zk_url();
    let mut s = Storm::new("control-selector-vs-latch", &ZK_STORM);
    let path = s.path(&url);
    for id in ["c1", "c2"] {
        s.coordctl(
            id,
            &url,
            &["elect", "--layout", "selector", &path, id],
            "W",
            1,
        );
    }
    s.curator("j1", "latch", &path, 1);
    s.curator("j2", "latch", &path, 1);
    let r = s.run(Until::Violation);
    assert!(
        !r.violations.is_empty(),
        "no overlap seen where one must be: the harness cannot see violations ({r:?})"
    );
    r.passed();
}

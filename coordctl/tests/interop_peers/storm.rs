//! A storm: participants of several implementations on one path, killed
//! and restarted while each logs its holds, and the checks of what they
//! logged (see the crate docs).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

use crate::common::{self, BIN};
use crate::peers::*;

/// At most one storm per server at a time (so at most two at once, one
/// on etcd without JVMs): the machine may have 2 cores, the JVMs are
/// hungry, and a starved participant could miss its session's heartbeats.
pub(crate) static ZK_STORM: Mutex<()> = Mutex::new(());
pub(crate) static ETCD_STORM: Mutex<()> = Mutex::new(());

/// When a storm ends.
#[derive(Clone, Copy)]
pub(crate) enum Until {
    /// At the first violation (the controls).
    Violation,
    /// Once each of these (`coordctl`, `curator/W`: see [`Storm::holds`])
    /// has held [`MIN_HOLDS`] times and a holder has been killed.
    Exercised(&'static [&'static str]),
}

/// How a participant is stopped when it is the storm's victim.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// SIGKILL to its process group: it cannot release.
    Kill,
    /// SIGTERM to it: it releases (for etcdctl elect, whose session would
    /// otherwise hold the election for 60 s).
    Term,
}

pub(crate) struct Participant {
    id: String,
    imp: &'static str,
    cmd: Box<dyn Fn() -> Command>,
    stop: Stop,
    child: Option<Child>,
    started: Instant,
}

/// What a storm did.
#[derive(Debug, Default)]
pub(crate) struct Report {
    /// Holds per implementation and per implementation and kind (see
    /// [`Storm::holds`]).
    pub(crate) holds: BTreeMap<String, usize>,
    /// The most markers any holder saw at once.
    pub(crate) max_seen: usize,
    /// Holds that saw markers of another implementation (allowed for
    /// shared holds; a violation for exclusive ones).
    pub(crate) mixed: usize,
    /// Participants killed with SIGKILL, and how many of them held.
    pub(crate) kills: usize,
    pub(crate) holder_kills: usize,
    /// Participants stopped with SIGTERM, and how many of them held.
    pub(crate) terms: usize,
    pub(crate) holder_terms: usize,
    /// Participants that exited by themselves (and were restarted).
    pub(crate) exits: usize,
    pub(crate) violations: Vec<String>,
    pub(crate) errors: String,
    /// What was queued at the path when a storm ran out of time.
    pub(crate) queued: String,
    pub(crate) wall: Duration,
    /// The storm's directory (markers, logs, participants' output): kept
    /// for a look when the test fails, removed by [`Report::passed`].
    pub(crate) dir: PathBuf,
}

impl Report {
    pub(crate) fn passed(self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A storm: participants on one path, a directory for their markers and
/// logs; every participant is killed when it is dropped.
pub(crate) struct Storm {
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

pub(crate) fn epoch_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl Storm {
    pub(crate) fn new(name: &str, server: &'static Mutex<()>) -> Self {
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
    pub(crate) fn path(&mut self, url: &str) -> String {
        let path = format!(
            "/coord-interop/{}/{}",
            self.name,
            uuid::Uuid::new_v4().simple()
        );
        self.watch = Some((url.to_owned(), path.clone()));
        path
    }

    pub(crate) fn random(&mut self, n: usize) -> usize {
        // xorshift64
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        usize::try_from(self.rng % (n.max(1) as u64)).unwrap_or(0)
    }

    /// `peers.py SUB --dir … --id … --impl … --kind … --max … --deadline …`.
    pub(crate) fn py(&self, sub: &str, id: &str, imp: &str, kind: &str, max: usize) -> Vec<String> {
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

    pub(crate) fn add(&mut self, id: &str, imp: &'static str, stop: Stop, argv: Vec<String>) {
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
    pub(crate) fn coordctl(&mut self, id: &str, url: &str, args: &[&str], kind: &str, max: usize) {
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
    pub(crate) fn curator(&mut self, id: &str, role: &str, path: &str, leases: usize) {
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
    pub(crate) fn kazoo(&mut self, id: &str, role: &str, path: &str, kind: &str, max: usize) {
        let mut argv = vec!["python3".to_owned()];
        argv.extend(self.py("kazoo", id, "kazoo", kind, max));
        argv.extend(["--hosts".to_owned(), zk_hosts()]);
        argv.extend(["--path".to_owned(), path.to_owned()]);
        argv.extend(["--role".to_owned(), role.to_owned()]);
        self.add(id, "kazoo", Stop::Kill, argv);
    }

    /// An `etcdctl elect` participant (stopped with SIGTERM, see [`Stop`]).
    pub(crate) fn etcdctl_elect(&mut self, id: &str, path: &str) {
        let mut argv = vec!["python3".to_owned()];
        argv.extend(self.py("etcd-elect", id, "etcdctl", "W", 1));
        argv.extend(["--endpoints".to_owned(), etcd_endpoints()]);
        argv.extend(["--path".to_owned(), path.to_owned()]);
        self.add(id, "etcdctl", Stop::Term, argv);
    }

    /// An `etcdctl lock --ttl 2 PATH -- peers.py hold` participant, again
    /// and again.
    pub(crate) fn etcdctl_lock(&mut self, id: &str, path: &str) {
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

    pub(crate) fn start(&mut self, i: usize) {
        let p = &mut self.parts[i];
        p.started = Instant::now();
        let mut cmd = (p.cmd)();
        p.child = Some(
            cmd.spawn()
                .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}. {INSTALL}")),
        );
    }

    /// The ids (`IMPL.ID`) of the participants whose markers are present.
    pub(crate) fn markers(&self) -> Vec<String> {
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

    /// A participant that holds now, or the next to hold before `until`;
    /// with `killed`, only one that is stopped with SIGKILL.
    pub(crate) fn next_holder(&mut self, until: Instant, killed: bool) -> Option<usize> {
        loop {
            let held = self.markers();
            let holders: Vec<usize> = (0..self.parts.len())
                .filter(|&i| held.contains(&format!("{}.{}", self.parts[i].imp, self.parts[i].id)))
                .filter(|&i| !killed || self.parts[i].stop == Stop::Kill)
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

    pub(crate) fn remove_marker(&self, p: usize) -> bool {
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
    pub(crate) fn stop(&mut self, i: usize, how: Stop) {
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
    pub(crate) fn end(&mut self, i: usize, how: Stop) -> (bool, bool) {
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
    /// that has run for 2 s; every time a holder stopped with SIGKILL
    /// until one has been) and start it again. It ends as `until` says,
    /// and after [`STORM_MAX`] in any case.
    pub(crate) fn run(mut self, until: Until) -> Report {
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
            // Until a holder has been killed with SIGKILL (what a storm
            // must exercise), every stop goes to one that can be: picked at
            // random only every other time, a loaded machine's few stops
            // could all miss the holders.
            let kill_a_holder =
                self.report.holder_kills == 0 && self.parts.iter().any(|p| p.stop == Stop::Kill);
            let victim = if kill_a_holder || self.random(2) == 0 {
                self.next_holder(Instant::now() + Duration::from_millis(1500), kill_a_holder)
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
    pub(crate) fn holds(&self) -> BTreeMap<String, usize> {
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

    pub(crate) fn collect(&mut self) -> Report {
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
pub(crate) fn wait_group_gone(pgid: i32) {
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

pub(crate) fn running_in_group(pgid: i32) -> Vec<i32> {
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
pub(crate) fn assert_clean(r: &Report, goals: &[&str]) {
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
pub(crate) fn storm(s: Storm, goals: &'static [&'static str]) -> Report {
    let r = s.run(Until::Exercised(goals));
    assert_clean(&r, goals);
    r
}

// ---------------------------------------------------------------- tests

//! One server process of a test's own: free ports, a directory, spawn and
//! wait until it serves, `kill -9` (or the server's own shutdown), restart
//! on the same data, stop on drop.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use async_trait::async_trait;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::time::Instant;

/// How [`TestServer::kill`] (and so a restart) stops a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// `kill -9`: of its pid, and of every process it forked when the
    /// server forks ([`ServerKind::forks`]); nothing is flushed or said
    /// goodbye to.
    Kill,
    /// `SIGINT` to its pid, then wait until it exits: PostgreSQL's fast
    /// shutdown (clients disconnected, a checkpoint written).
    Interrupt,
    /// `SIGQUIT` to its pid, then wait until it exits: PostgreSQL's
    /// immediate shutdown (its processes quit at once, no checkpoint: the
    /// next start recovers from the WAL as after a crash).
    Quit,
}

impl Stop {
    fn signal(self) -> Signal {
        match self {
            Stop::Kill => Signal::SIGKILL,
            Stop::Interrupt => Signal::SIGINT,
            Stop::Quit => Signal::SIGQUIT,
        }
    }
}

/// What differs between servers: how to run one and how to tell it serves.
///
/// A kind is a plain description; [`TestServer`] does the rest (ports,
/// directory, spawning, waiting, killing).
#[async_trait]
pub trait ServerKind: Send + Sync + 'static {
    /// The server's name, for messages ("ZooKeeper").
    fn name(&self) -> &'static str;

    /// How many loopback ports it listens on; [`TestServer`] finds that
    /// many distinct free ones, the client port first.
    fn ports(&self) -> usize {
        1
    }

    /// Write what the server needs in `dir` before its first start (a
    /// config file, subdirectories). Panics if it cannot.
    fn prepare(&self, _dir: &Path, _ports: &[u16]) {}

    /// The command that runs the server in the foreground on `ports`, with
    /// everything it keeps in `dir`. Its stdout and stderr go to the log.
    fn command(&self, dir: &Path, ports: &[u16]) -> Command;

    /// Why the command may have failed to start, and how to get it (named
    /// when it cannot be run).
    fn install_hint(&self) -> &'static str;

    /// What a client connects to: a connect string or a URL.
    fn address(&self, ports: &[u16]) -> String;

    /// Whether the server on `ports` serves requests (not merely accepts
    /// connections). Asked again and again until it does; each answer
    /// should come within a couple of seconds.
    ///
    /// # Cancel safety
    /// Cancel safe: it only asks.
    async fn serving(&self, ports: &[u16]) -> bool;

    /// How long a (re)start may take before the test fails; also how long
    /// a [`Stop`] by the server's own shutdown may take before the server
    /// is killed and the test fails.
    fn start_timeout(&self) -> Duration {
        Duration::from_secs(60)
    }

    /// How [`TestServer::kill`], and so a restart, stops the server. By
    /// default `kill -9` ([`Stop::Kill`]). Dropping a [`TestServer`]
    /// always kills.
    fn stop(&self) -> Stop {
        Stop::Kill
    }

    /// Whether the server forks processes of its own (PostgreSQL's
    /// backends, each in a session of its own) that must go with it: a
    /// `kill -9` then stops the server (`SIGSTOP`, so it forks no more),
    /// kills its children, then it. By default no.
    fn forks(&self) -> bool {
        false
    }
}

/// A server that can be killed and started again: what a restart test
/// needs of a [`TestServer`], whatever its kind.
#[async_trait]
pub trait ServerProcess: Send {
    /// Stop the server process as its kind says ([`ServerKind::stop`]:
    /// `kill -9` unless the kind uses its own shutdown) and reap it;
    /// nothing when it is not running.
    fn kill(&mut self);

    /// Start it again on the same port(s) and data; returns once it serves.
    ///
    /// # Errors
    /// Panics, with the server's log, when it exits or does not serve in
    /// time.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped while waiting, the process is left running
    /// until the server is dropped.
    async fn spawn(&mut self);

    /// [`ServerProcess::kill`], then [`ServerProcess::spawn`].
    ///
    /// # Errors
    /// As [`ServerProcess::spawn`].
    ///
    /// # Cancel safety
    /// As [`ServerProcess::spawn`].
    async fn restart(&mut self);
}

/// How often a starting server is asked whether it serves.
const POLL: Duration = Duration::from_millis(20);

/// A server process a test started, and the only one it ever kills: on its
/// own free loopback ports, with its data, config and log in a directory of
/// its own. Dropped, the process is killed (`SIGKILL`, by its pid, and its
/// children's when the server forks) and the directory removed.
pub struct TestServer<K: ServerKind> {
    kind: K,
    child: Option<Child>,
    ports: Vec<u16>,
    dir: PathBuf,
}

impl<K: ServerKind> TestServer<K> {
    /// Start a server of `kind` and wait until it serves.
    ///
    /// # Errors
    /// Panics, saying why, when it cannot be started or does not serve
    /// within [`ServerKind::start_timeout`].
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped while waiting, a started process is left
    /// running.
    pub async fn start(kind: K) -> Self {
        let dir = scratch_dir(&format!("coord-{}", kind.name().to_lowercase()));
        let ports = free_ports(kind.ports());
        kind.prepare(&dir, &ports);
        let mut server = TestServer {
            kind,
            child: None,
            ports,
            dir,
        };
        server.spawn().await;
        server
    }

    /// The server's description.
    pub fn kind(&self) -> &K {
        &self.kind
    }

    /// What a client connects to ([`ServerKind::address`]).
    pub fn address(&self) -> String {
        self.kind.address(&self.ports)
    }

    /// Its ports, the client port first.
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }

    /// The directory that holds its data, config and log.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The pid of the running process, if it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Its log (stdout and stderr) so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    /// Run the server on its ports and data; wait until it serves.
    ///
    /// # Errors
    /// Panics, with the server's log, when it cannot be run, exits, or does
    /// not serve within [`ServerKind::start_timeout`].
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped while waiting, the process is left running
    /// until the server is dropped.
    pub async fn spawn(&mut self) {
        assert!(self.child.is_none(), "the server is already running");
        let name = self.kind.name();
        let log = File::options()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("open the server's log");
        let child = self
            .kind
            .command(&self.dir, &self.ports)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name} ({}): {e}", self.kind.install_hint()));
        self.child = Some(child);
        let limit = self.kind.start_timeout();
        let deadline = Instant::now() + limit;
        loop {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                self.child = None;
                panic!(
                    "{name} exited at start ({status}); its log:\n{}",
                    self.log()
                );
            }
            if self.kind.serving(&self.ports).await {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{name} on {} did not serve within {limit:?}; its log:\n{}",
                self.address(),
                self.log()
            );
            tokio::time::sleep(POLL).await;
        }
    }

    /// Stop the server we started as its kind says ([`ServerKind::stop`]:
    /// `kill -9` by default) and reap it; nothing when it is not running.
    ///
    /// # Errors
    /// Panics when it cannot be signalled, or when its own shutdown does
    /// not end it within [`ServerKind::start_timeout`] (it is killed
    /// first).
    pub fn kill(&mut self) {
        self.stop_with(self.kind.stop());
    }

    fn stop_with(&mut self, how: Stop) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let name = self.kind.name();
        let pid = Pid::from_raw(i32::try_from(child.id()).expect("a pid fits in i32"));
        let group = self.kind.forks();
        if how != Stop::Kill {
            // Its own shutdown, signalled to its pid: a server that forks
            // waits for its processes before it exits.
            if let Err(e) = kill(pid, how.signal()) {
                panic!("cannot send {:?} to {name} pid {pid}: {e}", how.signal());
            }
            let limit = self.kind.start_timeout();
            let deadline = std::time::Instant::now() + limit;
            loop {
                match child.try_wait() {
                    Ok(Some(_)) => return,
                    Ok(None) if std::time::Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    _ => {
                        hard_kill(&mut child, pid, group, name);
                        panic!(
                            "{name} did not stop within {limit:?} of {:?} (killed); its log:\n{}",
                            how.signal(),
                            self.log()
                        );
                    }
                }
            }
        }
        hard_kill(&mut child, pid, group, name);
    }

    /// Kill the server and start it again on the same ports and data.
    ///
    /// # Errors
    /// As [`TestServer::spawn`].
    ///
    /// # Cancel safety
    /// As [`TestServer::spawn`].
    pub async fn restart(&mut self) {
        self.kill();
        self.spawn().await;
    }
}

#[async_trait]
impl<K: ServerKind> ServerProcess for TestServer<K> {
    fn kill(&mut self) {
        TestServer::kill(self)
    }
    async fn spawn(&mut self) {
        TestServer::spawn(self).await
    }
    async fn restart(&mut self) {
        TestServer::restart(self).await
    }
}

impl<K: ServerKind> Drop for TestServer<K> {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
            hard_kill(&mut child, pid, self.kind.forks(), self.kind.name());
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `SIGKILL` to `child` (pid `pid`), then reap it. When `forks`, first
/// `SIGSTOP` it (it forks no more), `SIGKILL` each process it forked (its
/// children, found in `/proc` while it is not reaped, so their parent pid
/// is still its and only its), then it; wait (bounded) until those
/// children no longer run, so a restart does not find them holding the
/// server's files.
fn hard_kill(child: &mut Child, pid: Pid, forks: bool, name: &str) {
    if forks && kill(pid, Signal::SIGSTOP).is_ok() {
        let children = children_of(pid);
        for &c in &children {
            let _ = kill(c, Signal::SIGKILL);
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while children.iter().any(|&c| runs(c)) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    if let Err(e) = child.kill() {
        // std's kill is SIGKILL on Unix, to this child's pid only.
        if child.try_wait().ok().flatten().is_none() {
            panic!("cannot kill {name} pid {pid}: {e}");
        }
    }
    let _ = child.wait();
}

/// A process's state and parent pid, from `/proc/<pid>/stat`.
fn stat_of(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses,
    // so read after the last ')'.
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Whether `pid` runs (exists and is not a zombie).
fn runs(pid: Pid) -> bool {
    matches!(stat_of(pid.as_raw()), Some((state, _)) if state != 'Z' && state != 'X')
}

/// The running children of `parent`.
fn children_of(parent: Pid) -> Vec<Pid> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&p| {
            matches!(stat_of(p), Some((state, ppid))
                if ppid == parent.as_raw() && state != 'Z' && state != 'X')
        })
        .map(Pid::from_raw)
        .collect()
}

/// A new directory of its own for a server: under `/dev/shm` when there is
/// one (a server that syncs every write is fast there), else the temp dir.
fn scratch_dir(prefix: &str) -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    let base = if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    };
    let id = uuid::Uuid::new_v4().simple().to_string();
    let dir = base.join(format!("{prefix}-{}", &id[..12]));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot make {}: {e}", dir.display()));
    dir
}

/// `n` distinct free loopback ports. The listeners are held until all are
/// found (so none is found twice), then closed; the server binds the ports
/// right after: another process could take one in between, and the start
/// then fails, naming it.
fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<_> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port"))
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().expect("local addr").port())
        .collect()
}

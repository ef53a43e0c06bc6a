//! A PostgreSQL cluster as a [`ServerKind`]: made with `initdb` in the
//! server's directory, run by `postgres` on a loopback port, stopped by its
//! fast shutdown, its immediate shutdown or `kill -9` of all its processes;
//! ready once it takes a new connection (not "starting up" any more, its
//! recovery done).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use async_trait::async_trait;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::process::{ServerKind, Stop};

/// The role `initdb` makes, the one the tests connect as.
const ROLE: &str = "coord";
/// The database connected to: the one `initdb` makes.
const DATABASE: &str = "postgres";
/// The system user a server started by root runs as (PostgreSQL refuses
/// to run as root): Debian's package makes it.
const SYSTEM_USER: &str = "postgres";

/// How a restart stops a [`Postgres`] (see [`ServerKind::stop`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PgShutdown {
    /// Fast shutdown (`SIGINT`): the server ends its clients' connections,
    /// writes a checkpoint and exits.
    Fast,
    /// Immediate shutdown (`SIGQUIT`): every process quits at once, and the
    /// next start recovers from the WAL as after a crash.
    Immediate,
    /// `kill -9` of the postmaster and every process it forked,
    /// as a crash of the machine would, the data files kept.
    Kill,
}

/// A PostgreSQL cluster of the test's own: `initdb` into the server's
/// directory (role `coord`, trust authentication on loopback, so there is
/// no password to keep out of messages), `postgres` on a loopback port
/// with its socket in the same directory and `fsync=off` (the tests kill
/// processes, not the machine: what was written survives in the page
/// cache). Run as the `postgres` system user (through `setpriv`, which
/// execs it, so the pid is the postmaster's) when the test runs as root.
///
/// Its binaries: the newest of Debian's `/usr/lib/postgresql/*/bin`, else
/// `initdb` and `postgres` from `PATH`.
#[derive(Debug, Clone, Copy)]
pub struct Postgres {
    shutdown: PgShutdown,
}

impl Postgres {
    /// A server a restart stops with its fast shutdown.
    pub fn fast() -> Self {
        Postgres {
            shutdown: PgShutdown::Fast,
        }
    }

    /// A server a restart stops with its immediate shutdown.
    pub fn immediate() -> Self {
        Postgres {
            shutdown: PgShutdown::Immediate,
        }
    }

    /// A server a restart kills (`kill -9` of all its processes).
    pub fn killed() -> Self {
        Postgres {
            shutdown: PgShutdown::Kill,
        }
    }

    /// How a restart stops it.
    pub fn shutdown(&self) -> PgShutdown {
        self.shutdown
    }
}

/// The directory of `initdb` and `postgres`: the newest Debian version's,
/// else `None` (from `PATH`).
fn bin_dir() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").is_file().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

fn program(name: &str) -> PathBuf {
    bin_dir().map_or_else(|| PathBuf::from(name), |dir| dir.join(name))
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// `program` run as the server's user: through `setpriv` when we are root.
fn as_server_user(program: &Path) -> Command {
    if is_root() {
        let mut command = Command::new("setpriv");
        command
            .arg(format!("--reuid={SYSTEM_USER}"))
            .arg(format!("--regid={SYSTEM_USER}"))
            .arg("--init-groups")
            .arg(program);
        command
    } else {
        Command::new(program)
    }
}

const HINT: &str = "Debian's postgresql package is needed (its binaries under \
                    /usr/lib/postgresql/*/bin, and its `postgres` system user when the tests \
                    run as root); scripts/test-all installs it";

#[async_trait]
impl ServerKind for Postgres {
    fn name(&self) -> &'static str {
        "PostgreSQL"
    }

    /// `initdb` into `dir/data`, `dir` handed to the server's user first
    /// when we are root (its parents, under `/dev/shm` or the temp dir,
    /// are traversable).
    fn prepare(&self, dir: &Path, _ports: &[u16]) {
        if is_root() {
            let chown = Command::new("chown")
                .arg("-R")
                .arg(format!("{SYSTEM_USER}:{SYSTEM_USER}"))
                .arg(dir)
                .output()
                .unwrap_or_else(|e| panic!("cannot run chown: {e}"));
            assert!(
                chown.status.success(),
                "cannot hand {} to the {SYSTEM_USER} user ({HINT}): {}",
                dir.display(),
                String::from_utf8_lossy(&chown.stderr)
            );
        }
        let initdb = program("initdb");
        let out = as_server_user(&initdb)
            .arg("-D")
            .arg(dir.join("data"))
            .args(["-U", ROLE, "-A", "trust", "--encoding=UTF8", "--locale=C"])
            .arg("--no-sync")
            .output()
            .unwrap_or_else(|e| panic!("cannot run {} ({HINT}): {e}", initdb.display()));
        assert!(
            out.status.success(),
            "initdb failed ({HINT}):\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn command(&self, dir: &Path, ports: &[u16]) -> Command {
        let mut command = as_server_user(&program("postgres"));
        command
            .arg("-D")
            .arg(dir.join("data"))
            .arg("-p")
            .arg(ports[0].to_string())
            .arg("-k")
            .arg(dir)
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
            // Shared memory segments as files in the data directory: a
            // server killed with kill -9 leaves its POSIX segments in
            // /dev/shm for good, these go with the test's directory.
            .args(["-c", "dynamic_shared_memory_type=mmap"])
            .args(["-c", "max_connections=200"]);
        command
    }

    fn install_hint(&self) -> &'static str {
        HINT
    }

    /// A `postgres://` URL: role `coord`, no password (trust), database
    /// `postgres`.
    fn address(&self, ports: &[u16]) -> String {
        format!("postgres://{ROLE}@127.0.0.1:{}/{DATABASE}", ports[0])
    }

    /// It answers a startup message with an authentication message, not
    /// an error: it takes connections (started, its recovery done).
    async fn serving(&self, ports: &[u16]) -> bool {
        let mut startup = Vec::new();
        startup.extend_from_slice(&196_608u32.to_be_bytes()); // protocol 3.0
        for (key, value) in [("user", ROLE), ("database", DATABASE)] {
            startup.extend_from_slice(key.as_bytes());
            startup.push(0);
            startup.extend_from_slice(value.as_bytes());
            startup.push(0);
        }
        startup.push(0);
        let len = u32::try_from(startup.len() + 4).expect("a short message");
        let mut message = len.to_be_bytes().to_vec();
        message.extend_from_slice(&startup);
        let ask = async {
            let mut stream = TcpStream::connect(("127.0.0.1", ports[0])).await.ok()?;
            stream.write_all(&message).await.ok()?;
            let mut tag = [0u8; 1];
            stream.read_exact(&mut tag).await.ok()?;
            // Terminate: 'X', length 4.
            let _ = stream.write_all(&[b'X', 0, 0, 0, 4]).await;
            Some(tag[0])
        };
        let answer = tokio::time::timeout(Duration::from_secs(2), ask).await;
        matches!(answer, Ok(Some(b'R')))
    }

    fn start_timeout(&self) -> Duration {
        Duration::from_secs(60)
    }

    fn stop(&self) -> Stop {
        match self.shutdown {
            PgShutdown::Fast => Stop::Interrupt,
            PgShutdown::Immediate => Stop::Quit,
            PgShutdown::Kill => Stop::Kill,
        }
    }

    /// The postmaster forks a backend per connection, and more.
    fn forks(&self) -> bool {
        true
    }
}

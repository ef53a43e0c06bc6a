//! A PostgreSQL server restarting under coord, on the same data directory:
//! stopped by its fast shutdown (`SIGINT`: clients disconnected, a
//! checkpoint), by its immediate shutdown (`SIGQUIT`: every process quits,
//! the next start recovers from the WAL as after a crash), or killed
//! (`kill -9` of the postmaster and every backend), then started again on
//! the same port.
//!
//! Each test starts its own cluster (a `coord_conformance::server` process:
//! `initdb` in a directory of its own, `postgres` on a free loopback port,
//! run as the `postgres` user when the tests run as root) and stops exactly
//! the processes it started, so it may stop and restart it at will; the
//! shared server of `COORD_TEST_PG` is not used. Without Debian's
//! postgresql package every test fails, saying so; none is skipped.
//!
//! What they show, for each way of stopping, through the shared restart
//! spec (`coord_conformance::server_restart`, as on ZooKeeper, etcd and
//! Redis): sessions live in the server's tables and end by the server's
//! clock, so a holder's session either comes back with its hold (and
//! nobody else can take the lock) or is reported `Expired` on its client
//! before anyone else is granted it; never two holders; tokens (stamps,
//! from a sequence the server logs ahead) keep growing, across crash
//! recovery too; and the recipes that come back (a rejoining latch, a
//! group member, a cache that follows a client) are back after each
//! restart.

use std::time::Duration;

use coord_conformance::server::{PgShutdown, Postgres, ServerKind, ServerProcess, TestServer};
use coord_conformance::server_restart::StandaloneServer;
use coord_core::{Client, ClientOptions, Session};
use coord_pg::PgOptions;

/// A PostgreSQL of the test's own, and how coord-pg opens sessions on it.
struct Pg(TestServer<Postgres>);

impl Pg {
    fn options(&self, session_timeout: Duration) -> PgOptions {
        PgOptions::new(self.0.address()).with_session_timeout(session_timeout)
    }
}

#[async_trait::async_trait]
impl StandaloneServer for Pg {
    fn name(&self) -> &'static str {
        match self.0.kind().shutdown() {
            PgShutdown::Fast => "postgres (fast shutdown)",
            PgShutdown::Immediate => "postgres (immediate shutdown)",
            PgShutdown::Kill => "postgres (kill -9)",
        }
    }
    async fn open(&self, session_timeout: Duration) -> Session {
        coord_pg::connect(self.options(session_timeout))
            .await
            .unwrap_or_else(|e| panic!("cannot open a session on the test's PostgreSQL: {e}"))
    }
    fn client(&self, session_timeout: Duration, options: ClientOptions) -> Client {
        let pg = self.options(session_timeout);
        Client::start(move || coord_pg::connect(pg.clone()), options)
    }
    fn process(&mut self) -> &mut dyn ServerProcess {
        &mut self.0
    }
}

/// Restarts by the server's fast shutdown.
mod fast {
    use super::*;
    coord_conformance::server_restart_tests!(Pg(TestServer::start(Postgres::fast()).await));
}

/// Restarts by the server's immediate shutdown (crash recovery at start).
mod immediate {
    use super::*;
    coord_conformance::server_restart_tests!(Pg(TestServer::start(Postgres::immediate()).await));
}

/// Restarts by `kill -9` of every server process (crash recovery at
/// start).
mod killed {
    use super::*;
    coord_conformance::server_restart_tests!(Pg(TestServer::start(Postgres::killed()).await));
}

/// A process's state and parent pid, from `/proc/<pid>/stat`.
fn stat_of(pid: u32) -> Option<(String, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.to_owned();
    Some((state, fields.next()?.parse().ok()?))
}

/// Whether `pid` runs (exists and is not a zombie).
fn runs(pid: u32) -> bool {
    matches!(stat_of(pid), Some((state, _)) if state != "Z" && state != "X")
}

/// The postmaster `pid` and the processes it forked that run.
fn server_processes(pid: u32) -> Vec<u32> {
    let mut out: Vec<u32> = std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|&p| matches!(stat_of(p), Some((state, ppid)) if ppid == pid && state != "Z"))
        .collect();
    if runs(pid) {
        out.push(pid);
    }
    out
}

/// The test's own server is gone when it ends: the postmaster and every
/// process it forked (a backend per connection, in a session of its own)
/// are stopped, none is left holding the data directory, and the directory
/// is removed. The same after each way a restart stops it and a start
/// again: each stop ends the whole server, and it serves again on the same
/// port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_test_server_stops_with_all_its_processes() {
    for kind in [Postgres::fast(), Postgres::immediate(), Postgres::killed()] {
        let how = kind.shutdown();
        let mut server = TestServer::start(kind).await;
        let ports = server.ports().to_vec();
        let session = coord_pg::connect(PgOptions::new(server.address()))
            .await
            .expect("a session on the test's server");
        let pid = server.pid().expect("it runs");
        let before = server_processes(pid);
        // The postmaster, its helpers and the session's two backends.
        assert!(before.len() > 3, "{how:?}: {before:?}");
        server.kill();
        let left: Vec<u32> = before.iter().copied().filter(|&p| runs(p)).collect();
        assert!(
            left.is_empty(),
            "{how:?}: processes of the server left after it was stopped: {left:?}"
        );
        assert!(!kind.serving(&ports).await, "{how:?}: it serves after kill");
        server.spawn().await;
        let pid = server.pid().expect("it runs again");
        assert!(kind.serving(&ports).await);
        let again = coord_pg::connect(PgOptions::new(server.address()))
            .await
            .expect("a session on the restarted server");
        let before = server_processes(pid);
        let dir = server.dir().to_path_buf();
        drop((session, again));
        drop(server);
        let left: Vec<u32> = before.iter().copied().filter(|&p| runs(p)).collect();
        assert!(
            left.is_empty(),
            "{how:?}: processes of the server left after Drop: {left:?}"
        );
        assert!(!kind.serving(&ports).await, "it serves after Drop");
        assert!(!dir.exists(), "its directory is left behind");
    }
}

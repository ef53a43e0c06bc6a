//! What the coord-etcd integration tests share: the conformance harness
//! ([`harness`]), the secured test etcd's settings ([`secure`]), and a
//! standalone etcd of a
//! test's own, which it may `kill -9` and start again on the same ports and
//! data dir (tests/restart.rs).
//!
//! Started as scripts/servers/etcd.sh starts the shared one: one member
//! with its own name, cluster token, loopback client and peer ports, and
//! data dir (under /dev/shm when there is one), its log beside it. Only the
//! pid it started is ever killed; dropped, the server is killed and the
//! directory removed. When it cannot be started the test fails, naming why.

#![allow(dead_code)]

pub mod harness;
pub mod secure;

use std::fs::File;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::time::Instant;

/// How long a (re)started member may take to serve.
const SERVER_START: Duration = Duration::from_secs(60);

pub struct EtcdServer {
    child: Option<Child>,
    port: u16,
    peer: u16,
    dir: PathBuf,
}

/// A free loopback port (closed again at once; the server binds it next).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    listener.local_addr().expect("local addr").port()
}

impl EtcdServer {
    /// Start a member and wait until it serves.
    pub async fn start() -> Self {
        let shm = PathBuf::from("/dev/shm");
        let base = if shm.is_dir() {
            shm
        } else {
            std::env::temp_dir()
        };
        let id = uuid::Uuid::new_v4().simple().to_string();
        let dir = base.join(format!("coord-etcd-restart-{}", &id[..12]));
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot make {}: {e}", dir.display()));
        let port = free_port();
        let mut peer = free_port();
        while peer == port {
            peer = free_port();
        }
        let mut server = EtcdServer {
            child: None,
            port,
            peer,
            dir,
        };
        server.spawn().await;
        server
    }

    /// The client URL.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("etcd.log")).unwrap_or_default()
    }

    /// Run the member on our ports and data dir (a new cluster the first
    /// time; etcd ignores `--initial-cluster-state` once the data dir
    /// exists); wait until it serves.
    pub async fn spawn(&mut self) {
        assert!(self.child.is_none(), "the server is already running");
        let name = format!("coord-test-{}", self.port);
        let peer = format!("http://127.0.0.1:{}", self.peer);
        let log = File::options()
            .create(true)
            .append(true)
            .open(self.dir.join("etcd.log"))
            .expect("open the server's log");
        let child = Command::new("etcd")
            .args(["--name", &name, "--initial-cluster-token", &name])
            .arg("--data-dir")
            .arg(self.dir.join("data"))
            .args(["--listen-client-urls", &self.endpoint()])
            .args(["--advertise-client-urls", &self.endpoint()])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &format!("{name}={peer}")])
            .args(["--initial-cluster-state", "new"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start etcd (Debian's etcd-server package is needed; \
                     scripts/test-all installs it): {e}"
                )
            });
        self.child = Some(child);
        let deadline = Instant::now() + SERVER_START;
        loop {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                self.child = None;
                panic!("etcd exited at start ({status}); its log:\n{}", self.log());
            }
            if self.serving().await {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "etcd on {} did not serve within {SERVER_START:?}; its log:\n{}",
                self.endpoint(),
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Whether it answers a linearizable read (so it has a leader).
    async fn serving(&self) -> bool {
        let options = etcd_client::ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(1))
            .with_timeout(Duration::from_secs(1));
        let ask = async {
            let mut client = etcd_client::Client::connect([self.endpoint()], Some(options))
                .await
                .ok()?;
            client.get("coord-restart-ready", None).await.ok()
        };
        matches!(
            tokio::time::timeout(Duration::from_secs(2), ask).await,
            Ok(Some(_))
        )
    }

    /// `kill -9` the member we started (and reap it).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SIGKILL on Unix, to this child's pid only.
            if let Err(e) = child.kill() {
                panic!("cannot kill etcd pid {}: {e}", child.id());
            }
            let _ = child.wait();
        }
    }

    /// Kill the member and start it again on the same ports and data dir.
    pub async fn restart(&mut self) {
        self.kill();
        self.spawn().await;
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

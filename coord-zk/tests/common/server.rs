//! A standalone ZooKeeper of the test's own, which it may `kill -9` and
//! start again on the same port and data dir (tests/restart.rs).
//!
//! Started as scripts/servers/zk.sh starts the shared one: Debian's
//! `/usr/share/java/zookeeper.jar` with slf4j-simple, `tickTime=500`,
//! sessions of 1 s .. 20 s (zk.sh allows 10 s; 20 s lets a waiter outlive
//! a restart and the client's backing-off reconnect on a loaded machine),
//! but without zk.sh's `-Dzookeeper.extendedTypesEnabled=true`: TTL nodes
//! are disabled here, which tests/ttl.rs relies on.
//! Its config, data and log are in a directory of its own (under /dev/shm
//! when there is one). Only the pid it started is ever killed; dropped,
//! the server is killed and the directory removed. When it cannot be
//! started the test fails, naming why.
//!
//! [`ZkServer::start_with_sasl`] starts one that also takes SASL
//! DIGEST-MD5 logins (a JAAS `Server` section with `DigestLoginModule`
//! users), as a secured ensemble is set up (tests/auth.rs).

use std::fs::File;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// How long a (re)started JVM may take to serve.
const SERVER_START: Duration = Duration::from_secs(60);

pub struct ZkServer {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    /// The JAAS file, for a server that takes SASL logins.
    jaas: Option<PathBuf>,
}

/// Where the test servers keep their data: /dev/shm when there is one.
pub fn scratch_dir(prefix: &str) -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    let base = if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    };
    let id = uuid::Uuid::new_v4().simple().to_string();
    let dir = base.join(format!("{prefix}-{}", &id[..12]));
    std::fs::create_dir_all(dir.join("data"))
        .unwrap_or_else(|e| panic!("cannot make {}: {e}", dir.display()));
    dir
}

/// A free loopback port (closed again at once; the server binds it next).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    listener.local_addr().expect("local addr").port()
}

impl ZkServer {
    /// Start a server and wait until it serves.
    pub async fn start() -> Self {
        Self::start_configured(&[]).await
    }

    /// Start a server that also authenticates SASL DIGEST-MD5 logins of
    /// `users` (name, password): SASL is offered, not required, so
    /// sessions without it still connect; a failed login ends the session
    /// with AUTH_FAILED.
    pub async fn start_with_sasl(users: &[(&str, &str)]) -> Self {
        assert!(!users.is_empty(), "a SASL server needs users");
        Self::start_configured(users).await
    }

    async fn start_configured(sasl_users: &[(&str, &str)]) -> Self {
        let dir = scratch_dir("coord-zk-restart");
        let port = free_port();
        let mut config = format!(
            "tickTime=500\nminSessionTimeout=1000\nmaxSessionTimeout=20000\n\
             dataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n\
             admin.enableServer=false\n4lw.commands.whitelist=ruok,srvr\nmaxClientCnxns=0\n",
            dir.join("data").display()
        );
        let jaas = (!sasl_users.is_empty()).then(|| {
            config.push_str(
                "authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n",
            );
            let users: String = sasl_users
                .iter()
                .map(|(user, password)| format!("    user_{user}=\"{password}\"\n"))
                .collect();
            let jaas = dir.join("jaas.conf");
            std::fs::write(
                &jaas,
                format!(
                    "Server {{\n    org.apache.zookeeper.server.auth.DigestLoginModule required\n\
                     {users}    ;\n}};\n"
                ),
            )
            .expect("write jaas.conf");
            jaas
        });
        std::fs::write(dir.join("zoo.cfg"), config).expect("write zoo.cfg");
        let mut server = ZkServer {
            child: None,
            port,
            dir,
            jaas,
        };
        server.spawn().await;
        server
    }

    /// `host:port`, a connect string.
    pub fn hosts(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("zookeeper.log")).unwrap_or_default()
    }

    /// Run the server on our port and data dir; wait until it serves.
    pub async fn spawn(&mut self) {
        assert!(self.child.is_none(), "the server is already running");
        let log = File::options()
            .create(true)
            .append(true)
            .open(self.dir.join("zookeeper.log"))
            .expect("open the server's log");
        let child = Command::new("java")
            .args(["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
            .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=info")
            .args(
                self.jaas
                    .iter()
                    .map(|jaas| format!("-Djava.security.auth.login.config={}", jaas.display())),
            )
            .args([
                "-cp",
                "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar",
            ])
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(self.dir.join("zoo.cfg"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start ZooKeeper (java and Debian's zookeeper package are needed; \
                     scripts/test-all installs them): {e}"
                )
            });
        self.child = Some(child);
        let deadline = Instant::now() + SERVER_START;
        loop {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                self.child = None;
                panic!(
                    "ZooKeeper exited at start ({status}); its log:\n{}",
                    self.log()
                );
            }
            if self.serving().await {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "ZooKeeper on {} did not serve within {SERVER_START:?}; its log:\n{}",
                self.hosts(),
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Whether it serves requests: `srvr` names its mode (before the data is
    /// loaded it says it is "not currently serving requests").
    async fn serving(&self) -> bool {
        let ask = async {
            let mut stream = TcpStream::connect(self.hosts()).await.ok()?;
            stream.write_all(b"srvr").await.ok()?;
            let mut out = String::new();
            stream.read_to_string(&mut out).await.ok()?;
            Some(out)
        };
        let answer = tokio::time::timeout(Duration::from_secs(2), ask).await;
        matches!(answer, Ok(Some(out)) if out.contains("Mode: standalone"))
    }

    /// `kill -9` the server we started (and reap it).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SIGKILL on Unix, to this child's pid only.
            if let Err(e) = child.kill() {
                panic!("cannot kill ZooKeeper pid {}: {e}", child.id());
            }
            let _ = child.wait();
        }
    }

    /// Kill the server and start it again on the same port and data dir.
    pub async fn restart(&mut self) {
        self.kill();
        self.spawn().await;
    }
}

impl Drop for ZkServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

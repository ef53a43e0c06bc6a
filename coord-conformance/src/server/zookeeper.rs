//! A standalone ZooKeeper as a [`ServerKind`]: Debian's zookeeper jar, its
//! config in the server's directory, ready once `srvr` names its mode.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use async_trait::async_trait;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::process::ServerKind;

/// A standalone ZooKeeper, started as the shared test server is: Debian's
/// `/usr/share/java/zookeeper.jar` with slf4j-simple, `tickTime=500`,
/// sessions of 1 s .. 20 s (20 s lets a waiter outlive a restart and the
/// client's backing-off reconnect on a loaded machine), but without
/// `-Dzookeeper.extendedTypesEnabled=true`: TTL nodes are disabled, which
/// coord-zk's TTL test relies on.
///
/// [`ZooKeeper::with_sasl`] also takes SASL DIGEST-MD5 logins (a JAAS
/// `Server` section with `DigestLoginModule` users), as a secured ensemble
/// is set up.
#[derive(Debug, Clone, Default)]
pub struct ZooKeeper {
    sasl_users: Vec<(String, String)>,
}

impl ZooKeeper {
    /// A plain server: no SASL.
    pub fn new() -> Self {
        Self::default()
    }

    /// A server that also authenticates SASL DIGEST-MD5 logins of `users`
    /// (name, password): SASL is offered, not required, so sessions without
    /// it still connect; a failed login ends the session with AUTH_FAILED.
    /// Panics when `users` is empty.
    pub fn with_sasl(users: &[(&str, &str)]) -> Self {
        assert!(!users.is_empty(), "a SASL server needs users");
        ZooKeeper {
            sasl_users: users
                .iter()
                .map(|(u, p)| ((*u).to_owned(), (*p).to_owned()))
                .collect(),
        }
    }
}

#[async_trait]
impl ServerKind for ZooKeeper {
    fn name(&self) -> &'static str {
        "ZooKeeper"
    }

    fn prepare(&self, dir: &Path, ports: &[u16]) {
        let data = dir.join("data");
        std::fs::create_dir_all(&data)
            .unwrap_or_else(|e| panic!("cannot make {}: {e}", data.display()));
        let mut config = format!(
            "tickTime=500\nminSessionTimeout=1000\nmaxSessionTimeout=20000\n\
             dataDir={}\nclientPort={}\nclientPortAddress=127.0.0.1\n\
             admin.enableServer=false\n4lw.commands.whitelist=ruok,srvr\nmaxClientCnxns=0\n",
            data.display(),
            ports[0]
        );
        if !self.sasl_users.is_empty() {
            config.push_str(
                "authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n",
            );
            let users: String = self
                .sasl_users
                .iter()
                .map(|(user, password)| format!("    user_{user}=\"{password}\"\n"))
                .collect();
            std::fs::write(
                dir.join("jaas.conf"),
                format!(
                    "Server {{\n    org.apache.zookeeper.server.auth.DigestLoginModule required\n\
                     {users}    ;\n}};\n"
                ),
            )
            .expect("write jaas.conf");
        }
        std::fs::write(dir.join("zoo.cfg"), config).expect("write zoo.cfg");
    }

    fn command(&self, dir: &Path, _ports: &[u16]) -> Command {
        let mut command = Command::new("java");
        command
            .args(["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
            .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=info");
        if !self.sasl_users.is_empty() {
            command.arg(format!(
                "-Djava.security.auth.login.config={}",
                dir.join("jaas.conf").display()
            ));
        }
        command
            .args([
                "-cp",
                "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar",
            ])
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(dir.join("zoo.cfg"));
        command
    }

    fn install_hint(&self) -> &'static str {
        "java and Debian's zookeeper package are needed; scripts/test-all installs them"
    }

    /// `host:port`, a connect string.
    fn address(&self, ports: &[u16]) -> String {
        format!("127.0.0.1:{}", ports[0])
    }

    /// `srvr` names its mode (before the data is loaded it says it is "not
    /// currently serving requests").
    async fn serving(&self, ports: &[u16]) -> bool {
        let ask = async {
            let mut stream = TcpStream::connect(self.address(ports)).await.ok()?;
            stream.write_all(b"srvr").await.ok()?;
            let mut out = String::new();
            stream.read_to_string(&mut out).await.ok()?;
            Some(out)
        };
        let answer = tokio::time::timeout(Duration::from_secs(2), ask).await;
        matches!(answer, Ok(Some(out)) if out.contains("Mode: standalone"))
    }
}

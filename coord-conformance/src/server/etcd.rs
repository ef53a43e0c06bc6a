//! A one-member etcd as a [`ServerKind`]: its own name, cluster token,
//! client and peer ports and data dir; ready once it answers a
//! linearizable read.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use async_trait::async_trait;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::process::ServerKind;

/// A one-member etcd cluster, started as the shared test server is: its own
/// name, cluster token, loopback client and peer ports (two ports), and
/// data dir. Restarted on the same data dir it rejoins its cluster (etcd
/// ignores `--initial-cluster-state` once the data dir exists).
#[derive(Debug, Clone, Copy, Default)]
pub struct Etcd;

#[async_trait]
impl ServerKind for Etcd {
    fn name(&self) -> &'static str {
        "etcd"
    }

    /// The client port, then the peer port.
    fn ports(&self) -> usize {
        2
    }

    fn command(&self, dir: &Path, ports: &[u16]) -> Command {
        let name = format!("coord-test-{}", ports[0]);
        let client = self.address(ports);
        let peer = format!("http://127.0.0.1:{}", ports[1]);
        let mut command = Command::new("etcd");
        command
            .args(["--name", &name, "--initial-cluster-token", &name])
            .arg("--data-dir")
            .arg(dir.join("data"))
            .args(["--listen-client-urls", &client])
            .args(["--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &format!("{name}={peer}")])
            .args(["--initial-cluster-state", "new"]);
        command
    }

    fn install_hint(&self) -> &'static str {
        "Debian's etcd-server package is needed; scripts/test-all installs it"
    }

    /// The client URL.
    fn address(&self, ports: &[u16]) -> String {
        format!("http://127.0.0.1:{}", ports[0])
    }

    /// It answers a linearizable read (so it has a leader), asked through
    /// etcd's JSON gateway on the client port, so no gRPC client is needed.
    async fn serving(&self, ports: &[u16]) -> bool {
        // The key "coord-restart-ready", base64 as the gateway wants it.
        let body = r#"{"key":"Y29vcmQtcmVzdGFydC1yZWFkeQ=="}"#;
        let request = format!(
            "POST /v3/kv/range HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            ports[0],
            body.len()
        );
        let ask = async {
            let mut stream = TcpStream::connect(("127.0.0.1", ports[0])).await.ok()?;
            stream.write_all(request.as_bytes()).await.ok()?;
            let mut out = Vec::new();
            stream.read_to_end(&mut out).await.ok()?;
            Some(String::from_utf8_lossy(&out).into_owned())
        };
        let answer = tokio::time::timeout(Duration::from_secs(2), ask).await;
        matches!(answer, Ok(Some(out))
            if out.starts_with("HTTP/1.1 200") && out.contains("\"header\""))
    }
}

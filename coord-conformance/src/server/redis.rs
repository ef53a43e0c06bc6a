//! A `redis-server` as a [`ServerKind`]: without persistence or with an
//! append-only file synced on every write; ready once it answers `PING`.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use async_trait::async_trait;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::process::ServerKind;

/// Whether a [`Redis`] keeps its data across a restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedisPersistence {
    /// No RDB, no AOF: a restart starts empty.
    None,
    /// `appendonly yes`, `appendfsync always`: nothing acknowledged is lost.
    AofAlways,
}

/// A `redis-server` from `PATH` on a loopback port, its files in the
/// server's directory.
#[derive(Debug, Clone, Copy)]
pub struct Redis {
    /// Whether it keeps its data across a restart.
    pub persistence: RedisPersistence,
}

impl Redis {
    /// A server that loses its data when restarted.
    pub fn without_persistence() -> Self {
        Redis {
            persistence: RedisPersistence::None,
        }
    }

    /// A server that keeps every acknowledged write across a restart.
    pub fn append_only() -> Self {
        Redis {
            persistence: RedisPersistence::AofAlways,
        }
    }
}

#[async_trait]
impl ServerKind for Redis {
    fn name(&self) -> &'static str {
        "redis-server"
    }

    fn command(&self, dir: &Path, ports: &[u16]) -> Command {
        let appendonly = match self.persistence {
            RedisPersistence::None => "no",
            RedisPersistence::AofAlways => "yes",
        };
        let mut command = Command::new("redis-server");
        command
            .arg("--port")
            .arg(ports[0].to_string())
            .args(["--bind", "127.0.0.1", "--save", "", "--daemonize", "no"])
            .args(["--appendonly", appendonly, "--appendfsync", "always"])
            .arg("--dir")
            .arg(dir);
        command
    }

    fn install_hint(&self) -> &'static str {
        "it must be on PATH for these tests; Debian/Ubuntu: apt-get install redis-server"
    }

    /// A `redis://` URL.
    fn address(&self, ports: &[u16]) -> String {
        format!("redis://127.0.0.1:{}", ports[0])
    }

    /// It answers `PING` with `PONG` (not `LOADING`: the append-only file
    /// is read).
    async fn serving(&self, ports: &[u16]) -> bool {
        let ask = async {
            let mut stream = TcpStream::connect(("127.0.0.1", ports[0])).await.ok()?;
            stream.write_all(b"PING\r\n").await.ok()?;
            let mut out = Vec::new();
            let mut byte = [0u8; 1];
            // One reply line: "+PONG\r\n", or an error.
            while !out.ends_with(b"\r\n") {
                if stream.read(&mut byte).await.ok()? == 0 {
                    break;
                }
                out.push(byte[0]);
            }
            Some(out)
        };
        let answer = tokio::time::timeout(Duration::from_secs(1), ask).await;
        matches!(answer, Ok(Some(out)) if out == b"+PONG\r\n")
    }

    fn start_timeout(&self) -> Duration {
        Duration::from_secs(10)
    }
}

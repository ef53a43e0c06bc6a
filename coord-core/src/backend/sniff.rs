//! What is listening at an address, asked after a connect failed, and the
//! hint a backend's connect error gives from it: nothing (connection
//! refused), a TLS-only server, or a server of another kind (ZooKeeper,
//! etcd, Redis) than the one the URL names.
//!
//! How a server is recognised, each probe on its own connection, all at
//! once, the first decisive answer ending the others (a server ignores the
//! probes meant for another kind, so waiting for all would cost the whole
//! budget):
//! - TLS: a rustls ClientHello answered in TLS
//!   ([`super::tls_probe::speaks_tls`]);
//! - Redis: the inline command `PING\r\n`, answered by a RESP simple string
//!   or error (`+PONG`, `-NOAUTH …`, `-DENIED …`);
//! - ZooKeeper: the four-letter word `srvr`, answered by its statistics
//!   (`Zookeeper version: …`) or, where the word is not allowed, by
//!   `srvr is not executed because it is not in the whitelist.`;
//! - etcd: the HTTP/2 connection preface and an empty SETTINGS frame,
//!   answered by the server's SETTINGS frame, as every gRPC server does
//!   (so "etcd" here means "an HTTP/2 server, as etcd is").
//!
//! None of them changes anything on a server: ZooKeeper reads `PING` and
//! the preface as an oversized length and drops the connection, Redis
//! answers an unknown `PRI` command with an error, etcd drops what it
//! cannot route. Each is sent only after a connect already failed.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

use super::tls_probe;
use crate::Error;

/// The servers a backend of coord talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// ZooKeeper.
    ZooKeeper,
    /// etcd (any HTTP/2 server: gRPC runs on HTTP/2).
    Etcd,
    /// Redis (any server speaking RESP).
    Redis,
}

impl Kind {
    /// The server's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Kind::ZooKeeper => "ZooKeeper",
            Kind::Etcd => "etcd",
            Kind::Redis => "Redis",
        }
    }

    /// How the server was recognised, for messages: what it is, as far as
    /// a probe can tell.
    fn seen_as(self) -> &'static str {
        match self {
            Kind::ZooKeeper => "a ZooKeeper server (it answered the four-letter word srvr)",
            Kind::Etcd => "an HTTP/2 (gRPC) server such as etcd",
            Kind::Redis => "a Redis server (it answered PING)",
        }
    }

    /// The scheme of a coord URL for this server.
    fn scheme(self) -> &'static str {
        match self {
            Kind::ZooKeeper => "zk://",
            Kind::Etcd => "etcd://",
            Kind::Redis => "redis://",
        }
    }

    /// The client port the server listens on unless told otherwise.
    fn default_port(self) -> u16 {
        match self {
            Kind::ZooKeeper => 2181,
            Kind::Etcd => 2379,
            Kind::Redis => 6379,
        }
    }
}

/// What a sniff found at an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sniffed {
    /// The connection was refused: nothing listens there.
    Refused,
    /// The connection could not be made (no route, a name that does not
    /// resolve, no answer to it within the budget); the reason.
    Unreachable(String),
    /// A server took the connection and answered in TLS.
    Tls,
    /// A server took the connection and answered in plaintext as this kind.
    Plain(Kind),
    /// A server took the connection and answered none of the probes within
    /// the budget.
    Unknown,
}

/// What the failed connect asked for: the kind of server, whether in
/// TLS, and the backend's own words for turning TLS on and off.
#[derive(Debug, Clone, Copy)]
pub struct Asked {
    /// The kind of server the URL names.
    pub kind: Kind,
    /// Whether the connect asked for TLS.
    pub tls: bool,
    /// How to ask for TLS, e.g. "connect with rediss:// (or ?tls=true)".
    pub tls_on: &'static str,
    /// How to ask for no TLS, e.g. "connect with redis://".
    pub tls_off: &'static str,
}

/// A hint from a sniff: what is at the address and what to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hint {
    /// True when the sniff is decisive: trying again cannot connect (a
    /// server of another kind, or a TLS mismatch). False when the server
    /// may yet come (refused, unreachable, silent): a connect may keep
    /// trying and give the hint if it still fails.
    pub certain: bool,
    /// The hint, naming the address.
    pub text: String,
}

/// The budget a sniff gets within a session timeout, and the time left to
/// the connect attempts before it: `(attempts, sniff)`, summing to
/// `session_timeout`, the sniff getting a fifth of it, at most 1 s.
pub fn split_budget(session_timeout: Duration) -> (Duration, Duration) {
    let sniff = (session_timeout / 5).min(Duration::from_secs(1));
    (session_timeout.saturating_sub(sniff), sniff)
}

/// What listens at `addr` (`host:port`), found within `budget` (all
/// told: the connect and the probes).
///
/// # Cancel safety
/// Cancel safe: the probe connections are dropped.
pub async fn sniff(addr: &str, budget: Duration) -> Sniffed {
    let deadline = tokio::time::Instant::now() + budget;
    match tokio::time::timeout_at(deadline, TcpStream::connect(addr)).await {
        Err(_) => {
            return Sniffed::Unreachable(format!("no answer to a TCP connect within {budget:?}"))
        }
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => return Sniffed::Refused,
        Ok(Err(e)) => return Sniffed::Unreachable(e.to_string()),
        Ok(Ok(_)) => {}
    }
    let mut probes = JoinSet::new();
    let owned = addr.to_owned();
    probes.spawn(async move {
        tls_probe::speaks_tls(&owned, &[])
            .await
            .then_some(Sniffed::Tls)
    });
    for kind in [Kind::Redis, Kind::ZooKeeper, Kind::Etcd] {
        let owned = addr.to_owned();
        probes.spawn(async move { ask(&owned, kind).await.then_some(Sniffed::Plain(kind)) });
    }
    let decisive = async {
        while let Some(answer) = probes.join_next().await {
            if let Ok(Some(found)) = answer {
                return found;
            }
        }
        Sniffed::Unknown
    };
    // Dropping the set aborts the probes still waiting.
    tokio::time::timeout_at(deadline, decisive)
        .await
        .unwrap_or(Sniffed::Unknown)
}

/// Whether the server at `addr` answers `kind`'s probe (see the module
/// doc) as that kind. Unbounded in time: [`sniff`] bounds it.
async fn ask(addr: &str, kind: Kind) -> bool {
    /// The HTTP/2 client preface, then an empty SETTINGS frame (length 0,
    /// type 4, no flags, stream 0).
    const H2_HELLO: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";
    let hello: &[u8] = match kind {
        Kind::Redis => b"PING\r\n",
        Kind::ZooKeeper => b"srvr",
        Kind::Etcd => H2_HELLO,
    };
    let Ok(mut tcp) = TcpStream::connect(addr).await else {
        return false;
    };
    if tcp.write_all(hello).await.is_err() {
        return false;
    }
    let mut seen = Vec::with_capacity(256);
    let mut buf = [0u8; 256];
    loop {
        if answers(kind, &seen) {
            return true;
        }
        match tcp.read(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) if seen.len() < 4096 => seen.extend_from_slice(&buf[..n]),
            Ok(_) => return false,
        }
    }
}

/// Whether `seen`, the start of the server's answer to `kind`'s probe, is
/// that kind's answer.
fn answers(kind: Kind, seen: &[u8]) -> bool {
    match kind {
        // A RESP simple string or error, whole.
        Kind::Redis => {
            matches!(seen.first(), Some(b'+' | b'-'))
                && seen.windows(2).any(|w| w == b"\r\n")
                && seen.is_ascii()
        }
        Kind::ZooKeeper => {
            let text = String::from_utf8_lossy(seen).to_ascii_lowercase();
            text.contains("zookeeper version") || text.contains("not in the whitelist")
        }
        // A frame header: 3 bytes of length, then the type, SETTINGS (4).
        Kind::Etcd => seen.len() >= 9 && seen[3] == 4,
    }
}

/// The hint for a connect that `asked` what it did of the server at
/// `addr`, where a sniff found `found`; `None` when the sniff explains
/// nothing (the server is of the kind asked for and speaks the protocol
/// asked for: the failure is elsewhere).
pub fn hint(addr: &str, asked: &Asked, found: &Sniffed) -> Option<Hint> {
    let want = asked.kind.name();
    let maybe = |text: String| {
        Some(Hint {
            certain: false,
            text,
        })
    };
    let sure = |text: String| {
        Some(Hint {
            certain: true,
            text,
        })
    };
    match found {
        Sniffed::Refused => maybe(format!(
            "nothing is listening at {addr} (connection refused): is the {want} server running, \
             and is this its client port ({} by default)?",
            asked.kind.default_port()
        )),
        Sniffed::Unreachable(why) => maybe(format!(
            "{addr} cannot be reached ({why}): check the host and port, and any firewall between"
        )),
        Sniffed::Plain(kind) if *kind != asked.kind => sure(format!(
            "the server at {addr} is {}, not {want}: connect to it with {} instead, or point \
             the URL at the {want} server's client port ({} by default)",
            kind.seen_as(),
            kind.scheme(),
            asked.kind.default_port()
        )),
        Sniffed::Plain(_) if asked.tls => sure(format!(
            "{want} at {addr} answers without TLS: this port does not speak TLS; {} (or use \
             the server's TLS port)",
            asked.tls_off
        )),
        Sniffed::Tls if !asked.tls => sure(format!(
            "the server at {addr} speaks TLS only: {}",
            asked.tls_on
        )),
        Sniffed::Unknown => maybe(format!(
            "the server at {addr} took the connection but answered neither as {want} nor as \
             ZooKeeper, etcd, Redis or TLS: is this {want}'s client port ({} by default)?",
            asked.kind.default_port()
        )),
        Sniffed::Plain(_) | Sniffed::Tls => None,
    }
}

/// Sniff `addrs` in turn (the first three at most, sharing `budget`) and
/// give the first decisive hint, else the first hint found: for a connect
/// that failed on every address.
///
/// # Cancel safety
/// Cancel safe: the probe connections are dropped.
pub async fn diagnose(addrs: &[String], asked: &Asked, budget: Duration) -> Option<Hint> {
    /// How many addresses a diagnosis asks, at most.
    const MAX_ADDRS: usize = 3;
    let asking = addrs.len().clamp(1, MAX_ADDRS);
    let each = budget / u32::try_from(asking).unwrap_or(1);
    let mut first = None;
    for addr in addrs.iter().take(asking) {
        let found = sniff(addr, each).await;
        match hint(addr, asked, &found) {
            Some(h) if h.certain => return Some(h),
            Some(h) if first.is_none() => first = Some(h),
            _ => {}
        }
    }
    first
}

/// `err`, a connect's error, naming `addrs` (the address or addresses
/// tried) where its message does not already: a connection lost, a
/// refused authentication. Other errors are returned as they are.
pub fn naming(err: Error, addrs: &str) -> Error {
    match err {
        Error::ConnectionLost(m) if !m.contains(addrs) => {
            Error::ConnectionLost(format!("{addrs}: {m}"))
        }
        Error::Unauthenticated { backend, hint } if !hint.contains(addrs) => {
            Error::Unauthenticated {
                backend,
                hint: format!("{addrs}: {hint}"),
            }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ZK_TLS: Asked = Asked {
        kind: Kind::ZooKeeper,
        tls: true,
        tls_on: "set tls=true",
        tls_off: "drop tls=true",
    };

    #[test]
    fn answers_are_recognised() {
        assert!(answers(Kind::Redis, b"+PONG\r\n"));
        assert!(answers(
            Kind::Redis,
            b"-NOAUTH Authentication required.\r\n"
        ));
        assert!(!answers(Kind::Redis, b"+PON"));
        assert!(!answers(Kind::Redis, b"HTTP/1.1 400 Bad Request\r\n"));
        assert!(answers(Kind::ZooKeeper, b"Zookeeper version: 3.8.4-"));
        assert!(answers(
            Kind::ZooKeeper,
            b"srvr is not executed because it is not in the whitelist.\n"
        ));
        assert!(answers(Kind::Etcd, b"\0\0\x12\x04\0\0\0\0\0\0\x03"));
        assert!(!answers(Kind::Etcd, b"\0\0\x12\x07\0\0\0\0\0"));
        assert!(!answers(Kind::Etcd, b"-ERR unknown command 'PRI'\r\n"));
    }

    #[test]
    fn hints_name_the_address_and_the_fix() {
        let h = hint("h:1", &ZK_TLS, &Sniffed::Refused).expect("a hint");
        assert!(!h.certain && h.text.contains("h:1") && h.text.contains("connection refused"));
        let h = hint("h:1", &ZK_TLS, &Sniffed::Plain(Kind::Redis)).expect("a hint");
        assert!(h.certain && h.text.contains("redis://") && h.text.contains("Redis"));
        let h = hint("h:1", &ZK_TLS, &Sniffed::Plain(Kind::ZooKeeper)).expect("a hint");
        assert!(h.certain && h.text.contains("without TLS") && h.text.contains("drop tls=true"));
        assert_eq!(hint("h:1", &ZK_TLS, &Sniffed::Tls), None);
        let plain = Asked {
            tls: false,
            ..ZK_TLS
        };
        let h = hint("h:1", &plain, &Sniffed::Tls).expect("a hint");
        assert!(h.certain && h.text.contains("set tls=true"));
        assert_eq!(hint("h:1", &plain, &Sniffed::Plain(Kind::ZooKeeper)), None);
    }

    #[test]
    fn the_sniff_gets_a_fifth_of_the_timeout_at_most_a_second() {
        let (attempts, sniff) = split_budget(Duration::from_secs(3));
        assert_eq!(sniff, Duration::from_millis(600));
        assert_eq!(attempts + sniff, Duration::from_secs(3));
        assert_eq!(
            split_budget(Duration::from_secs(10)).1,
            Duration::from_secs(1)
        );
    }

    #[test]
    fn errors_name_the_address_once() {
        let lost = naming(Error::ConnectionLost("timed out".into()), "h:1");
        assert!(matches!(&lost, Error::ConnectionLost(m) if m == "h:1: timed out"));
        let lost = naming(lost, "h:1");
        assert!(matches!(&lost, Error::ConnectionLost(m) if m == "h:1: timed out"));
        let refused = Error::Unauthenticated {
            backend: "x",
            hint: "set ca=".into(),
        };
        assert!(
            matches!(naming(refused, "h:1"), Error::Unauthenticated { hint, .. } if hint == "h:1: set ca=")
        );
        assert!(matches!(
            naming(Error::SessionExpired, "h:1"),
            Error::SessionExpired
        ));
    }

    #[tokio::test]
    async fn a_closed_port_is_refused() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let found = sniff(&format!("127.0.0.1:{port}"), Duration::from_secs(1)).await;
        assert_eq!(found, Sniffed::Refused);
    }

    #[tokio::test]
    async fn a_silent_server_is_unknown() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let held = tokio::spawn(async move {
            let mut open = Vec::new();
            while let Ok((tcp, _)) = listener.accept().await {
                open.push(tcp);
            }
        });
        let found = sniff(&addr, Duration::from_millis(300)).await;
        assert_eq!(found, Sniffed::Unknown);
        held.abort();
    }
}

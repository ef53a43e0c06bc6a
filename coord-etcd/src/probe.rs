//! Why a connection failed, when the client's error does not say.
//!
//! Under TLS 1.3 the client's handshake is over before the server has
//! checked the client's certificate: a server that requires mutual TLS and
//! refuses our certificate (or its absence) sends its fatal alert after
//! that, and tonic reports only "connection closed". And a plaintext client
//! on a TLS-only port just sees the connection drop ("broken pipe"). When
//! [`crate::connect`] fails so, one probe connection, with the session's
//! own TLS settings and the same rustls (ring provider), asks the server
//! directly (coord-core's shared probe, offering `h2` as tonic does) and
//! the answer becomes a typed error ([`crate::error`]). And a connection
//! lost otherwise (refused, cut, no answer) is explained by coord-core's
//! sniff of what listens at the endpoint ([`sniffed`]).

use std::time::Duration;

use coord_core::backend::sniff::{self, Asked, Hint, Kind};
use coord_core::backend::tls_probe;
use coord_core::backend::TlsMaterial;

/// What tonic offers in the handshake: gRPC runs on HTTP/2.
const ALPN: &[&[u8]] = &[b"h2"];

/// `host:port` of an endpoint URL (`https://host:port/`, `host:port`).
pub(crate) fn host_port(endpoint: &str) -> &str {
    let rest = endpoint
        .strip_prefix("https://")
        .or_else(|| endpoint.strip_prefix("http://"))
        .unwrap_or(endpoint);
    rest.split('/').next().unwrap_or(rest)
}

/// Handshake with `endpoint` using the session's TLS settings, then wait
/// (within `timeout`) for the server's first word: the text of the fatal
/// alert it sent (e.g. `received fatal alert: BadCertificate`),
/// or `None` when it sent none (it took us, or could not be reached).
pub(crate) async fn server_alert(
    endpoint: &str,
    material: &TlsMaterial,
    timeout: Duration,
) -> Option<String> {
    let probe = tls_probe::refusal(host_port(endpoint), material, ALPN);
    tokio::time::timeout(timeout, probe).await.ok().flatten()
}

/// Whether the server at `endpoint` answers a TLS ClientHello in TLS (any
/// certificate: only the protocol matters here).
pub(crate) async fn speaks_tls(endpoint: &str, timeout: Duration) -> bool {
    let probe = tls_probe::speaks_tls(host_port(endpoint), ALPN);
    tokio::time::timeout(timeout, probe).await.unwrap_or(false)
}

/// What listens at the endpoints (coord-core's sniff, within `budget`)
/// when a connect failed: the hint naming the endpoint and the fix, or
/// `None` when an etcd answers there in the protocol asked for.
pub(crate) async fn sniffed(endpoints: &[String], tls: bool, budget: Duration) -> Option<Hint> {
    let asked = Asked {
        kind: Kind::Etcd,
        tls,
        tls_on: "it requires TLS on this port (use ?tls=true, an https:// endpoint, or \
                 EtcdOptions::with_tls)",
        tls_off: "drop ?tls=true and use an http:// endpoint",
    };
    let addrs: Vec<String> = endpoints.iter().map(|e| host_port(e).to_owned()).collect();
    sniff::diagnose(&addrs, &asked, budget).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_split_into_host_and_port() {
        assert_eq!(host_port("https://127.0.0.1:2379"), "127.0.0.1:2379");
        assert_eq!(host_port("https://h:1/"), "h:1");
        assert_eq!(host_port("https://[::1]:2379"), "[::1]:2379");
        assert_eq!(host_port("h:1"), "h:1");
    }
}

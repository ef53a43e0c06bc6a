//! Why a connection failed, when the client's error does not say.
//!
//! Under TLS 1.3 the client's handshake is over before the server has
//! checked the client's certificate: a server that requires mutual TLS and
//! refuses our certificate (or its absence) sends its fatal alert after
//! that, and tonic reports only "connection closed". And a plaintext client
//! on a TLS-only port just sees the connection drop ("broken pipe"). When
//! [`crate::connect`] fails so, one probe connection, with the session's
//! own TLS settings and the same rustls (ring provider), asks the server
//! directly and the answer becomes a typed error ([`crate::error`]).

use std::sync::Arc;
use std::time::Duration;

use coord_core::TlsMaterial;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

/// `host:port` of an endpoint URL (`https://host:port/`, `host:port`).
fn host_port(endpoint: &str) -> &str {
    let rest = endpoint
        .strip_prefix("https://")
        .or_else(|| endpoint.strip_prefix("http://"))
        .unwrap_or(endpoint);
    rest.split('/').next().unwrap_or(rest)
}

/// The host of `host:port` (`[v6]:port` → `v6`).
fn host(host_port: &str) -> &str {
    if let Some(v6) = host_port.strip_prefix('[') {
        return v6.split(']').next().unwrap_or(v6);
    }
    host_port.rsplit_once(':').map_or(host_port, |(h, _)| h)
}

/// A rustls client config as tonic builds it from the same material: the
/// CA given or the webpki roots, the identity if any, ring.
fn config(material: Option<&TlsMaterial>) -> Option<ClientConfig> {
    let mut roots = RootCertStore::empty();
    match material.and_then(|m| m.ca.as_deref()) {
        Some(ca) => {
            for cert in CertificateDer::pem_slice_iter(ca.as_bytes()) {
                roots.add(cert.ok()?).ok()?;
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let builder =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .ok()?
            .with_root_certificates(roots);
    let mut config = match material.and_then(|m| m.identity.as_ref()) {
        Some((cert, key)) => {
            let chain = CertificateDer::pem_slice_iter(cert.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .ok()?;
            let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).ok()?;
            builder.with_client_auth_cert(chain, key).ok()?
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    Some(config)
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
    let addr = host_port(endpoint);
    let name = material
        .server_name
        .clone()
        .unwrap_or_else(|| host(addr).to_owned());
    let name = ServerName::try_from(name).ok()?;
    let connector = TlsConnector::from(Arc::new(config(Some(material))?));
    let probe = async {
        let tcp = TcpStream::connect(addr).await.ok()?;
        let mut tls = match connector.connect(name, tcp).await {
            Ok(tls) => tls,
            Err(e) => return Some(error_text(&e)),
        };
        let mut byte = [0u8; 1];
        match tls.read(&mut byte).await {
            Err(e) => Some(error_text(&e)),
            Ok(_) => None,
        }
    };
    tokio::time::timeout(timeout, probe).await.ok().flatten()
}

/// Whether the server at `endpoint` answers a TLS ClientHello in TLS (any
/// certificate: only the protocol matters here).
pub(crate) async fn speaks_tls(endpoint: &str, timeout: Duration) -> bool {
    let addr = host_port(endpoint);
    let Ok(name) = ServerName::try_from(host(addr).to_owned()) else {
        return false;
    };
    let Some(config) = config(None) else {
        return false;
    };
    let connector = TlsConnector::from(Arc::new(config));
    let probe = async {
        let tcp = TcpStream::connect(addr).await.ok()?;
        match connector.connect(name, tcp).await {
            Ok(_) => Some(true),
            // The server sent a certificate (one we do not trust, or for
            // another name) or a TLS alert: it speaks TLS.
            Err(e) => {
                let text = error_text(&e).to_ascii_lowercase();
                Some(text.contains("certificate") || text.contains("alert"))
            }
        }
    };
    tokio::time::timeout(timeout, probe)
        .await
        .ok()
        .flatten()
        .unwrap_or(false)
}

/// What the I/O error says (rustls's error inside it, when there is one).
fn error_text(e: &std::io::Error) -> String {
    e.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_split_into_host_and_port() {
        assert_eq!(host_port("https://127.0.0.1:2379"), "127.0.0.1:2379");
        assert_eq!(host_port("https://h:1/"), "h:1");
        assert_eq!(host_port("h:1"), "h:1");
        assert_eq!(host("127.0.0.1:2379"), "127.0.0.1");
        assert_eq!(host("[::1]:2379"), "::1");
        assert_eq!(host("etcd-0.etcd:2379"), "etcd-0.etcd");
    }

    #[test]
    fn the_default_config_builds_with_the_public_roots() {
        assert!(config(None).is_some());
    }
}

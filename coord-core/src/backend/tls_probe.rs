//! One TLS handshake probe for the backends whose client keeps a refused
//! handshake to itself (ZooKeeper, etcd): a single connection with the
//! session's own TLS settings asks the server directly, and the caller
//! turns the answer into a typed error. Also the public web roots (Mozilla's
//! list, built in through `webpki-root-certs`; no system store is read), as
//! rustls roots and as PEM.
//!
//! rustls runs with the ring provider, as the backends' clients do.

use std::sync::{Arc, OnceLock};

use base64::Engine as _;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

use super::host::host_of;
use super::tls::TlsMaterial;

/// Make ring the process's rustls provider, once: clients that build their
/// rustls config from the process default need one, and a rustls with more
/// than one provider compiled in picks none. An application's own choice,
/// made earlier, stands.
pub fn install_ring_provider() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Whether `host` can name a server in a TLS handshake (the name its
/// certificate is checked against): a DNS name or an IP address.
pub fn is_server_name(host: &str) -> bool {
    ServerName::try_from(host).is_ok()
}

/// The public web roots (Mozilla's list) as PEM, made once: for clients
/// that take their trust anchors as PEM.
pub fn public_roots_pem() -> &'static str {
    static PEM: OnceLock<String> = OnceLock::new();
    PEM.get_or_init(|| {
        let engine = base64::engine::general_purpose::STANDARD;
        let mut pem = String::new();
        for cert in webpki_root_certs::TLS_SERVER_ROOT_CERTS {
            pem.push_str("-----BEGIN CERTIFICATE-----\n");
            let text = engine.encode(cert.as_ref());
            for line in text.as_bytes().chunks(64) {
                pem.push_str(&String::from_utf8_lossy(line));
                pem.push('\n');
            }
            pem.push_str("-----END CERTIFICATE-----\n");
        }
        pem
    })
}

/// A rustls client config as the backends' clients build it from the same
/// material: the CA given or the public web roots, the identity if any,
/// ring, and `alpn` (etcd's gRPC asks for `h2`); `None` for material they
/// would refuse too. The probe's, and coord-pg's connections'.
pub fn client_config(material: Option<&TlsMaterial>, alpn: &[&[u8]]) -> Option<ClientConfig> {
    let mut roots = RootCertStore::empty();
    match material.and_then(|m| m.ca.as_deref()) {
        Some(ca) => {
            for cert in CertificateDer::pem_slice_iter(ca.as_bytes()) {
                let _ = roots.add(cert.ok()?);
            }
        }
        None => {
            for cert in webpki_root_certs::TLS_SERVER_ROOT_CERTS {
                let _ = roots.add(cert.clone());
            }
        }
    }
    let builder =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .ok()?
            .with_root_certificates(roots);
    let mut config = match material.and_then(|m| m.identity.as_ref()) {
        Some((cert, key)) => {
            let chain = CertificateDer::pem_slice_iter(cert.as_bytes())
                .collect::<std::result::Result<Vec<_>, _>>()
                .ok()?;
            let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).ok()?;
            builder.with_client_auth_cert(chain, key).ok()?
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Some(config)
}

/// Handshake with `addr` (`host:port`) using the session's TLS `material`,
/// then read the server's first word (under TLS 1.3 a server refuses a
/// client certificate, or its absence, with an alert sent after the
/// client's handshake is over): what rustls said of the refusal (e.g.
/// `received fatal alert: BadCertificate`, `invalid peer certificate:
/// UnknownIssuer`), or `None` when the server took us, could not be
/// reached, or the material cannot make a config.
///
/// The certificate is checked against `material.server_name`, else the
/// host of `addr`. Unbounded in time: the caller bounds it.
///
/// # Cancel safety
/// Cancel safe: the probe connection is dropped.
pub async fn refusal(addr: &str, material: &TlsMaterial, alpn: &[&[u8]]) -> Option<String> {
    let name = material
        .server_name
        .clone()
        .unwrap_or_else(|| host_of(addr).to_owned());
    let name = ServerName::try_from(name).ok()?;
    let connector = TlsConnector::from(Arc::new(client_config(Some(material), alpn)?));
    let tcp = TcpStream::connect(addr).await.ok()?;
    let mut tls = match connector.connect(name, tcp).await {
        Ok(tls) => tls,
        Err(e) => return Some(e.to_string()),
    };
    let mut byte = [0u8; 1];
    match tls.read(&mut byte).await {
        Err(e) => Some(e.to_string()),
        Ok(_) => None,
    }
}

/// Whether the server at `addr` (`host:port`) answers a TLS ClientHello in
/// TLS, whatever its certificate: only the protocol matters here. `false`
/// too when it cannot be reached. Unbounded in time: the caller bounds it.
///
/// # Cancel safety
/// Cancel safe: the probe connection is dropped.
pub async fn speaks_tls(addr: &str, alpn: &[&[u8]]) -> bool {
    let Ok(name) = ServerName::try_from(host_of(addr).to_owned()) else {
        return false;
    };
    let Some(config) = client_config(None, alpn) else {
        return false;
    };
    let connector = TlsConnector::from(Arc::new(config));
    let Ok(tcp) = TcpStream::connect(addr).await else {
        return false;
    };
    match connector.connect(name, tcp).await {
        Ok(_) => true,
        // It sent a certificate (one not trusted here, or for another
        // name) or a TLS alert: it speaks TLS.
        Err(e) => {
            let text = e.to_string().to_ascii_lowercase();
            text.contains("certificate") || text.contains("alert")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_public_roots_make_a_config_and_pem() {
        assert!(client_config(None, &[]).is_some());
        assert!(is_server_name("zk-0.zk") && is_server_name("::1"));
        assert!(!is_server_name("bad host!"));
        assert!(client_config(None, &[b"h2"]).is_some());
        let pem = public_roots_pem();
        let count = CertificateDer::pem_slice_iter(pem.as_bytes()).count();
        assert_eq!(count, webpki_root_certs::TLS_SERVER_ROOT_CERTS.len());
        assert!(count > 100, "{count}");
    }

    #[tokio::test]
    async fn nobody_listening_is_no_finding() {
        // Port 1 on loopback: refused at once.
        let material = TlsMaterial {
            ca: None,
            identity: None,
            server_name: None,
        };
        assert_eq!(refusal("127.0.0.1:1", &material, &[]).await, None);
        assert!(!speaks_tls("127.0.0.1:1", &[]).await);
        assert!(!speaks_tls("[::1]:1", &[]).await);
    }
}

//! TLS for ZooKeeper sessions ([`crate::ZkOptions::tls`]), and why a
//! connection failed when the client does not say.
//!
//! The zookeeper client's own TLS (its `tls` feature, rustls) carries the
//! session: with TLS set, every host of the connect string is reached
//! through TLS (`secure_connect`). The client takes its trust anchors as
//! PEM: the `ca` file's, or without one the public web roots (Mozilla's
//! list, built in: `webpki-root-certs`), never the system's store. It
//! checks the server's certificate against the host of each address, and
//! has no way to check another name: `server_name` is refused on ZooKeeper
//! ([`coord_core::Error::InvalidArgument`]), rather than ignored.
//!
//! rustls runs with the ring provider: it is installed as the process's
//! default provider before the first TLS connection (unless the
//! application installed one first, which is then used).
//!
//! The client keeps a failed handshake to itself (it retries, then reports
//! a lost connection or a timeout). So [`connect`] makes one quick round
//! over the hosts first; when it fails, one probe connection with the
//! session's own settings asks the server directly, and a refused
//! certificate, a refused (or missing) client certificate, or a plaintext
//! client at a TLS-only port becomes a typed error at once. Anything else
//! (no server listening, a slow ensemble) gets the client's usual
//! connection attempts, for about the session timeout; a TLS session whose
//! handshake the server just dropped (as a plaintext port does, but also
//! an overloaded server) gets them too, and their error then says the
//! port may not have TLS.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use base64::Engine as _;
use coord_core::{Error, Result, TlsMaterial, TlsOptions};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;
use zookeeper_client as zk;

use crate::{ZkOptions, BACKEND};

/// How long diagnosing a failed connection may take, all hosts together.
const PROBE_BUDGET: Duration = Duration::from_secs(2);

/// How many hosts a diagnosis asks, at most.
const PROBE_HOSTS: usize = 3;

/// Why `server_name` cannot be set on ZooKeeper.
const SERVER_NAME_UNSUPPORTED: &str = "tls: server_name cannot be set on ZooKeeper: the \
     zookeeper client checks the server's certificate against the host of each address of \
     the connect string, and cannot check another name; connect by a name (or IP address) \
     the server's certificate carries instead";

/// A session's TLS, read from its files: what the client takes, and the
/// material itself for diagnosing a refused handshake.
#[derive(Clone)]
pub(crate) struct LoadedTls {
    client: zk::TlsOptions,
    material: TlsMaterial,
}

impl std::fmt::Debug for LoadedTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of logs.
        f.write_str("LoadedTls")
    }
}

/// Check TLS settings against the connect string's hosts, without I/O:
/// [`TlsOptions::check`], no `server_name` (see the module doc), and every
/// host a DNS name or an IP address (the name the certificate is checked
/// against).
pub(crate) fn check(tls: &TlsOptions, hosts: &str) -> Result<()> {
    tls.check()?;
    if tls.server_name.is_some() {
        return Err(Error::InvalidArgument(SERVER_NAME_UNSUPPORTED.into()));
    }
    for host_port in hosts.split(',') {
        let host = host_of(host_port.trim());
        if ServerName::try_from(host).is_err() {
            return Err(Error::InvalidArgument(format!(
                "tls: host {host:?} of the zookeeper connect string is not a DNS name or an IP \
                 address, which the server's certificate is checked against"
            )));
        }
    }
    Ok(())
}

/// Read the TLS files (after [`check`]) and build the client's options.
///
/// # Errors
/// [`Error::InvalidArgument`] for a bad setting, an unreadable file, or
/// PEM the client cannot use (naming the file, never its contents).
pub(crate) fn load(tls: &TlsOptions, hosts: &str) -> Result<LoadedTls> {
    check(tls, hosts)?;
    let material = tls.load()?;
    use_ring();
    let ca = match &material.ca {
        Some(pem) => pem.as_str(),
        None => public_roots_pem(),
    };
    let mut client = zk::TlsOptions::new().with_pem_ca(ca).map_err(|_| {
        Error::InvalidArgument(format!(
            "tls: the ca file {} holds no certificate the zookeeper client can use",
            shown(tls.ca.as_deref())
        ))
    })?;
    if let Some((cert, key)) = &material.identity {
        client = client.with_pem_identity(cert, key).map_err(|_| {
            Error::InvalidArgument(format!(
                "tls: the client certificate {} or its key {} cannot be used (PEM certificates, \
                 and a PKCS#8, PKCS#1 or SEC1 private key)",
                shown(tls.cert.as_deref()),
                shown(tls.key.as_deref())
            ))
        })?;
    }
    Ok(LoadedTls { client, material })
}

fn shown(path: Option<&std::path::Path>) -> String {
    path.map_or_else(
        || "<none>".into(),
        |p| format!("{:?}", p.display().to_string()),
    )
}

/// Make ring the process's rustls provider, once: the zookeeper client
/// builds its rustls config from the process default, and its rustls has
/// more than one provider compiled in. An application's own choice, made
/// earlier, stands.
fn use_ring() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Mozilla's roots as PEM, made once.
fn public_roots_pem() -> &'static str {
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

/// Open the client on `hosts`: through TLS (every host) when `tls` is set.
pub(crate) async fn dial(
    connector: zk::Connector,
    hosts: &str,
    tls: Option<&LoadedTls>,
) -> std::result::Result<zk::Client, zk::Error> {
    match tls {
        Some(tls) => {
            connector
                .with_tls(tls.client.clone())
                .secure_connect(hosts)
                .await
        }
        None => connector.connect(hosts).await,
    }
}

/// Open the session's client: one round over the hosts; when every host
/// failed, a diagnosis (see the module doc), then, unless it found the
/// cause, the client's usual attempts. `map` maps the client's error.
pub(crate) async fn connect(
    options: &ZkOptions,
    tls: Option<&LoadedTls>,
    map: impl Fn(zk::Error) -> Error,
) -> Result<zk::Client> {
    let first = dial(
        options.connector().with_fail_eagerly(),
        options.hosts(),
        tls,
    )
    .await;
    let suspicion = match first {
        Ok(client) => return Ok(client),
        Err(zk::Error::NoHosts) => {
            match diagnose(options.hosts(), tls.map(|t| &t.material)).await {
                Some(Finding::Certain(err)) => return Err(err),
                Some(Finding::Suspected(note)) => Some(note),
                None => None,
            }
        }
        Err(e) => return Err(map(e)),
    };
    dial(options.connector(), options.hosts(), tls)
        .await
        .map_err(|e| match (map(e), suspicion) {
            (Error::ConnectionLost(m), Some(note)) => Error::ConnectionLost(format!("{m}; {note}")),
            (other, _) => other,
        })
}

/// What a diagnosis found.
enum Finding {
    /// The cause, for certain: the error to return at once.
    Certain(Error),
    /// A likely cause, which one probe cannot tell from a passing fault:
    /// said in the error should the client's own attempts fail too.
    Suspected(String),
}

/// Ask the hosts (a few, within [`PROBE_BUDGET`]) why a connection failed:
/// the typed error, or `None` when no probe found a cause.
async fn diagnose(hosts: &str, material: Option<&TlsMaterial>) -> Option<Finding> {
    let probe = async {
        for host_port in hosts.split(',').map(str::trim).take(PROBE_HOSTS) {
            let found = match material {
                Some(material) => tls_refusal(host_port, material).await,
                None => plaintext_at_tls_port(host_port).await,
            };
            if found.is_some() {
                return found;
            }
        }
        None
    };
    tokio::time::timeout(PROBE_BUDGET, probe)
        .await
        .ok()
        .flatten()
}

/// Handshake with `host_port` using the session's TLS settings, then read
/// the server's first word (under TLS 1.3 a server refuses a client
/// certificate after the client's handshake is over, with an alert): the
/// refusal as a typed error, or `None`.
async fn tls_refusal(host_port: &str, material: &TlsMaterial) -> Option<Finding> {
    let name = ServerName::try_from(host_of(host_port).to_owned()).ok()?;
    let connector = TlsConnector::from(Arc::new(config(Some(material))?));
    let tcp = TcpStream::connect(host_port).await.ok()?;
    let text = match connector.connect(name, tcp).await {
        Err(e) => error_text(&e),
        Ok(mut tls) => {
            let mut byte = [0u8; 1];
            match tls.read(&mut byte).await {
                Err(e) => error_text(&e),
                Ok(_) => return None,
            }
        }
    };
    classify(host_port, &text)
}

/// What a TLS handshake with `host_port` ended with (`text`:
/// [`error_text`]) says: a certificate refused by either side is certain;
/// a connection closed mid-handshake (or answered in something else than
/// TLS) only suggests a plaintext port, as an overloaded server may do the
/// same.
fn classify(host_port: &str, text: &str) -> Option<Finding> {
    if text.contains("invalid peer certificate") {
        return Some(Finding::Certain(Error::Unauthenticated {
            backend: BACKEND,
            hint: format!(
                "the certificate of the ZooKeeper server at {host_port} is not trusted ({text}): \
                 set ca= to the PEM file of the authority that signed it (TlsOptions::with_ca; \
                 without ca only the public web roots are trusted), and connect by a name or \
                 IP address the certificate carries (server_name= cannot be set on ZooKeeper)"
            ),
        }));
    }
    if text.contains("alert") {
        return Some(Finding::Certain(Error::Unauthenticated {
            backend: BACKEND,
            hint: format!(
                "the ZooKeeper server at {host_port} refused the TLS client certificate, or its \
                 absence ({text}): it requires mutual TLS; set cert= and key= \
                 (TlsOptions::with_identity) to a client certificate signed by an authority the \
                 server trusts"
            ),
        }));
    }
    if text.contains("corrupt message") || text.contains("eof") {
        return Some(Finding::Suspected(format!(
            "the server at {host_port} did not answer in TLS ({text}): it may not have TLS on \
             this port (a plaintext port needs no tls=true)"
        )));
    }
    None
}

/// Whether the server at `host_port` answers a TLS ClientHello in TLS: the
/// error for a plaintext session at a TLS-only port, or `None`.
async fn plaintext_at_tls_port(host_port: &str) -> Option<Finding> {
    let name = ServerName::try_from(host_of(host_port).to_owned()).ok()?;
    let connector = TlsConnector::from(Arc::new(config(None)?));
    let tcp = TcpStream::connect(host_port).await.ok()?;
    let speaks_tls = match connector.connect(name, tcp).await {
        Ok(_) => true,
        // It sent a certificate (one not trusted here, or for another
        // name) or a TLS alert: it speaks TLS.
        Err(e) => {
            let text = error_text(&e);
            text.contains("certificate") || text.contains("alert")
        }
    };
    speaks_tls.then(|| {
        Finding::Certain(Error::ConnectionLost(format!(
            "the ZooKeeper server at {host_port} speaks TLS only: the server may require TLS \
             (`?tls=true` in the URL, ZkOptions::tls)"
        )))
    })
}

/// A rustls client config as the zookeeper client builds it from the same
/// material (the CA given or the public roots, the identity if any), on
/// ring; `None` for material it would refuse too.
fn config(material: Option<&TlsMaterial>) -> Option<ClientConfig> {
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
    Some(match material.and_then(|m| m.identity.as_ref()) {
        Some((cert, key)) => {
            let chain = CertificateDer::pem_slice_iter(cert.as_bytes())
                .collect::<std::result::Result<Vec<_>, _>>()
                .ok()?;
            let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).ok()?;
            builder.with_client_auth_cert(chain, key).ok()?
        }
        None => builder.with_no_client_auth(),
    })
}

/// The I/O error (with what rustls said inside it), lower case.
fn error_text(e: &std::io::Error) -> String {
    e.to_string().to_ascii_lowercase()
}

/// The host of `host:port` (`[v6]:port` → `v6`; no port → all of it).
fn host_of(host_port: &str) -> &str {
    if let Some(v6) = host_port.strip_prefix('[') {
        return v6.split(']').next().unwrap_or(v6);
    }
    match host_port.rsplit_once(':') {
        // A bare IPv6 address has several colons and no port.
        Some((host, _)) if !host.contains(':') => host,
        Some(_) => host_port,
        None => host_port,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_split_from_ports() {
        assert_eq!(host_of("127.0.0.1:2181"), "127.0.0.1");
        assert_eq!(host_of("[::1]:2181"), "::1");
        assert_eq!(host_of("zk-0.zk:2181"), "zk-0.zk");
        assert_eq!(host_of("zk"), "zk");
    }

    #[test]
    fn the_public_roots_are_pem_the_client_takes() {
        let pem = public_roots_pem();
        let count = CertificateDer::pem_slice_iter(pem.as_bytes()).count();
        assert_eq!(count, webpki_root_certs::TLS_SERVER_ROOT_CERTS.len());
        assert!(count > 100, "{count}");
        assert!(zk::TlsOptions::new().with_pem_ca(pem).is_ok());
        assert!(config(None).is_some());
    }

    #[test]
    fn server_name_and_bad_hosts_are_refused_before_any_io() {
        let tls = TlsOptions::new();
        assert!(check(&tls, "127.0.0.1:2181,localhost:2182,[::1]:2183").is_ok());
        match check(
            &tls.clone().with_server_name("zk.example"),
            "127.0.0.1:2181",
        ) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("server_name"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            check(&tls, "bad host!:2181"),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn handshake_failures_are_classified() {
        assert!(matches!(
            classify("h:1", "invalid peer certificate: unknownissuer"),
            Some(Finding::Certain(Error::Unauthenticated { hint, .. })) if hint.contains("ca=")
        ));
        assert!(matches!(
            classify("h:1", "received fatal alert: badcertificate"),
            Some(Finding::Certain(Error::Unauthenticated { hint, .. }))
                if hint.contains("cert=") && hint.contains("key=")
        ));
        assert!(matches!(
            classify("h:1", "tls handshake eof"),
            Some(Finding::Suspected(note)) if note.contains("did not answer in TLS")
        ));
        assert!(classify("h:1", "connection refused").is_none());
    }
}

//! TLS for ZooKeeper sessions ([`crate::ZkOptions::with_tls`]): checking the
//! settings, reading the files into the client's options, and dialling.
//!
//! The zookeeper client's own TLS (its `tls` feature, rustls) carries the
//! session: with TLS set, every host of the connect string is reached
//! through TLS (`secure_connect`). The client takes its trust anchors as
//! PEM: the `ca` file's, or without one the public web roots (Mozilla's
//! list, built in: coord-core's `tls_probe::public_roots_pem`), never the
//! system's store. It checks the server's certificate against the host of
//! each address, and has no way to check another name: `server_name` is
//! refused on ZooKeeper ([`coord_core::Error::InvalidArgument`]), rather
//! than ignored.
//!
//! rustls runs with the ring provider: it is installed as the process's
//! default provider before the first TLS connection (unless the
//! application installed one first, which is then used). Why a handshake
//! failed is asked of the server by [`crate::connect`].

use coord_core::backend::host::host_of;
use coord_core::backend::tls_probe;
use coord_core::backend::TlsMaterial;
use coord_core::{Error, Result, TlsOptions};
use zookeeper_client as zk;

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
    pub(crate) material: TlsMaterial,
}

impl std::fmt::Debug for LoadedTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of logs.
        f.write_str("LoadedTls")
    }
}

/// Check TLS settings against the connect string's hosts, without I/O:
/// [`TlsOptions::validate`], no `server_name` (see the module doc), and every
/// host a DNS name or an IP address (the name the certificate is checked
/// against).
pub(crate) fn check(tls: &TlsOptions, hosts: &str) -> Result<()> {
    tls.validate()?;
    if tls.server_name.is_some() {
        return Err(Error::InvalidArgument(SERVER_NAME_UNSUPPORTED.into()));
    }
    for host_port in hosts.split(',') {
        let host = host_of(host_port.trim());
        if !tls_probe::is_server_name(host) {
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
    tls_probe::install_ring_provider();
    let ca = match &material.ca {
        Some(pem) => pem.as_str(),
        None => tls_probe::public_roots_pem(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_public_roots_are_pem_the_client_takes() {
        assert!(zk::TlsOptions::new()
            .with_pem_ca(tls_probe::public_roots_pem())
            .is_ok());
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
}

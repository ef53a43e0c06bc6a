//! TLS settings, the same for every server backend.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Where a session's TLS material is, and which server name to check.
///
/// Built with [`TlsOptions::new`] and its `with_` methods; checked by
/// [`TlsOptions::validate`] (no I/O) and read by [`TlsOptions::load`].
///
/// [`TlsOptions`] names PEM files: the certificate authorities to trust
/// (`ca`), and for mutual TLS the client's certificate chain and private key
/// (`cert`, `key`); `server_name` overrides the name the server's
/// certificate is checked against (by default the host of the address
/// connected to, a DNS name or an IP address). In URLs the same settings
/// are query parameters on every backend: `?tls=true&ca=PATH&cert=PATH&key=PATH&server_name=NAME`
/// (`rediss://` turns TLS on for Redis).
///
/// Without `ca`, the server's certificate must chain to one of the public
/// web roots (Mozilla's list, built in: no system library or file is read).
///
/// [`TlsOptions::load`] reads the files, once, when a session connects;
/// the key's contents never reach an error, a log line or `Debug` output.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TlsOptions {
    /// PEM file of the certificate authorities to trust; `None`: the
    /// built-in public roots.
    pub ca: Option<PathBuf>,
    /// PEM file of the client certificate (chain), for mutual TLS.
    pub cert: Option<PathBuf>,
    /// PEM file of the client's private key (PKCS#8, PKCS#1 or SEC1).
    pub key: Option<PathBuf>,
    /// The name the server's certificate must carry; `None`: the host
    /// connected to.
    pub server_name: Option<String>,
}

impl TlsOptions {
    /// TLS with the built-in public roots and no client certificate.
    pub fn new() -> Self {
        Self::default()
    }

    /// Trust the certificate authorities in the PEM file `path` (instead of
    /// the built-in public roots).
    pub fn with_ca(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca = Some(path.into());
        self
    }

    /// Present the client certificate (chain) in `cert` with the private
    /// key in `key`, both PEM files: mutual TLS.
    pub fn with_identity(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        self.cert = Some(cert.into());
        self.key = Some(key.into());
        self
    }

    /// Check the server's certificate against `name` instead of the host
    /// connected to (when connecting by IP address, or through a proxy).
    pub fn with_server_name(mut self, name: impl Into<String>) -> Self {
        self.server_name = Some(name.into());
        self
    }

    /// Check the settings without any I/O: a certificate needs its key and
    /// a key its certificate; a server name must be a DNS name or an IP
    /// address.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming what is missing or malformed.
    pub fn validate(&self) -> Result<()> {
        match (&self.cert, &self.key) {
            (Some(_), None) => {
                return Err(Error::InvalidArgument(
                    "tls: a client certificate (cert) needs its private key (key)".into(),
                ))
            }
            (None, Some(_)) => {
                return Err(Error::InvalidArgument(
                    "tls: a private key (key) needs its client certificate (cert)".into(),
                ))
            }
            _ => {}
        }
        for (what, path) in [("ca", &self.ca), ("cert", &self.cert), ("key", &self.key)] {
            if path.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
                return Err(Error::InvalidArgument(format!(
                    "tls: the {what} path is empty"
                )));
            }
        }
        if let Some(name) = &self.server_name {
            let ok = !name.is_empty()
                && name.len() <= 253
                && (name.parse::<std::net::IpAddr>().is_ok()
                    || name.split('.').all(|label| {
                        !label.is_empty()
                            && label.len() <= 63
                            && label
                                .chars()
                                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                    }));
            if !ok {
                return Err(Error::InvalidArgument(format!(
                    "tls: server_name {name:?} is not a DNS name or an IP address"
                )));
            }
        }
        Ok(())
    }

    /// Read the files named, after [`validate`](Self::validate)ing the settings.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when a setting is wrong, a file cannot be
    /// read, or holds no PEM block of the kind expected (the message names
    /// the file, never its contents).
    pub fn load(&self) -> Result<TlsMaterial> {
        self.validate()?;
        let ca = self
            .ca
            .as_deref()
            .map(|p| read_pem(p, "ca", &["CERTIFICATE"]))
            .transpose()?;
        let cert = self
            .cert
            .as_deref()
            .map(|p| read_pem(p, "cert", &["CERTIFICATE"]))
            .transpose()?;
        let key = self
            .key
            .as_deref()
            .map(|p| {
                read_pem(
                    p,
                    "key",
                    &["PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY"],
                )
            })
            .transpose()?;
        Ok(TlsMaterial {
            ca,
            identity: cert.zip(key),
            server_name: self.server_name.clone(),
        })
    }
}

/// Read the PEM file `path`, checking it holds a block of one of `kinds`.
fn read_pem(path: &Path, what: &str, kinds: &[&str]) -> Result<String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::InvalidArgument(format!(
            "tls: cannot read the {what} file {}: {e}",
            path.display()
        ))
    })?;
    let found = kinds
        .iter()
        .any(|k| text.contains(&format!("-----BEGIN {k}-----")));
    if !found {
        return Err(Error::InvalidArgument(format!(
            "tls: the {what} file {} holds no PEM {} block",
            path.display(),
            kinds.join(" / ")
        )));
    }
    Ok(text)
}

/// The PEM texts [`TlsOptions::load`] read, for a backend to hand to its
/// client. `Debug` never shows the private key.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TlsMaterial {
    /// The trusted authorities (PEM), or `None` for the public roots.
    pub ca: Option<String>,
    /// The client certificate chain and private key (PEM), for mutual TLS.
    pub identity: Option<(String, String)>,
    /// The name to check the server's certificate against, if not the host.
    pub server_name: Option<String>,
}

impl std::fmt::Debug for TlsMaterial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsMaterial")
            .field("ca", &self.ca.as_ref().map(|_| "<pem>"))
            .field(
                "identity",
                &self.identity.as_ref().map(|_| "<certificate, key: ***>"),
            )
            .field("server_name", &self.server_name)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_needs_its_key_and_the_reverse() {
        let mut only_cert = TlsOptions::new();
        only_cert.cert = Some("c.pem".into());
        assert!(
            matches!(only_cert.validate(), Err(Error::InvalidArgument(m)) if m.contains("key"))
        );
        let mut only_key = TlsOptions::new();
        only_key.key = Some("k.pem".into());
        assert!(
            matches!(only_key.validate(), Err(Error::InvalidArgument(m)) if m.contains("cert"))
        );
        assert!(TlsOptions::new()
            .with_identity("c.pem", "k.pem")
            .validate()
            .is_ok());
    }

    #[test]
    fn server_names_are_dns_names_or_addresses() {
        for good in ["localhost", "etcd-0.etcd.svc", "127.0.0.1", "::1"] {
            assert!(
                TlsOptions::new().with_server_name(good).validate().is_ok(),
                "{good}"
            );
        }
        for bad in ["", "a..b", "has space", "x/y"] {
            assert!(
                TlsOptions::new().with_server_name(bad).validate().is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn load_names_the_file_and_never_prints_the_key() {
        let dir = std::env::temp_dir().join(format!("coord-tls-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let key = dir.join("key.pem");
        let secret = "c2VjcmV0LWtleS1ieXRlcw";
        std::fs::write(
            &key,
            format!("-----BEGIN PRIVATE KEY-----\n{secret}\n-----END PRIVATE KEY-----\n"),
        )
        .expect("write");
        let cert = dir.join("cert.pem");
        std::fs::write(&cert, "no pem here").expect("write");
        let err = TlsOptions::new()
            .with_identity(&cert, &key)
            .load()
            .expect_err("cert.pem holds no certificate");
        let msg = err.to_string();
        assert!(
            msg.contains("cert.pem") && msg.contains("CERTIFICATE"),
            "{msg}"
        );
        std::fs::write(
            &cert,
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        )
        .expect("write");
        let material = TlsOptions::new()
            .with_identity(&cert, &key)
            .load()
            .expect("both read");
        assert!(!format!("{material:?}").contains(secret));
        let missing = TlsOptions::new()
            .with_ca(dir.join("nope.pem"))
            .load()
            .expect_err("no such file");
        assert!(missing.to_string().contains("nope.pem"), "{missing}");
        std::fs::remove_dir_all(&dir).ok();
    }
}

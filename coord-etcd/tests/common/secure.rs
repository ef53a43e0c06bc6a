//! The secured test etcd (scripts/servers/etcd-secure.sh): a TLS-only
//! client port that requires client certificates (mutual TLS), with
//! authentication on. Its address, the `coord` user's and root's passwords
//! come from `COORD_TEST_ETCD_SECURE*`, the certificates from
//! `COORD_TEST_CERTS`; a test that cannot find them fails, naming what is
//! missing.

use std::path::PathBuf;

use coord_core::TlsOptions;
use coord_etcd::EtcdOptions;

/// What a test needs to reach the secured etcd.
pub struct SecureEtcd {
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    pub user: String,
    pub password: String,
    pub root_password: String,
    /// Seconds of disuse after which the server drops an auth token.
    pub token_ttl: u64,
    pub certs: PathBuf,
}

fn var(name: &str) -> String {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => v,
        _ => panic!(
            "{name} is not set: this test needs the secured etcd \
             (scripts/servers/etcd-secure.sh; scripts/test-all starts it)"
        ),
    }
}

impl SecureEtcd {
    pub fn from_env() -> Self {
        SecureEtcd {
            url: var("COORD_TEST_ETCD_SECURE"),
            user: var("COORD_TEST_ETCD_SECURE_USER"),
            password: var("COORD_TEST_ETCD_SECURE_PASSWORD"),
            root_password: var("COORD_TEST_ETCD_SECURE_ROOT_PASSWORD"),
            token_ttl: var("COORD_TEST_ETCD_SECURE_TOKEN_TTL")
                .parse()
                .expect("COORD_TEST_ETCD_SECURE_TOKEN_TTL is a number of seconds"),
            certs: PathBuf::from(var("COORD_TEST_CERTS")),
        }
    }

    /// A file of the test certificates (make_test_certs in scripts/lib.sh).
    pub fn cert(&self, name: &str) -> PathBuf {
        self.certs.join(name)
    }

    /// Mutual TLS as the server wants it: our CA, the client certificate.
    pub fn tls(&self) -> TlsOptions {
        TlsOptions::new()
            .with_ca(self.cert("ca.pem"))
            .with_identity(self.cert("client.pem"), self.cert("client-key.pem"))
    }

    /// `host:port` of the server.
    pub fn host_port(&self) -> String {
        self.url
            .trim_start_matches("https://")
            .trim_end_matches('/')
            .to_owned()
    }

    /// Options for the `coord` user over mutual TLS.
    pub fn options(&self) -> EtcdOptions {
        EtcdOptions::new([self.url.clone()])
            .with_tls(self.tls())
            .with_user(self.user.clone(), self.password.clone())
    }

    /// Built without TLS: the secured etcd cannot be reached.
    #[cfg(not(feature = "tls"))]
    pub async fn raw_client(&self, _: &str, _: &str) -> etcd_client::Client {
        panic!("the secured etcd needs coord-etcd's `tls` feature")
    }

    /// A raw etcd client over mutual TLS as `user` (for what coord does
    /// not do: revoking a lease, administering users).
    #[cfg(feature = "tls")]
    pub async fn raw_client(&self, user: &str, password: &str) -> etcd_client::Client {
        let read = |name: &str| {
            std::fs::read_to_string(self.cert(name))
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", self.cert(name).display()))
        };
        let tls = etcd_client::TlsOptions::new()
            .ca_certificate(etcd_client::Certificate::from_pem(read("ca.pem")))
            .identity(etcd_client::Identity::from_pem(
                read("client.pem"),
                read("client-key.pem"),
            ));
        let options = etcd_client::ConnectOptions::new()
            .with_tls(tls)
            .with_user(user, password)
            .with_auto_token_refresh(true);
        etcd_client::Client::connect([self.url.clone()], Some(options))
            .await
            .unwrap_or_else(|e| panic!("cannot reach the secured etcd at {}: {e}", self.url))
    }
}

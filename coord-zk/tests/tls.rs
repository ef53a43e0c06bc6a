//! TLS against the secured ZooKeeper (`COORD_TEST_ZK_SECURE`,
//! scripts/servers/zk-secure.sh: a TLS-only port that requires a client
//! certificate): a session through mutual TLS works, and every refusal is
//! a prompt, typed error saying what to fix.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use coord_core::{Error, TlsOptions};
use coord_zk::ZkOptions;

/// Well under the session timeout asked for below (10 s): a refused
/// handshake is reported at once, not after the client's retries.
const PROMPT: Duration = Duration::from_secs(5);

fn tls(ca: &str, identity: Option<(&str, &str)>) -> TlsOptions {
    let certs = common::certs_dir();
    let tls = TlsOptions::new().with_ca(certs.join(ca));
    match identity {
        Some((cert, key)) => tls.with_identity(certs.join(cert), certs.join(key)),
        None => tls,
    }
}

fn secure(tls: Option<TlsOptions>) -> ZkOptions {
    let options = ZkOptions::new(&common::secure_addr_from_env())
        .with_session_timeout(Duration::from_secs(10));
    match tls {
        Some(tls) => options.with_tls(tls),
        None => options,
    }
}

/// Connect with `options`, expecting a failure within [`PROMPT`].
async fn refused(options: &ZkOptions) -> Error {
    let started = Instant::now();
    let result = tokio::time::timeout(Duration::from_secs(30), coord_zk::connect(options.clone()))
        .await
        .expect("connect returns");
    let err = match result {
        Ok(_) => panic!("connected with {options:?}"),
        Err(e) => e,
    };
    assert!(
        started.elapsed() < PROMPT,
        "took {:?} to fail: {err}",
        started.elapsed()
    );
    eprintln!("refused as expected: {err}");
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains("PRIVATE KEY"), "{shown}");
    err
}

/// Connect with `options`, expecting a prompt `Unauthenticated` from the zk
/// backend whose hint contains every one of `needles`.
async fn unauthenticated(options: &ZkOptions, needles: &[&str]) {
    match refused(options).await {
        Error::Unauthenticated { backend, hint } => {
            assert_eq!(backend, "zk");
            for needle in needles {
                assert!(hint.contains(needle), "{needle:?} not in {hint}");
            }
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn mutual_tls_with_the_client_certificate_works() {
    let options = secure(Some(tls("ca.pem", Some(("client.pem", "client-key.pem")))));
    let session = common::connect(&options).await;
    let session = coord_core::Session::new(std::sync::Arc::new(session));
    let dir = format!("/coord-tls-test/{}", uuid::Uuid::new_v4().simple());
    session.ensure_dir(&dir).await.expect("a write through TLS");
    session.close().await.expect("close");
}

#[tokio::test]
async fn an_untrusted_server_certificate_is_unauthenticated_naming_ca() {
    // The rogue CA did not sign the server's certificate.
    let options = secure(Some(tls(
        "rogue-ca.pem",
        Some(("client.pem", "client-key.pem")),
    )));
    unauthenticated(&options, &["ca=", "unknownissuer"]).await;
}

#[tokio::test]
async fn without_ca_only_the_public_roots_are_trusted() {
    // No `ca`: the test CA is not one of the public web roots.
    let certs = common::certs_dir();
    let tls =
        TlsOptions::new().with_identity(certs.join("client.pem"), certs.join("client-key.pem"));
    unauthenticated(&secure(Some(tls)), &["ca=", "public web roots"]).await;
}

#[tokio::test]
async fn a_rogue_client_certificate_is_unauthenticated_naming_cert_and_key() {
    let options = secure(Some(tls(
        "ca.pem",
        Some(("rogue-client.pem", "rogue-client-key.pem")),
    )));
    unauthenticated(&options, &["cert=", "key="]).await;
}

#[tokio::test]
async fn no_client_certificate_is_unauthenticated_naming_cert_and_key() {
    let options = secure(Some(tls("ca.pem", None)));
    unauthenticated(&options, &["cert=", "key="]).await;
}

#[tokio::test]
async fn a_plaintext_session_at_the_tls_port_is_told_tls_may_be_required() {
    match refused(&secure(None)).await {
        Error::ConnectionLost(m) => {
            assert!(
                m.contains("may require TLS") && m.contains("tls=true"),
                "{m}"
            );
        }
        other => panic!("{other:?}"),
    }
}

/// The plaintext server drops a TLS handshake, as an overloaded server
/// might: not a verdict on its own; the sniff that follows finds a
/// plaintext ZooKeeper there, and the error says the port has no TLS.
#[tokio::test]
async fn a_tls_session_at_a_plaintext_port_is_told_it_may_not_have_tls() {
    let options = common::options_from_env()
        .with_session_timeout(Duration::from_secs(2))
        .with_tls(tls("ca.pem", Some(("client.pem", "client-key.pem"))));
    let result = tokio::time::timeout(Duration::from_secs(30), coord_zk::connect(options.clone()))
        .await
        .expect("connect returns");
    match result {
        Err(Error::ConnectionLost(m)) => assert!(m.contains("did not answer in TLS"), "{m}"),
        Err(other) => panic!("{other:?}"),
        Ok(_) => panic!("connected through TLS to a plaintext port"),
    }
}

/// Refused before any I/O: the address is a black hole, where a connect
/// attempt would hang.
#[tokio::test]
async fn bad_settings_are_refused_before_any_io() {
    let base = ZkOptions::new("192.0.2.1:2281");
    let certs = common::certs_dir();
    let cases = [
        // ZooKeeper's client cannot check another name.
        tls("ca.pem", None).with_server_name("localhost"),
        TlsOptions::new().with_ca(certs.join("no-such-file.pem")),
        // A key is not a CA.
        TlsOptions::new().with_ca(certs.join("client-key.pem")),
        TlsOptions::new()
            .with_ca(certs.join("ca.pem"))
            .with_identity(certs.join("client.pem"), Path::new("/nonexistent/key.pem")),
    ];
    for tls in cases {
        let options = base.clone().with_tls(tls.clone());
        let result =
            tokio::time::timeout(Duration::from_secs(1), coord_zk::connect(options.clone()))
                .await
                .unwrap_or_else(|_| panic!("{tls:?}: not refused at once"));
        match result {
            Err(Error::InvalidArgument(m)) => {
                assert!(m.starts_with("tls:"), "{m}");
                assert!(!m.contains("PRIVATE KEY"), "{m}");
            }
            Err(other) => panic!("{tls:?}: {other:?}"),
            Ok(_) => panic!("{tls:?}: connected"),
        }
    }
    assert_eq!(
        base.clone()
            .with_tls(tls("ca.pem", None))
            .tls()
            .and_then(|t| t.ca.as_deref()),
        Some(certs.join("ca.pem").as_path())
    );
    assert!(base.tls().is_none());
}

/// The secured server takes SASL DIGEST-MD5 logins too (its JAAS `Server`
/// section has the test user), through TLS; a wrong password is refused.
#[tokio::test]
async fn sasl_digest_through_mutual_tls() {
    let user = common::secure_env("COORD_TEST_ZK_SECURE_USER");
    let password = common::secure_env("COORD_TEST_ZK_SECURE_PASSWORD");
    let with_tls = || secure(Some(tls("ca.pem", Some(("client.pem", "client-key.pem")))));
    let session =
        common::connect(&with_tls().with_sasl_digest(user.clone(), password.clone())).await;
    let session = coord_core::Session::new(std::sync::Arc::new(session));
    let dir = format!("/coord-tls-test/sasl-{}", uuid::Uuid::new_v4().simple());
    session
        .ensure_dir(&dir)
        .await
        .expect("a write as the SASL user");
    session.close().await.expect("close");
    let wrong = with_tls().with_sasl_digest(user, format!("{password}-wrong"));
    match refused(&wrong).await {
        Error::Unauthenticated {
            backend: "zk",
            hint,
        } => {
            assert!(!hint.contains(&password), "{hint}");
        }
        other => panic!("{other:?}"),
    }
}

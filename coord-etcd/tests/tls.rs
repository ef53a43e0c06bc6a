//! TLS refusals are typed and say what to fix, live on the secured etcd
//! (scripts/servers/etcd-secure.sh: TLS-only client port, client
//! certificates required, auth on). Each case fails promptly (well within
//! the connect timeout), with no retrying until the request timeout.
//! Needs `COORD_TEST_ETCD_SECURE*`, `COORD_TEST_CERTS` and, for the
//! TLS-client-on-a-plaintext-port case, `COORD_TEST_ETCD`.

#![cfg(feature = "tls")]

mod common;

use std::time::{Duration, Instant};

use common::secure::SecureEtcd;
use coord_core::{CreateMode, Error, TlsOptions};
use coord_etcd::EtcdOptions;

/// A failure must come this fast (the request timeout is 5 s: a retry
/// loop would show).
const PROMPT: Duration = Duration::from_secs(3);

/// Connect with `options` (the coord user's credentials added), expect a
/// failure within [`PROMPT`], and give it.
async fn refused(server: &SecureEtcd, options: EtcdOptions) -> Error {
    let options = options.with_user(server.user.clone(), server.password.clone());
    let started = Instant::now();
    let err = coord_etcd::connect(options)
        .await
        .map(|s| s.id())
        .expect_err("the connection was accepted");
    assert!(
        started.elapsed() < PROMPT,
        "took {:?} to fail: {err}",
        started.elapsed()
    );
    let shown = format!("{err} {err:?}");
    assert!(
        !shown.contains(&server.password),
        "the password is shown: {shown}"
    );
    err
}

fn hint(err: &Error) -> &str {
    match err {
        Error::Unauthenticated { backend, hint } => {
            assert_eq!(*backend, "etcd");
            hint
        }
        other => panic!("expected Unauthenticated, got {other:?}"),
    }
}

/// Mutual TLS and the password: a session works end to end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_with_a_password_works() {
    let server = SecureEtcd::from_env();
    let session = coord_etcd::connect(server.options())
        .await
        .expect("a session over mutual TLS");
    let path = format!("/tls-test/{}", uuid::Uuid::new_v4().simple());
    session
        .create(&path, b"over tls", CreateMode::Ephemeral)
        .await
        .expect("create over TLS");
    let node = session
        .get(&path)
        .await
        .expect("get over TLS")
        .expect("the node is there");
    assert_eq!(node.data, b"over tls");
    session.close().await.expect("close");
}

/// Endpoints written `http://` are dialled over TLS when TLS is on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_endpoints_are_dialled_over_tls() {
    let server = SecureEtcd::from_env();
    let options = EtcdOptions::new([format!("http://{}", server.host_port())])
        .with_tls(server.tls())
        .with_user(server.user.clone(), server.password.clone());
    let session = coord_etcd::connect(options).await.expect("a TLS session");
    session.exists("/").await.expect("a request over TLS");
    session.close().await.expect("close");
}

/// Without a CA the public roots are trusted, and the test CA is not one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_certificate_from_an_unknown_ca_names_ca() {
    let server = SecureEtcd::from_env();
    let client = (server.cert("client.pem"), server.cert("client-key.pem"));
    for tls in [
        TlsOptions::new().with_identity(&client.0, &client.1),
        TlsOptions::new()
            .with_ca(server.cert("rogue-ca.pem"))
            .with_identity(&client.0, &client.1),
    ] {
        let err = refused(
            &server,
            EtcdOptions::new([server.url.clone()]).with_tls(tls),
        )
        .await;
        let hint = hint(&err);
        assert!(hint.contains("ca="), "{hint}");
        assert!(hint.contains("UnknownIssuer"), "{hint}");
    }
}

/// A certificate without the name checked: the hint names server_name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_mismatch_names_server_name() {
    let server = SecureEtcd::from_env();
    let options = EtcdOptions::new([server.url.clone()])
        .with_tls(server.tls().with_server_name("wrong.example"));
    let err = refused(&server, options).await;
    let hint = hint(&err);
    assert!(hint.contains("server_name="), "{hint}");
    assert!(hint.contains("wrong.example"), "{hint}");
}

/// The name given replaces the host: `localhost` is on the certificate,
/// so connecting by IP with server_name=localhost works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_name_replaces_the_host() {
    let server = SecureEtcd::from_env();
    let options = server
        .options()
        .with_tls(server.tls().with_server_name("localhost"));
    let session = coord_etcd::connect(options).await.expect("a TLS session");
    session.close().await.expect("close");
}

/// The server requires a client certificate: none, or one from an
/// authority it does not trust, is refused with a hint naming cert=/key=.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_untrusted_client_certificate_names_cert_and_key() {
    let server = SecureEtcd::from_env();
    for tls in [
        TlsOptions::new().with_ca(server.cert("ca.pem")),
        TlsOptions::new()
            .with_ca(server.cert("ca.pem"))
            .with_identity(
                server.cert("rogue-client.pem"),
                server.cert("rogue-client-key.pem"),
            ),
    ] {
        let err = refused(
            &server,
            EtcdOptions::new([server.url.clone()]).with_tls(tls),
        )
        .await;
        let hint = hint(&err);
        assert!(hint.contains("cert=") && hint.contains("key="), "{hint}");
        assert!(hint.contains("alert"), "{hint}");
    }
}

/// A plaintext client on the TLS-only port is told the server requires TLS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plaintext_client_on_a_tls_port_is_told_to_use_tls() {
    let server = SecureEtcd::from_env();
    let options = EtcdOptions::new([format!("http://{}", server.host_port())]);
    match refused(&server, options).await {
        Error::ConnectionLost(msg) => assert!(msg.contains("tls=true"), "{msg}"),
        other => panic!("expected ConnectionLost, got {other:?}"),
    }
}

/// A TLS client on a plaintext port is told the server may not speak TLS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_client_on_a_plaintext_port_is_told_so() {
    let server = SecureEtcd::from_env();
    let plain = std::env::var("COORD_TEST_ETCD")
        .expect("COORD_TEST_ETCD is not set: this test needs the plain test etcd too");
    let first = plain
        .split(',')
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned();
    let options = EtcdOptions::new([first]).with_tls(server.tls());
    let started = Instant::now();
    let err = coord_etcd::connect(options)
        .await
        .map(|s| s.id())
        .expect_err("a TLS client on a plaintext port");
    assert!(started.elapsed() < PROMPT, "took {:?}", started.elapsed());
    match err {
        Error::ConnectionLost(msg) => assert!(msg.contains("may not speak TLS"), "{msg}"),
        other => panic!("expected ConnectionLost, got {other:?}"),
    }
}

/// A bad TLS file is refused before any I/O (the endpoint is never
/// dialled: nothing listens on port 1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tls_files_are_refused_before_io() {
    let server = SecureEtcd::from_env();
    for tls in [
        TlsOptions::new().with_ca("/nonexistent/ca.pem"),
        // A file that holds no certificate (the key).
        TlsOptions::new().with_ca(server.cert("client-key.pem")),
        TlsOptions::new().with_server_name("not a name"),
    ] {
        let options = EtcdOptions::new(["https://127.0.0.1:1"]).with_tls(tls);
        match coord_etcd::connect(options).await.map(|s| s.id()) {
            Err(Error::InvalidArgument(msg)) => {
                assert!(msg.starts_with("tls:"), "{msg}");
                assert!(!msg.contains("PRIVATE KEY"), "{msg}");
            }
            other => panic!("expected InvalidArgument, got {other:?}"),
        }
    }
}

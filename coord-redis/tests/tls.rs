//! TLS against the secured server at `COORD_TEST_REDIS_SECURE`
//! (scripts/servers/redis-secure.sh: TLS only, client certificates
//! required), each failure a typed error that says what to fix:
//! - a server certificate from an authority not trusted (another CA, or
//!   none given: only the public web roots) → `Unauthenticated` naming
//!   `ca=`;
//! - a certificate not valid for the host connected to → `Unauthenticated`
//!   naming `server_name=` (unsupported on Redis, so: the host);
//! - no client certificate, or one from an untrusted authority →
//!   `Unauthenticated` naming `cert=` and `key=`;
//! - a plaintext client on the TLS port → a prompt `ConnectionLost` saying
//!   the server may require TLS;
//! - bad TLS settings → `InvalidArgument` before any I/O.
//!
//! And what works: a `redis://` URL with TLS options (what `?tls=true`
//! maps onto), and a `server_name` equal to the URL's host.

mod common;

use std::time::{Duration, Instant};

use coord_core::{Error, TlsOptions};
use coord_redis::RedisOptions;

use common::acl::assert_unauthenticated;
use common::{cert, env, mutual_tls, secure_url, unique_namespace, with_user};

/// The secured server's URL with the restricted user's credentials.
fn user_url() -> String {
    with_user(
        &secure_url(),
        &env("COORD_TEST_REDIS_SECURE_USER", "the secured server's user"),
        &env("COORD_TEST_REDIS_SECURE_PASSWORD", "its password"),
    )
}

fn password() -> String {
    env("COORD_TEST_REDIS_SECURE_PASSWORD", "its password")
}

fn options(url: String, tls: TlsOptions) -> RedisOptions {
    RedisOptions::new(url)
        .with_tls(tls)
        .with_namespace(unique_namespace())
        .with_request_timeout(Duration::from_secs(2))
}

fn client_identity(tls: TlsOptions) -> TlsOptions {
    tls.with_identity(cert("client.pem"), cert("client-key.pem"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_server_certificate_is_unauthenticated_naming_ca() {
    let other_ca = client_identity(TlsOptions::new().with_ca(cert("rogue-ca.pem")));
    let other = coord_redis::connect(options(user_url(), other_ca)).await;
    assert_unauthenticated(&other, "ca=", &[password()]);
    // Without ca= only the public web roots are trusted: not the test CA.
    let public =
        coord_redis::connect(options(user_url(), client_identity(TlsOptions::new()))).await;
    assert_unauthenticated(&public, "ca=", &[password()]);
}

/// Forward connections from a listener on 127.0.0.2 (loopback, but an
/// address the server's certificate does not carry) to `upstream`.
async fn forwarder(upstream: String) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.2:0")
        .await
        .expect("bind 127.0.0.2 (loopback) for the name-mismatch test");
    let addr = listener.local_addr().expect("its address");
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let upstream = upstream.clone();
            tokio::spawn(async move {
                if let Ok(mut server) = tokio::net::TcpStream::connect(upstream).await {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                }
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_for_another_name_is_unauthenticated_naming_server_name() {
    let (upstream, _) = common::via(&secure_url(), "");
    let addr = forwarder(upstream).await;
    let (_, url) = common::via(&user_url(), &addr.to_string());
    // The same server through the forwarder: only the name differs.
    let session = coord_redis::connect(options(url, mutual_tls())).await;
    assert_unauthenticated(&session, "server_name=", &[password()]);
    if let Err(Error::Unauthenticated { hint, .. }) = &session {
        assert!(hint.contains("127.0.0.2"), "{hint}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_untrusted_client_certificate_is_unauthenticated_naming_cert() {
    let ca = TlsOptions::new().with_ca(cert("ca.pem"));
    let missing = coord_redis::connect(options(user_url(), ca.clone())).await;
    assert_unauthenticated(&missing, "cert=", &[password()]);
    assert_unauthenticated(&missing, "key=", &[password()]);
    let rogue = ca.with_identity(cert("rogue-client.pem"), cert("rogue-client-key.pem"));
    let rogue = coord_redis::connect(options(user_url(), rogue)).await;
    assert_unauthenticated(&rogue, "cert=", &[password()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plaintext_client_on_the_tls_port_fails_promptly_saying_tls() {
    let timeout = Duration::from_secs(2);
    let plain = user_url().replacen("rediss://", "redis://", 1);
    let started = Instant::now();
    let outcome = tokio::time::timeout(
        Duration::from_secs(30),
        coord_redis::connect(
            RedisOptions::new(plain)
                .with_namespace(unique_namespace())
                .with_request_timeout(timeout),
        ),
    )
    .await
    .expect("a plaintext connect to a TLS port hangs");
    let elapsed = started.elapsed();
    match &outcome {
        Err(Error::ConnectionLost(message)) => {
            assert!(
                message.contains("requires TLS") && message.contains("rediss://"),
                "{message}"
            );
            assert!(!message.contains(&password()), "{message}");
        }
        Err(other) => panic!("expected ConnectionLost saying TLS, got {other:?}"),
        Ok(_) => panic!("a plaintext client was served on the TLS port"),
    }
    // Four attempts at most (the first and three retries), each within
    // the request timeout.
    assert!(elapsed < timeout * 4, "took {elapsed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tls_settings_are_refused_before_any_io() {
    // Nothing listens on port 1: any I/O would end in ConnectionLost.
    let nowhere = "rediss://127.0.0.1:1";
    let mut cert_only = TlsOptions::new();
    cert_only.cert = Some(cert("client.pem"));
    let cases = [
        (
            "a server_name other than the host",
            options(
                nowhere.into(),
                mutual_tls().with_server_name("redis.example"),
            ),
            "server_name \"redis.example\" is not supported",
        ),
        (
            "a missing CA file",
            options(
                nowhere.into(),
                TlsOptions::new().with_ca(cert("no-such-ca.pem")),
            ),
            "no-such-ca.pem",
        ),
        (
            "a key given as the CA",
            options(
                nowhere.into(),
                TlsOptions::new().with_ca(cert("client-key.pem")),
            ),
            "CERTIFICATE",
        ),
        (
            "a certificate without its key",
            options(nowhere.into(), cert_only),
            "private key (key)",
        ),
        (
            "rediss://…#insecure",
            RedisOptions::new(format!("{nowhere}/#insecure")).with_namespace(unique_namespace()),
            "insecure",
        ),
    ];
    for (what, options, expected) in cases {
        match coord_redis::connect(options).await {
            Err(Error::InvalidArgument(m)) => assert!(m.contains(expected), "{what}: {m}"),
            Err(other) => panic!("{what}: expected InvalidArgument, got {other:?}"),
            Ok(_) => panic!("{what}: connected"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_options_on_a_redis_url_and_a_matching_server_name_connect() {
    // `redis://` plus TLS options: what `?tls=true&ca=…` maps onto.
    let plain_scheme = user_url().replacen("rediss://", "redis://", 1);
    let by_options = options(plain_scheme, mutual_tls().with_server_name("127.0.0.1"));
    assert!(by_options.uses_tls());
    let shown = format!("{by_options:?}");
    assert!(!shown.contains(&password()), "{shown}");
    let session = coord_redis::connect(by_options)
        .await
        .expect("redis:// with TLS options and server_name = the host");
    session
        .ensure_dir("/tls")
        .await
        .expect("a request over TLS");
    session.close().await.expect("close");
}

//! Connect failures that say why, within the session timeout: nothing
//! listening, TLS asked of a plaintext port and the reverse, and a server
//! of another kind (ZooKeeper, Redis) at the endpoint. Each error is
//! typed, names the endpoint, hints at the fix, and never shows a password
//! (`COORD_TEST_ETCD`, `COORD_TEST_ETCD_SECURE`, `COORD_TEST_ZK`,
//! `COORD_TEST_REDIS`, `COORD_TEST_CERTS`).

#![cfg(feature = "tls")]

use std::time::{Duration, Instant};

use coord_core::{Error, TlsOptions};
use coord_etcd::EtcdOptions;

/// Short, to keep the suite fast: every failure must come within it.
const SESSION_TIMEOUT: Duration = Duration::from_secs(3);

/// A password that must not show in any message.
const PASSWORD: &str = "pw-not-to-be-shown";

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run scripts/test-all, which starts the test servers")
    })
}

/// `host:port` of a test server's URL (or bare address).
fn host_port(name: &str) -> String {
    let value = var(name);
    let rest = value.split_once("://").map_or(value.as_str(), |(_, r)| r);
    rest.split(['/', ',']).next().unwrap_or(rest).to_owned()
}

/// A loopback port where nothing listens: bound, then let go.
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("local address").to_string()
}

fn options(addr: &str) -> EtcdOptions {
    EtcdOptions::new([format!("http://{addr}")])
        .with_session_timeout(SESSION_TIMEOUT)
        .with_user("coord", PASSWORD)
}

fn mutual_tls() -> TlsOptions {
    let certs = std::path::PathBuf::from(var("COORD_TEST_CERTS"));
    TlsOptions::new()
        .with_ca(certs.join("ca.pem"))
        .with_identity(certs.join("client.pem"), certs.join("client-key.pem"))
}

/// Connect with `options`, expecting a `ConnectionLost` within the
/// session timeout that names `addr` and holds every one of `hints`.
async fn lost(options: EtcdOptions, addr: &str, hints: &[&str]) {
    let started = Instant::now();
    let outcome = tokio::time::timeout(Duration::from_secs(30), coord_etcd::connect(options))
        .await
        .expect("connect returns");
    let elapsed = started.elapsed();
    let message = match outcome {
        Err(Error::ConnectionLost(m)) => m,
        Err(other) => panic!("expected ConnectionLost, got {other:?}"),
        Ok(_) => panic!("connected to {addr}"),
    };
    eprintln!("{elapsed:?}: {message}");
    assert!(message.contains(addr), "{addr} not in {message}");
    for hint in hints {
        assert!(message.contains(hint), "{hint:?} not in {message}");
    }
    assert!(!message.contains(PASSWORD), "{message}");
    assert!(
        elapsed < SESSION_TIMEOUT,
        "took {elapsed:?}, over the session timeout: {message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_listening_says_connection_refused() {
    let addr = closed_port();
    lost(
        options(&addr),
        &addr,
        &["nothing is listening", "connection refused"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_at_a_plaintext_port_says_it_may_not_speak_tls() {
    let addr = host_port("COORD_TEST_ETCD");
    let options = options(&addr).with_tls(mutual_tls());
    lost(options, &addr, &["may not speak TLS", "http://"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_at_a_tls_port_says_tls_is_required() {
    let addr = host_port("COORD_TEST_ETCD_SECURE");
    lost(options(&addr), &addr, &["requires TLS", "tls=true"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zookeeper_port_says_zookeeper() {
    let addr = host_port("COORD_TEST_ZK");
    lost(options(&addr), &addr, &["ZooKeeper", "zk://", "not etcd"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_port_says_redis() {
    let addr = host_port("COORD_TEST_REDIS");
    lost(options(&addr), &addr, &["Redis", "redis://", "not etcd"]).await;
}

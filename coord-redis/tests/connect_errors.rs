//! Connect failures that say why, within the session timeout: nothing
//! listening, TLS asked of a plaintext port (`rediss://` at a plaintext
//! Redis, whose handshake would otherwise hang) and the reverse, and a
//! server of another kind (ZooKeeper, etcd) at the address. Each error is
//! typed, names the address, hints at the fix, and never shows the URL's
//! password (`COORD_TEST_REDIS`, `COORD_TEST_REDIS_SECURE`,
//! `COORD_TEST_ZK`, `COORD_TEST_ETCD`, `COORD_TEST_CERTS`).

mod common;

use std::time::{Duration, Instant};

use coord_core::Error;
use coord_redis::RedisOptions;

/// Short, to keep the suite fast: every failure must come within it.
const SESSION_TIMEOUT: Duration = Duration::from_secs(3);

/// A password that must not show in any message.
const PASSWORD: &str = "pw-not-to-be-shown";

/// `host:port` of a test server's URL (or bare address).
fn host_port(name: &str) -> String {
    let value = common::env(name, "the test servers");
    let rest = value.split_once("://").map_or(value.as_str(), |(_, r)| r);
    rest.split(['/', ',']).next().unwrap_or(rest).to_owned()
}

/// A loopback port where nothing listens: bound, then let go.
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("local address").to_string()
}

fn options(scheme: &str, addr: &str) -> RedisOptions {
    RedisOptions::new(format!("{scheme}://coord:{PASSWORD}@{addr}"))
        .with_namespace(common::unique_namespace())
        .with_session_timeout(SESSION_TIMEOUT)
}

/// Connect with `options`, expecting a `ConnectionLost` within the
/// session timeout that names `addr` and holds every one of `hints`.
async fn lost(options: RedisOptions, addr: &str, hints: &[&str]) {
    let started = Instant::now();
    let outcome = tokio::time::timeout(Duration::from_secs(60), coord_redis::connect(options))
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
        options("redis", &addr),
        &addr,
        &["nothing is listening", "connection refused"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rediss_at_a_plaintext_port_says_it_has_no_tls() {
    let addr = host_port("COORD_TEST_REDIS");
    let options = options("rediss", &addr)
        .with_tls(coord_core::TlsOptions::new().with_ca(common::cert("ca.pem")));
    lost(options, &addr, &["without TLS", "redis://"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_at_a_tls_port_says_tls_is_required() {
    let addr = host_port("COORD_TEST_REDIS_SECURE");
    lost(
        options("redis", &addr),
        &addr,
        &["requires TLS", "rediss://"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zookeeper_port_says_zookeeper() {
    let addr = host_port("COORD_TEST_ZK");
    lost(
        options("redis", &addr),
        &addr,
        &["ZooKeeper", "zk://", "not Redis"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_etcd_port_says_etcd() {
    let addr = host_port("COORD_TEST_ETCD");
    lost(
        options("redis", &addr),
        &addr,
        &["etcd", "etcd://", "not Redis"],
    )
    .await;
}

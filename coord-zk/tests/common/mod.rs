//! What the coord-zk integration tests share: the server they run against.
//! A server of a test's own is a `coord_conformance::server::TestServer`.

#![allow(dead_code)]

pub mod harness;

use std::time::Duration;

use coord_zk::ZkOptions;

/// The ZooKeeper the tests use, from `COORD_TEST_ZK` (`host:port`, as
/// `scripts/test-all` exports it). Panics when unset: these tests never
/// skip.
pub fn options_from_env() -> ZkOptions {
    let addr = std::env::var("COORD_TEST_ZK").unwrap_or_else(|_| {
        panic!(
            "COORD_TEST_ZK is not set: run `scripts/test-all -p coord-zk`, or start a \
             ZooKeeper and set COORD_TEST_ZK=127.0.0.1:<port>"
        )
    });
    plain_options(&addr)
}

/// Options for the plaintext server at `connect` (`host:port`).
pub fn plain_options(connect: &str) -> ZkOptions {
    ZkOptions::new(connect)
        // Short, so a test that waits out a session does not wait long; the
        // test server allows 1 s .. 10 s.
        .with_session_timeout(Duration::from_secs(4))
}

/// The variable `name`, or a panic saying how to get it: these tests never
/// skip.
pub fn secure_env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: run `scripts/test-all -p coord-zk`, or start \
             scripts/servers/zk-secure.sh (start_zk_secure, with COORD_TEST_CERTS from \
             make_test_certs in scripts/lib.sh) and export what it exports"
        )
    })
}

/// The secured ZooKeeper's address, from `COORD_TEST_ZK_SECURE`.
pub fn secure_addr_from_env() -> String {
    secure_env("COORD_TEST_ZK_SECURE")
}

/// The test certificates' directory (`COORD_TEST_CERTS`, made by
/// `make_test_certs` in scripts/lib.sh).
pub fn certs_dir() -> std::path::PathBuf {
    secure_env("COORD_TEST_CERTS").into()
}

/// Options for the secured server at `connect`: TLS trusting the test CA,
/// with the test client certificate (the server requires one), and digest
/// credentials (`COORD_TEST_ZK_SECURE_USER` / `_PASSWORD`).
pub fn secure_options(connect: &str) -> ZkOptions {
    let certs = certs_dir();
    let tls = coord_core::TlsOptions::new()
        .with_ca(certs.join("ca.pem"))
        .with_identity(certs.join("client.pem"), certs.join("client-key.pem"));
    plain_options(connect)
        .with_tls(tls)
        .with_digest(
            secure_env("COORD_TEST_ZK_SECURE_USER"),
            secure_env("COORD_TEST_ZK_SECURE_PASSWORD"),
        )
        // 8 s, not 4: the client gives up a connection attempt after 2/5 of
        // the session timeout, and on a loaded 2-core machine the server's
        // JVM has taken longer than 1.6 s for a TLS handshake (2 of 12 runs
        // lost a test to it). Tests that wait out a session use
        // open_faulty's own timeout, or expire it through the hook.
        .with_session_timeout(Duration::from_secs(8))
}

/// Open a session, panicking with a clear message when the server cannot be
/// reached.
pub async fn connect(options: &ZkOptions) -> coord_zk::ZkSession {
    coord_zk::ZkSession::connect(options.clone())
        .await
        .unwrap_or_else(|e| {
            panic!(
                "cannot open a session on ZooKeeper at {} (COORD_TEST_ZK): {e}",
                options.hosts()
            )
        })
}

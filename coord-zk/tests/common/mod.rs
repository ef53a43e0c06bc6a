//! What the coord-zk integration tests share: the server they run against
//! (and, in [`server`], a server of a test's own).

#![allow(dead_code)]

pub mod server;

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
    ZkOptions::new(&addr)
        .unwrap_or_else(|e| panic!("COORD_TEST_ZK={addr:?} is not a connect string: {e}"))
        // Short, so a test that waits out a session does not wait long; the
        // test server allows 1 s .. 10 s.
        .session_timeout(Duration::from_secs(4))
}

/// Open a session, panicking with a clear message when the server cannot be
/// reached.
pub async fn connect(options: &ZkOptions) -> coord_zk::ZkSession {
    coord_zk::ZkSession::connect(options)
        .await
        .unwrap_or_else(|e| {
            panic!(
                "cannot open a session on ZooKeeper at {} (COORD_TEST_ZK): {e}",
                options.hosts()
            )
        })
}

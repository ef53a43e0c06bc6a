//! Connections killed under a live session. In a test binary of its own:
//! it kills every client connection of the test server.

mod common;

use std::time::Duration;

use common::RedisHarness;
use coord_core::{CreateMode, SessionState};

async fn kill_clients(kind: &str) {
    let h = RedisHarness::from_env();
    let mut conn = redis::Client::open(h.options.url())
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("connect to COORD_TEST_REDIS");
    let _: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg(kind)
        .arg("SKIPME")
        .arg("yes")
        .query_async(&mut conn)
        .await
        .expect("CLIENT KILL");
}

/// Both connections of a session dropped: it comes back on its own, its
/// ephemeral node intact, and watches work again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_survives_dropped_connections() {
    let h = RedisHarness::from_env();
    let s = coord_redis::connect(h.options()).await.expect("connect");
    let other = coord_redis::connect(h.options()).await.expect("connect");
    let node = s
        .create("/rc/e", b"", CreateMode::Ephemeral)
        .await
        .expect("create");

    // Pub/sub link: a pending watch wakes (spuriously), and new ones work.
    let (_, watch) = s.children_watch("/rc").await.expect("watch");
    kill_clients("pubsub").await;
    tokio::time::timeout(Duration::from_secs(10), watch)
        .await
        .expect("a watch wakes when its link drops")
        .expect("a spurious wake-up is Ok");
    let (_, watch) = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match s.children_watch("/rc").await {
                Ok(w) => return w,
                Err(e) if e.is_retryable() => tokio::time::sleep(Duration::from_millis(50)).await,
                Err(e) => panic!("children_watch after reconnect: {e}"),
            }
        }
    })
    .await
    .expect("the link comes back");
    other
        .create("/rc/x", b"", CreateMode::Persistent)
        .await
        .expect("create");
    tokio::time::timeout(Duration::from_secs(10), watch)
        .await
        .expect("a watch set after the reconnect fires")
        .expect("watch");

    // Command connection: calls fail with ConnectionLost at most for a
    // moment, then work; the session was never lost.
    kill_clients("normal").await;
    let got = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match s.get(&node.path).await {
                Ok(n) => return n,
                Err(e) if e.is_retryable() => tokio::time::sleep(Duration::from_millis(50)).await,
                Err(e) => panic!("get after reconnect: {e}"),
            }
        }
    })
    .await
    .expect("the command connection comes back");
    assert!(
        got.is_some(),
        "the ephemeral node outlived the dropped connection"
    );
    let mut state = s.state_watch();
    tokio::time::timeout(
        Duration::from_secs(10),
        state.wait_for(|st| *st == SessionState::Connected),
    )
    .await
    .expect("Connected again")
    .expect("state");
    s.close().await.expect("close");
    other.close().await.expect("close");
}

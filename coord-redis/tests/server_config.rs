//! `notify-keyspace-events` handling. In a test binary of its own: it
//! changes the server's setting for a moment (and puts it back), which
//! would disturb tests running beside it.

mod common;

use common::RedisHarness;
use coord_core::Error;
use coord_redis::{KeyspaceEvents, KeyspaceEventsError};

async fn notify_setting(conn: &mut redis::aio::MultiplexedConnection) -> String {
    let pair: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("notify-keyspace-events")
        .query_async(conn)
        .await
        .expect("CONFIG GET");
    pair.get(1).cloned().unwrap_or_default()
}

async fn set_notify(conn: &mut redis::aio::MultiplexedConnection, value: &str) {
    let () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("notify-keyspace-events")
        .arg(value)
        .query_async(conn)
        .await
        .expect("CONFIG SET");
}

/// `Require` refuses a server without expired-key notices, saying what to
/// set; `Enable` (the default) turns them on, keeping the other flags.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyspace_events_required_or_enabled() {
    let h = RedisHarness::from_env();
    let mut conn = redis::Client::open(h.options.url())
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("connect to COORD_TEST_REDIS");
    let before = notify_setting(&mut conn).await;
    set_notify(&mut conn, "E$").await;

    let refused = coord_redis::connect(h.options().keyspace_events(KeyspaceEvents::Require)).await;
    let outcome = match &refused {
        Err(Error::Backend { source, .. }) => source
            .downcast_ref::<KeyspaceEventsError>()
            .map(|e| (e.wanted.clone(), e.to_string())),
        _ => None,
    };
    let enabled = coord_redis::connect(h.options()).await;
    let after = notify_setting(&mut conn).await;
    set_notify(&mut conn, &before).await;

    let (wanted, message) = outcome.unwrap_or_else(|| panic!("a typed error: {refused:?}"));
    assert!(
        wanted.contains('K') && wanted.contains('x') && wanted.contains('$'),
        "{wanted}"
    );
    assert!(message.contains("notify-keyspace-events"), "{message}");
    let session = enabled.expect("Enable turns the notices on");
    for flag in ['K', 'x', 'E', '$'] {
        assert!(after.contains(flag), "{flag} missing from {after:?}");
    }
    session.close().await.expect("close");
}

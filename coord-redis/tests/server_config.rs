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

/// The tests here change the server's setting: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// `Require` refuses a server without expired-key notices, saying what to
/// set; `Enable` (the default) turns them on, keeping the other flags.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyspace_events_required_or_enabled() {
    let _serial = SERIAL.lock().await;
    let h = RedisHarness::from_env();
    let mut conn = redis::Client::open(h.options.url())
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("connect to COORD_TEST_REDIS");
    let before = notify_setting(&mut conn).await;
    set_notify(&mut conn, "E$").await;

    let refused =
        coord_redis::connect(h.options().with_keyspace_events(KeyspaceEvents::Require)).await;
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

/// A user without `CONFIG` on a server whose notices are really off: the
/// connect watches for a notice, sees none, and fails with the
/// `KeyspaceEventsError` saying what to set (not a permission or
/// authentication error); `Assume` connects anyway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notices_off_without_config_rights_is_explained() {
    let _serial = SERIAL.lock().await;
    let h = RedisHarness::from_env();
    let mut conn = redis::Client::open(h.options.url())
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("connect to COORD_TEST_REDIS");
    let id = uuid::Uuid::new_v4().simple().to_string();
    let user = format!("coord-acl-noconfig-{}", &id[..10]);
    let password = format!("pw-{}", &id[12..]);
    let () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg(&user)
        .arg("on")
        .arg(format!(">{password}"))
        .arg("~*")
        .arg("&*")
        .arg("+@all")
        .arg("-@admin")
        .arg("-config")
        .query_async(&mut conn)
        .await
        .expect("ACL SETUSER");
    let (host, _) = common::via(h.options.url(), "");
    let options = coord_redis::RedisOptions::new(format!("redis://{user}:{password}@{host}"))
        .with_namespace(h.options.namespace());

    let before = notify_setting(&mut conn).await;
    set_notify(&mut conn, "").await;
    let refused = coord_redis::connect(options.clone()).await;
    let assumed = coord_redis::connect(options.with_keyspace_events(KeyspaceEvents::Assume)).await;
    set_notify(&mut conn, &before).await;
    if let Ok(s) = &assumed {
        s.close().await.expect("close");
    }
    let () = redis::cmd("ACL")
        .arg("DELUSER")
        .arg(&user)
        .query_async(&mut conn)
        .await
        .expect("ACL DELUSER");

    let message = match &refused {
        Err(Error::Backend { source, .. }) => source
            .downcast_ref::<KeyspaceEventsError>()
            .map(|e| (e.current.clone(), e.to_string())),
        _ => None,
    };
    let (current, message) = message.unwrap_or_else(|| panic!("a typed error: {refused:?}"));
    assert_eq!(current, None, "the setting could not be read");
    assert!(message.contains("notify-keyspace-events Kx"), "{message}");
    assert!(message.contains("CONFIG GET was refused"), "{message}");
    assert!(!message.contains(&password), "{message}");
    if let Err(e) = &assumed {
        panic!("Assume connects without looking: {e}");
    }
}

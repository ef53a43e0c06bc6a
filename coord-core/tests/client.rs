//! The supervised client on the in-memory store: failures to open are
//! retried and reported, a late subscriber learns the live generation,
//! waiting has a limit, and the last handle dropped (or `close`) ends the
//! live session and the client's events.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coord_core::{Backoff, Client, ClientEvent, ClientOptions, Error, SessionState};
use coord_mem::MemStore;

fn fast() -> ClientOptions {
    ClientOptions::default().with_backoff(Backoff::new(
        Duration::from_millis(1),
        Duration::from_millis(5),
    ))
}

/// A client whose first `fail` attempts to open a session fail.
fn failing_first(store: &MemStore, fail: u32, options: ClientOptions) -> (Client, Arc<AtomicU32>) {
    let attempts = Arc::new(AtomicU32::new(0));
    let (store, counted) = (store.clone(), attempts.clone());
    let client = Client::start(
        move || {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            let r = if n < fail {
                Err(Error::ConnectionLost(format!("attempt {n} refused")))
            } else {
                Ok(store.open())
            };
            async move { r }
        },
        options,
    );
    (client, attempts)
}

#[tokio::test]
async fn failed_opens_are_retried_and_reported() {
    let store = MemStore::new();
    let (client, attempts) = failing_first(&store, 3, fast());
    let mut events = client.events();
    for attempt in 1..=3 {
        match events.next().await {
            Some(ClientEvent::OpenFailed { attempt: a, error }) => {
                assert_eq!(a, attempt);
                assert!(matches!(*error, Error::ConnectionLost(_)));
            }
            other => panic!("expected OpenFailed {attempt}, got {other:?}"),
        }
    }
    let session = client.session().await.expect("opened on the 4th attempt");
    assert!(matches!(
        events.next().await,
        Some(ClientEvent::Started { generation: 1, id }) if id == session.id()
    ));
    assert_eq!(attempts.load(Ordering::SeqCst), 4);
    client.close().await.expect("close");
}

#[tokio::test]
async fn waiting_for_a_session_has_a_limit() {
    let store = MemStore::new();
    let (client, _) = failing_first(&store, u32::MAX, fast());
    let r = client.session_within(Duration::from_millis(50)).await;
    assert!(matches!(r, Err(Error::Timeout(_))), "{r:?}");
    assert!(client.current().is_none());
    client
        .close()
        .await
        .expect("close while no session is open");
    assert!(matches!(client.session().await, Err(Error::SessionClosed)));
}

#[tokio::test]
async fn a_late_subscriber_learns_the_live_generation() {
    let store = MemStore::new();
    let client = store.client(Duration::from_secs(5), fast());
    let session = client.session().await.expect("a session");
    let mut events = client.events();
    assert!(matches!(
        events.try_next(),
        Some(ClientEvent::Started { generation: 1, id }) if id == session.id()
    ));
    assert!(events.try_next().is_none());
    client.close().await.expect("close");
    assert!(matches!(events.next().await, Some(ClientEvent::Closed)));
    assert!(
        events.next().await.is_none(),
        "the stream ends after Closed"
    );
    assert_eq!(session.state(), SessionState::Closed);
    // Subscribing to a closed client gives Closed, then the end.
    let mut late = client.events();
    assert!(matches!(late.next().await, Some(ClientEvent::Closed)));
    assert!(late.next().await.is_none());
}

#[tokio::test]
async fn dropping_the_last_handle_closes_the_session() {
    let store = MemStore::new();
    let client = store.client(Duration::from_secs(5), fast());
    let other = client.clone();
    let session = client.session().await.expect("a session");
    let mut state = session.state_watch();
    drop(client);
    assert!(!other.is_closed(), "a clone keeps the client");
    drop(other);
    tokio::time::timeout(Duration::from_secs(5), state.wait_for(|s| s.is_terminal()))
        .await
        .expect("the session is closed once every handle is gone")
        .expect("state");
    assert_eq!(session.state(), SessionState::Closed);
}

#[tokio::test]
async fn a_session_closed_by_a_holder_is_followed_by_the_next() {
    let store = MemStore::new();
    let client = store.client(Duration::from_secs(5), fast());
    let first = client.session().await.expect("a session");
    first
        .close()
        .await
        .expect("close the session, not the client");
    let next = client.next_session(1).await.expect("the next session");
    assert_eq!(next.number, 2);
    assert_ne!(next.session.id(), first.id());
    assert_eq!(client.generation(), 2);
    client.close().await.expect("close");
}

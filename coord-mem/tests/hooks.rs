//! The store's own behaviour beyond the conformance suite: TTL and
//! heartbeats, the fault hooks, ZooKeeper-like naming, and watcher cleanup.
//! Time is paused (`start_paused`), so a TTL passes as soon as nothing else
//! can run, and every wait here is for a condition, not a guess.

use std::time::Duration;

use coord_core::{CreateMode, Error, Session, SessionState};
use coord_mem::MemStore;
use tokio::time::{timeout, Instant};

const TTL: Duration = Duration::from_secs(3);

/// Wait (in paused time) until `s` reaches `want`.
async fn reach(s: &Session, want: SessionState) {
    let mut rx = s.state_watch();
    let got = timeout(Duration::from_secs(3600), rx.wait_for(|st| *st == want)).await;
    assert!(matches!(got, Ok(Ok(_))), "never reached {want:?}");
}

#[tokio::test(start_paused = true)]
async fn a_crashed_session_expires_after_its_ttl() {
    let store = MemStore::new();
    let watcher = store.open();
    let s = store.open_with_session_timeout(TTL);
    let eph = s
        .create("/crash/eph", b"", CreateMode::Ephemeral)
        .await
        .expect("create")
        .path;
    let mut state = s.state_watch();
    let start = Instant::now();
    drop(s); // every handle gone, never closed: a crash
    watcher.wait_gone(&eph).await.expect("the ephemeral goes");
    let waited = start.elapsed();
    assert!(waited <= TTL, "expired after {waited:?}, TTL {TTL:?}");
    assert!(
        waited >= TTL / 2,
        "expired after {waited:?}: too early for TTL {TTL:?}"
    );
    state
        .wait_for(|st| *st == SessionState::Expired)
        .await
        .expect("the state says Expired");
    assert_eq!(store.live_sessions(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_held_session_never_expires() {
    let store = MemStore::new();
    let s = store.open_with_session_timeout(TTL);
    let copy = s.clone();
    s.create("/held/eph", b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    drop(s); // a clone still holds it
    tokio::time::sleep(TTL * 100).await; // virtual time: 100 TTLs
    assert_eq!(copy.state(), SessionState::Connected);
    assert!(copy.exists("/held/eph").await.expect("exists"));
    assert_eq!(store.live_sessions(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_paused_heartbeat_lets_the_ttl_run_out() {
    let store = MemStore::new();
    let other = store.open();
    let s = store.open_with_session_timeout(TTL);
    s.create("/paused/eph", b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    let start = Instant::now();
    assert!(store.pause_heartbeat(&s.id()));
    // Operations still work while the TTL runs, and do not count as
    // heartbeats.
    tokio::time::sleep(TTL / 2).await;
    assert!(s.exists("/paused/eph").await.expect("still connected"));
    reach(&s, SessionState::Expired).await;
    let waited = start.elapsed();
    assert!(waited <= TTL, "expired after {waited:?}");
    assert!(matches!(s.get("/").await, Err(Error::SessionExpired)));
    assert!(!other.exists("/paused/eph").await.expect("exists"));
    assert!(!store.resume_heartbeat(&s.id()), "the session is gone");
}

#[tokio::test(start_paused = true)]
async fn a_resumed_heartbeat_keeps_the_session() {
    let store = MemStore::new();
    let s = store.open_with_session_timeout(TTL);
    assert!(store.pause_heartbeat(&s.id()));
    tokio::time::sleep(TTL / 2).await;
    assert!(store.resume_heartbeat(&s.id()));
    tokio::time::sleep(TTL * 10).await;
    assert_eq!(s.state(), SessionState::Connected);
    s.get("/").await.expect("connected");
}

#[tokio::test(start_paused = true)]
async fn suspend_and_resume() {
    let store = MemStore::new();
    let other = store.open();
    let s = store.open_with_session_timeout(TTL);
    s.create("/susp/eph", b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    assert!(store.suspend(&s.id()));
    assert!(!store.suspend(&s.id()), "already suspended");
    assert_eq!(s.state(), SessionState::Suspended);
    match s.get("/susp/eph").await {
        Err(e @ Error::ConnectionLost(_)) => assert!(e.is_retryable()),
        other => panic!("an op while suspended: got {other:?}"),
    }
    assert!(
        other.exists("/susp/eph").await.expect("exists"),
        "a suspended session keeps its ephemerals"
    );
    tokio::time::sleep(TTL / 2).await;
    assert!(store.resume(&s.id()));
    assert_eq!(s.state(), SessionState::Connected);
    assert!(s.exists("/susp/eph").await.expect("connected again"));
    // Resuming counted as a heartbeat, and the heartbeat runs again.
    tokio::time::sleep(TTL * 10).await;
    assert_eq!(s.state(), SessionState::Connected);
}

#[tokio::test(start_paused = true)]
async fn suspended_past_its_ttl_a_session_expires() {
    let store = MemStore::new();
    let other = store.open();
    let s = store.open_with_session_timeout(TTL);
    s.create("/gone/eph", b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    assert!(store.suspend(&s.id()));
    other
        .wait_gone("/gone/eph")
        .await
        .expect("the ephemeral goes");
    reach(&s, SessionState::Expired).await;
    assert!(!store.resume(&s.id()));
    assert!(matches!(s.get("/").await, Err(Error::SessionExpired)));
}

#[tokio::test(start_paused = true)]
async fn closing_a_suspended_session_leaves_it_to_its_ttl() {
    let store = MemStore::new();
    let other = store.open();
    let s = store.open_with_session_timeout(TTL);
    s.create("/abandoned/eph", b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    assert!(store.suspend(&s.id()));
    assert!(matches!(s.close().await, Err(Error::ConnectionLost(_))));
    assert_eq!(s.state(), SessionState::Closed);
    assert!(matches!(s.get("/").await, Err(Error::SessionClosed)));
    assert!(other.exists("/abandoned/eph").await.expect("exists"));
    let start = Instant::now();
    other
        .wait_gone("/abandoned/eph")
        .await
        .expect("the store ends it");
    assert!(start.elapsed() <= TTL);
    assert_eq!(s.state(), SessionState::Closed, "Closed stays final");
    assert_eq!(store.live_sessions(), 1);
}

#[tokio::test]
async fn expire_hook() {
    let store = MemStore::new();
    let s = store.open();
    let other = store.open();
    s.create("/x/eph", b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    other
        .create("/x/stays", b"", CreateMode::Persistent)
        .await
        .expect("create");
    let pending = {
        let s = s.clone();
        tokio::spawn(async move { s.wait_gone("/x/stays").await })
    };
    let (_, watch) = s.children_watch("/").await.expect("children_watch");
    assert!(store.expire(&s.id()));
    assert!(!store.expire(&s.id()), "already expired");
    assert!(!store.expire(&coord_core::SessionId("nonsense".into())));
    assert_eq!(s.state(), SessionState::Expired);
    assert!(matches!(
        pending.await.expect("task"),
        Err(Error::SessionExpired)
    ));
    assert!(matches!(watch.await, Err(Error::SessionExpired)));
    assert!(!other.exists("/x/eph").await.expect("exists"));
    assert!(matches!(
        s.children_watch("/").await,
        Err(Error::SessionExpired)
    ));
    assert!(matches!(
        s.wait_gone("/x/stays").await,
        Err(Error::SessionExpired)
    ));
    s.close().await.expect("closing an expired session is Ok");
    assert_eq!(s.state(), SessionState::Expired);
    assert_eq!(store.live_sessions(), 1);
}

#[tokio::test]
async fn names_sequences_and_stamps_like_zookeeper() {
    let store = MemStore::new();
    let s = store.open();
    let root = s.get("/").await.expect("get").expect("the root exists");
    assert_eq!(root.stat.stamp, 0);
    let a = s
        .create("/q/item-", b"", CreateMode::PersistentSequential)
        .await
        .expect("create");
    // `/q` was made first, with stamp 1.
    assert_eq!(a.path, "/q/item-0000000000");
    assert_eq!(a.sequence, Some(0));
    assert_eq!(a.stamp, 2);
    assert_eq!(a.version, 0);
    let b = s
        .create("/q/other-", b"", CreateMode::EphemeralSequential)
        .await
        .expect("create");
    assert_eq!(b.path, "/q/other-0000000001", "one counter per parent");
    // A name taken by hand is skipped, not refused.
    s.create("/q/item-0000000002", b"", CreateMode::Persistent)
        .await
        .expect("create");
    let c = s
        .create("/q/item-", b"", CreateMode::PersistentSequential)
        .await
        .expect("create");
    assert_eq!(c.path, "/q/item-0000000003");
    // Another parent has its own counter.
    let d = s
        .create("/r/item-", b"", CreateMode::PersistentSequential)
        .await
        .expect("create");
    assert_eq!(d.path, "/r/item-0000000000");
    // Sequential children first by sequence, then the rest by name.
    s.create("/q/a-plain", b"", CreateMode::Persistent)
        .await
        .expect("create");
    let names: Vec<_> = s
        .children("/q")
        .await
        .expect("children")
        .into_iter()
        .map(|c| (c.name, c.sequence))
        .collect();
    assert_eq!(
        names,
        vec![
            ("item-0000000000".to_owned(), Some(0)),
            ("other-0000000001".to_owned(), Some(1)),
            ("item-0000000003".to_owned(), Some(3)),
            ("a-plain".to_owned(), None),
            ("item-0000000002".to_owned(), None),
        ]
    );
    let v = s.set("/q/a-plain", b"x", Some(0)).await.expect("set");
    assert_eq!(v.version, 1);
}

#[tokio::test]
async fn no_children_under_an_ephemeral_node() {
    let store = MemStore::new();
    let s = store.open();
    s.create("/e", b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    for path in ["/e/child", "/e/deeper/child"] {
        match s.create(path, b"", CreateMode::Persistent).await {
            Err(Error::NotSupported { operation, backend }) => {
                assert_eq!(operation, "children of an ephemeral node");
                assert_eq!(backend, "mem");
            }
            other => panic!("create {path}: got {other:?}"),
        }
    }
    assert!(
        !s.exists("/e/deeper").await.expect("exists"),
        "nothing made"
    );
}

#[tokio::test]
async fn dropped_watches_are_cleaned_up() {
    let store = MemStore::new();
    let s = store.open();
    s.create("/w/node", b"", CreateMode::Persistent)
        .await
        .expect("create");
    for _ in 0..100 {
        let (_, watch) = s.children_watch("/w").await.expect("children_watch");
        drop(watch);
        // A wait_gone given up on.
        let gave_up = timeout(Duration::from_millis(1), s.wait_gone("/w/node")).await;
        assert!(gave_up.is_err());
        // A data watch dropped unfired.
        drop(s.get_watch("/w/node").await.expect("get_watch"));
    }
    assert!(store.registered_watches() <= 300);
    // The next registration on a node drops the dead ones there.
    let (_, watch) = s.children_watch("/w").await.expect("children_watch");
    let (_, changed) = s
        .get_watch("/w/node")
        .await
        .expect("get_watch")
        .expect("the node exists");
    assert!(timeout(Duration::from_millis(1), s.wait_gone("/w/node"))
        .await
        .is_err());
    assert_eq!(
        store.registered_watches(),
        3,
        "only the live watches and the last wait given up on are left"
    );
    // Dead watches spread over many nodes are swept now and then.
    for i in 0..1500 {
        let dir = format!("/w/dir-{i}");
        s.create(&dir, b"", CreateMode::Persistent)
            .await
            .expect("create");
        let (_, dropped) = s.children_watch(&dir).await.expect("children_watch");
        drop(dropped);
    }
    assert!(
        store.registered_watches() <= 1024,
        "{} registrations kept",
        store.registered_watches()
    );
    drop(watch);
    drop(changed);
}

/// The store answers `place` and `first_children` from its sequence index
/// (`orders_at_server`), one request each, whatever the directory holds,
/// and a session's end takes its nodes out of that order too.
#[tokio::test]
async fn place_and_first_children_are_one_request_each() {
    use coord_core::{Blockers, Child, Place};
    let store = MemStore::new();
    let (a, b) = (store.open(), store.open());
    assert!(a.orders_at_server());
    let mut made = Vec::new();
    for i in 0..200 {
        let s = if i % 2 == 0 { &a } else { &b };
        let c = s
            .create("/q/_c_x-lock-", b"", CreateMode::EphemeralSequential)
            .await
            .expect("create");
        made.push(Child::new(
            c.path.rsplit('/').next().expect("name").to_owned(),
            c.sequence,
        ));
    }
    let sent = |s: &Session| s.requests_sent().expect("mem counts requests");
    let before = sent(&a);
    let last = made.last().expect("made").clone();
    assert_eq!(
        a.place("/q", &last, Blockers::All).await.expect("place"),
        Place::Behind(made[198].clone())
    );
    assert_eq!(sent(&a) - before, 1, "one place, one request");
    let before = sent(&a);
    assert_eq!(a.first_children("/q", 2).await.expect("first"), made[..2]);
    assert_eq!(sent(&a) - before, 1, "one first_children, one request");
    // b's nodes (the odd ones) leave with its session.
    b.close().await.expect("close");
    assert_eq!(
        a.place("/q", &last, Blockers::All).await.expect("place"),
        Place::Gone,
        "b's last node went with b"
    );
    assert_eq!(
        a.place("/q", &made[2], Blockers::All).await.expect("place"),
        Place::Behind(made[0].clone()),
        "b's node between them is gone"
    );
    assert_eq!(
        a.place("/q", &made[1], Blockers::All).await.expect("place"),
        Place::Gone
    );
    assert_eq!(
        a.first_children("/q", 2).await.expect("first"),
        vec![made[0].clone(), made[2].clone()]
    );
}

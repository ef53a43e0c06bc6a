//! The event streams' one convention, on the in-memory backend: read
//! through `StreamExt::next` or the inherent `next`, a stream yields the
//! same items; an error that ends it is yielded once, then `None` (a cache
//! starts again on `restart`); a counter's unreadable value does not end
//! its watcher; a `next()` dropped while it waits loses nothing.

use std::future::Future;
use std::time::Duration;

use coord_core::recipes::{
    CacheEvent, Counter, Election, ElectionEvent, Group, LatchEvent, PartitionState,
    SetPartitioner, TreeCache,
};
use coord_core::{CreateMode, Error, Result, TreeChange};
use coord_mem::MemStore;
use futures_util::StreamExt;

/// Long enough for anything the store does at once.
const WAIT: Duration = Duration::from_secs(10);

async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(WAIT, f)
        .await
        .expect("the stream did not answer in time")
}

/// The item of a stream that can fail, which must be there and fine.
fn ok<T: std::fmt::Debug>(item: Option<Result<T>>) -> T {
    match item {
        Some(Ok(v)) => v,
        other => panic!("expected an item, got {other:?}"),
    }
}

fn is_expired<T>(item: &Option<Result<T>>) -> bool {
    matches!(item, Some(Err(Error::SessionExpired)))
}

#[tokio::test]
async fn a_group_watcher_reads_the_same_both_ways_and_ends_with_the_session() {
    let store = MemStore::new();
    let session = store.open();
    let other = store.open();
    let group = Group::new(&session, "/g").expect("group");
    let theirs = Group::new(&other, "/g").expect("group");
    let mut inherent = group.watch();
    let mut stream = group.watch();

    let one = theirs.join_as("one", b"1").await.expect("join");
    let a = ok(within(inherent.next()).await);
    let b = ok(within(StreamExt::next(&mut stream)).await);
    assert_eq!(a, b);
    assert_eq!(a.joined, ["one"]);

    let _two = theirs.join_as("two", b"2").await.expect("join");
    let a = ok(within(inherent.next()).await);
    let b = ok(within(StreamExt::next(&mut stream)).await);
    assert_eq!(a, b);
    assert_eq!(a.joined, ["two"]);

    one.leave().await.expect("leave");
    let a = ok(within(inherent.next()).await);
    let b = ok(within(StreamExt::next(&mut stream)).await);
    assert_eq!(a, b);
    assert_eq!(a.left, ["one"]);

    assert!(store.expire(&session.id()));
    assert!(is_expired(&within(inherent.next()).await));
    assert!(is_expired(&within(StreamExt::next(&mut stream)).await));
    assert!(inherent.next().await.is_none());
    assert!(StreamExt::next(&mut stream).await.is_none());
    assert!(
        inherent.next().await.is_none(),
        "an ended stream stays ended"
    );
}

#[tokio::test]
async fn a_dropped_next_loses_no_change() {
    let store = MemStore::new();
    let session = store.open();
    let group = Group::new(&session, "/g").expect("group");
    let mut watcher = group.watch();
    assert!(ok(within(watcher.next()).await).members.is_empty());
    // Nothing changes: the wait is dropped half-way, its step kept.
    for _ in 0..3 {
        let waited = tokio::time::timeout(Duration::from_millis(30), watcher.next()).await;
        assert!(waited.is_err(), "no change yet: {waited:?}");
    }
    let _m = group.join_as("late", b"").await.expect("join");
    assert_eq!(ok(within(watcher.next()).await).joined, ["late"]);

    let counter = Counter::new(&session, "/c").expect("counter");
    let mut values = counter.watch();
    assert_eq!(ok(within(values.next()).await), 0);
    let waited = tokio::time::timeout(Duration::from_millis(30), values.next()).await;
    assert!(waited.is_err(), "no change yet: {waited:?}");
    counter.set(7).await.expect("set");
    assert_eq!(ok(within(values.next()).await), 7);
}

#[tokio::test]
async fn a_counter_watcher_goes_on_after_a_bad_value_and_ends_with_the_session() {
    let store = MemStore::new();
    let session = store.open();
    let counter = Counter::new(&session, "/c").expect("counter");
    let mut inherent = counter.watch();
    let mut stream = counter.watch();
    assert_eq!(ok(within(inherent.next()).await), 0);
    assert_eq!(ok(within(StreamExt::next(&mut stream)).await), 0);

    session.set("/c", b"not a number", None).await.expect("set");
    for item in [
        within(inherent.next()).await,
        within(StreamExt::next(&mut stream)).await,
    ] {
        assert!(
            matches!(item, Some(Err(Error::InvalidArgument(_)))),
            "{item:?}"
        );
    }
    counter.set(5).await.expect("set");
    assert_eq!(ok(within(inherent.next()).await), 5);
    assert_eq!(ok(within(StreamExt::next(&mut stream)).await), 5);

    assert!(store.expire(&session.id()));
    assert!(is_expired(&within(inherent.next()).await));
    assert!(is_expired(&within(StreamExt::next(&mut stream)).await));
    assert!(inherent.next().await.is_none());
    assert!(StreamExt::next(&mut stream).await.is_none());
}

#[tokio::test]
async fn a_leader_observer_reads_the_same_both_ways_and_ends_with_the_session() {
    let store = MemStore::new();
    let session = store.open();
    let candidate = store.open();
    let election = Election::new(&session, "/e").expect("election");
    let mut inherent = election.observe();
    let mut stream = election.observe();
    let leading = Election::new(&candidate, "/e")
        .expect("election")
        .campaign(b"a")
        .await
        .expect("campaign");
    let a = ok(within(inherent.next()).await);
    let b = ok(within(StreamExt::next(&mut stream)).await);
    assert_eq!(a, b);
    assert_eq!(a.value, b"a");
    assert_eq!(a.token, leading.fencing_token());

    assert!(store.expire(&session.id()));
    assert!(is_expired(&within(inherent.next()).await));
    assert!(is_expired(&within(StreamExt::next(&mut stream)).await));
    assert!(inherent.next().await.is_none());
    assert!(StreamExt::next(&mut stream).await.is_none());
}

#[tokio::test]
async fn a_cache_yields_its_end_once_then_none_until_restarted() {
    let store = MemStore::new();
    let session = store.open();
    session
        .create("/t/a", b"x", CreateMode::Persistent)
        .await
        .expect("create");
    let mut inherent = TreeCache::start(&session, "/t", 4).expect("cache");
    let mut stream = TreeCache::start(&session, "/t", 4).expect("cache");
    let mut seen = (Vec::new(), Vec::new());
    loop {
        let ev = ok(within(inherent.next()).await);
        seen.0.push(ev.clone());
        if ev == CacheEvent::Initialized {
            break;
        }
    }
    loop {
        let ev = ok(within(StreamExt::next(&mut stream)).await);
        seen.1.push(ev.clone());
        if ev == CacheEvent::Initialized {
            break;
        }
    }
    assert_eq!(seen.0, seen.1);
    session.set("/t/a", b"y", None).await.expect("set");
    let updated = CacheEvent::Updated {
        path: "/t/a".into(),
        data: b"y".to_vec(),
    };
    assert_eq!(ok(within(inherent.next()).await), updated);
    assert_eq!(ok(within(StreamExt::next(&mut stream)).await), updated);

    assert!(store.expire(&session.id()));
    assert!(is_expired(&within(inherent.next()).await));
    assert!(is_expired(&within(StreamExt::next(&mut stream)).await));
    assert!(inherent.next().await.is_none());
    assert!(StreamExt::next(&mut stream).await.is_none());

    // A restart starts the stream again: the reset, the reload, then the
    // ordinary changes.
    let fresh = store.open();
    inherent.restart(&fresh);
    assert_eq!(ok(within(inherent.next()).await), CacheEvent::Reset);
    while ok(within(inherent.next()).await) != CacheEvent::Initialized {}
    fresh.set("/t/a", b"z", None).await.expect("set");
    assert_eq!(
        ok(within(inherent.next()).await),
        CacheEvent::Updated {
            path: "/t/a".into(),
            data: b"z".to_vec()
        }
    );

    // Closing ends it the same way: the error once, then `None`.
    inherent.close();
    let item = inherent.next().await;
    assert!(matches!(item, Some(Err(Error::SessionClosed))), "{item:?}");
    assert!(inherent.next().await.is_none());
}

#[tokio::test]
async fn a_tree_watch_yields_its_end_once_then_none() {
    let store = MemStore::new();
    let session = store.open();
    let mut inherent = session.watch_tree("/w").await.expect("watch");
    let mut stream = session.watch_tree("/w").await.expect("watch");
    session
        .create("/w", b"", CreateMode::Persistent)
        .await
        .expect("create");
    let changed = TreeChange::Changed("/w".into());
    assert_eq!(ok(within(inherent.next()).await), changed);
    assert_eq!(ok(within(StreamExt::next(&mut stream)).await), changed);

    assert!(store.expire(&session.id()));
    assert!(is_expired(&within(inherent.next()).await));
    assert!(is_expired(&within(StreamExt::next(&mut stream)).await));
    assert!(inherent.next().await.is_none());
    assert!(StreamExt::next(&mut stream).await.is_none());
}

#[tokio::test]
async fn a_participant_reads_the_same_both_ways_until_it_stops() {
    let store = MemStore::new();
    let session = store.open();
    let mut inherent = Election::new(&session, "/e1")
        .expect("election")
        .participate(b"a")
        .expect("participate");
    let mut stream = Election::new(&session, "/e2")
        .expect("election")
        .participate(b"a")
        .expect("participate");
    within(inherent.wait_elected()).await.expect("elected");
    within(stream.wait_elected()).await.expect("elected");
    inherent.stop().await.expect("stop");
    stream.stop().await.expect("stop");
    let mut seen = (Vec::new(), Vec::new());
    while let Some(ev) = within(inherent.next()).await {
        seen.0.push(ev);
    }
    while let Some(ev) = within(StreamExt::next(&mut stream)).await {
        seen.1.push(ev);
    }
    assert_eq!(seen.0, seen.1);
    assert_eq!(seen.0.first(), Some(&ElectionEvent::Start));
    assert!(seen.0.contains(&ElectionEvent::ElectedComplete));
    assert_eq!(seen.0.last(), Some(&ElectionEvent::StopComplete));
    assert_eq!(inherent.try_next(), None);
}

#[tokio::test]
async fn a_latch_watcher_reads_the_same_both_ways_until_the_latch_ends() {
    let store = MemStore::new();
    let session = store.open();
    let latch = Election::new(&session, "/l")
        .and_then(|e| e.latch(b"a"))
        .expect("latch");
    let token = within(latch.await_leadership()).await.expect("leads");
    let mut inherent = latch.watch();
    let mut stream = latch.watch();
    let leads = Some(LatchEvent::IsLeader { token });
    assert_eq!(within(inherent.next()).await, leads);
    assert_eq!(within(StreamExt::next(&mut stream)).await, leads);
    latch.close().await.expect("close");
    let not = Some(LatchEvent::NotLeader);
    assert_eq!(within(inherent.next()).await, not);
    assert_eq!(within(StreamExt::next(&mut stream)).await, not);
    assert_eq!(within(inherent.next()).await, None);
    assert_eq!(within(StreamExt::next(&mut stream)).await, None);
}

#[tokio::test]
async fn a_partition_watcher_reads_the_same_both_ways_until_the_task_ends() {
    let store = MemStore::new();
    let session = store.open();
    let partitioner = SetPartitioner::new(&session, "/p", "m1", ["x", "y"])
        .expect("partitioner")
        .join()
        .await
        .expect("join");
    let mut inherent = partitioner.watch();
    let mut stream = partitioner.watch();
    let acquired = PartitionState::Acquired(vec!["x".into(), "y".into()]);
    loop {
        let state = within(inherent.next()).await.expect("a state");
        if state == acquired {
            break;
        }
    }
    assert_eq!(within(StreamExt::next(&mut stream)).await, Some(acquired));
    partitioner.close().await.expect("close");
    let closed = Some(PartitionState::Closed);
    assert_eq!(within(inherent.next()).await, closed);
    assert_eq!(within(StreamExt::next(&mut stream)).await, closed);
    assert_eq!(within(inherent.next()).await, None);
    assert_eq!(within(StreamExt::next(&mut stream)).await, None);
}

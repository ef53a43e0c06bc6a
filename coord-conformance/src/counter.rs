//! Conformance of the shared counter ([`coord_core::recipes::Counter`]).

use std::collections::BTreeSet;

use coord_core::path::join;
use coord_core::recipes::{AddOutcome, Counter};
use coord_core::{CreateMode, Error, SessionState};
use tokio::task::JoinSet;

use crate::faults::SHORT_FAULT_TIMEOUT;
use crate::{through_cut, within, Harness};

/// A counter nobody wrote reads as its initial value (0 by default), and
/// that read makes the node; the value is stored as decimal text (kazoo's
/// format), and a node with no data (as kazoo's `ensure_path` leaves it)
/// reads as the initial value. A bad path is refused before any I/O.
pub async fn counter_fresh_reads_initial_value(h: &dyn Harness) {
    let root = h.root("counter_fresh_reads_initial_value");
    let s = h.open().await;
    let c = Counter::new(&s, &join(&root, "zero")).expect("counter");
    assert_eq!(c.get().await.expect("get").0, 0);
    assert!(
        s.exists(c.path()).await.expect("exists"),
        "get made the node"
    );
    let seeded = Counter::new(&s, &join(&root, "seeded"))
        .expect("counter")
        .with_initial(7);
    assert_eq!(seeded.get().await.expect("get").0, 7);
    seeded.set(-42).await.expect("set");
    let raw = s.get(seeded.path()).await.expect("get").expect("node");
    assert_eq!(raw.data, b"-42", "the value is stored as decimal text");
    let empty = join(&root, "empty");
    s.create(&empty, b"", CreateMode::Persistent)
        .await
        .expect("create");
    let c = Counter::new(&s, &empty).expect("counter").with_initial(3);
    assert_eq!(c.get().await.expect("get").0, 3);
    assert_eq!(c.add(1).await.expect("add").post, 4);
    for bad in ["relative", "/", "/a//b", "/a/"] {
        assert!(
            matches!(Counter::new(&s, bad), Err(Error::InvalidPath { .. })),
            "{bad:?} was accepted"
        );
    }
    let _ = s.close().await;
}

/// A set is seen by another session's get, with a new version.
pub async fn counter_set_then_get(h: &dyn Harness) {
    let path = join(&h.root("counter_set_then_get"), "c");
    let (a, b) = (h.open().await, h.open().await);
    let ca = Counter::new(&a, &path).expect("counter");
    let cb = Counter::new(&b, &path).expect("counter");
    let v1 = ca.set(10).await.expect("set");
    assert_eq!(cb.get().await.expect("get"), (10, v1));
    let v2 = cb.set(i64::MIN).await.expect("set");
    assert_ne!(v1, v2, "a set must change the version");
    assert_eq!(ca.get().await.expect("get"), (i64::MIN, v2));
    let _ = a.close().await;
    let _ = b.close().await;
}

/// Compare-and-set fails on a version someone wrote past (and writes
/// nothing), and succeeds on the current one; the value form compares the
/// value.
pub async fn counter_compare_and_set(h: &dyn Harness) {
    let path = join(&h.root("counter_compare_and_set"), "c");
    let (a, b) = (h.open().await, h.open().await);
    let ca = Counter::new(&a, &path).expect("counter");
    let cb = Counter::new(&b, &path).expect("counter");
    let (v0, stale) = ca.get().await.expect("get");
    assert_eq!(v0, 0);
    cb.add(5).await.expect("add by the other session");
    assert!(
        !ca.compare_and_set(stale, 100).await.expect("cas"),
        "compare-and-set on a stale version succeeded"
    );
    let (now, current) = ca.get().await.expect("get");
    assert_eq!(now, 5, "the failed compare-and-set wrote");
    assert!(ca.compare_and_set(current, 100).await.expect("cas"));
    assert_eq!(cb.get().await.expect("get").0, 100);
    assert!(!cb.compare_value_and_set(5, 1).await.expect("cas value"));
    assert!(cb.compare_value_and_set(100, 1).await.expect("cas value"));
    assert_eq!(ca.get().await.expect("get").0, 1);
    let _ = a.close().await;
    let _ = b.close().await;
}

/// Sessions adding at once.
const SESSIONS: usize = 4;
/// Adds per session, all in flight at once.
const ADDS: usize = 6;

/// `SESSIONS` sessions × `ADDS` concurrent adds of 1: the counter ends at
/// exactly their number, and the adds' (pre, post) pairs are a chain —
/// every pre from 0 to n - 1 once, each post = pre + 1: no update lost,
/// none counted twice, no two adds saw the same value.
pub async fn counter_concurrent_adds_all_count(h: &dyn Harness) {
    let path = join(&h.root("counter_concurrent_adds_all_count"), "c");
    let mut sessions = Vec::new();
    let mut tasks: JoinSet<AddOutcome> = JoinSet::new();
    for _ in 0..SESSIONS {
        let s = h.open().await;
        let c = Counter::new(&s, &path).expect("counter");
        sessions.push(s);
        for _ in 0..ADDS {
            let c = c.clone();
            tasks.spawn(async move { c.add(1).await.expect("add") });
        }
    }
    let mut outcomes = Vec::new();
    while let Some(r) = within("the adds finish", tasks.join_next()).await {
        outcomes.push(r.expect("an add panicked"));
    }
    let n = (SESSIONS * ADDS) as i64;
    let pres: BTreeSet<i64> = outcomes.iter().map(|o| o.pre).collect();
    assert_eq!(pres, (0..n).collect::<BTreeSet<_>>(), "{outcomes:?}");
    assert!(outcomes.iter().all(|o| o.post == o.pre + 1), "{outcomes:?}");
    let versions: BTreeSet<u64> = outcomes.iter().map(|o| o.version).collect();
    assert_eq!(versions.len(), outcomes.len(), "two adds got one version");
    let check = h.open().await;
    let (value, _) = Counter::new(&check, &path)
        .expect("counter")
        .get()
        .await
        .expect("get");
    assert_eq!(value, n);
    for s in sessions {
        let _ = s.close().await;
    }
    let _ = check.close().await;
}

/// A watcher returns the value now, then a change made by another
/// session; after a burst of adds it reaches the latest value (possibly
/// skipping some in between, never going back).
pub async fn counter_watch_sees_changes(h: &dyn Harness) {
    let path = join(&h.root("counter_watch_sees_changes"), "c");
    let (a, b) = (h.open().await, h.open().await);
    let mut watcher = Counter::new(&a, &path).expect("counter").watch();
    assert_eq!(
        within("the first value", watcher.next())
            .await
            .expect("not ended")
            .expect("next"),
        0
    );
    let cb = Counter::new(&b, &path).expect("counter");
    let pending = tokio::spawn(async move {
        let v = watcher.next().await;
        (watcher, v)
    });
    cb.add(3).await.expect("add");
    let (mut watcher, v) = within("the change", pending).await.expect("task");
    assert_eq!(v.expect("not ended").expect("next"), 3);
    // The same value again is not a change worth reporting; a burst is.
    cb.set(3).await.expect("set");
    for _ in 0..10 {
        cb.add(1).await.expect("add");
    }
    let mut last = 3;
    while last != 13 {
        let v = within("the latest value after a burst", watcher.next())
            .await
            .expect("not ended")
            .expect("next");
        assert!(v > last && v <= 13, "the watcher went from {last} to {v}");
        last = v;
    }
    let _ = a.close().await;
    let _ = b.close().await;
}

/// A node whose data is not a decimal i64 (text, Curator's binary
/// counters, a number out of range) is `InvalidArgument` for get, add and
/// the watcher — never a panic — and an add writes nothing to it.
pub async fn counter_garbage_data_is_typed_error(h: &dyn Harness) {
    let root = h.root("counter_garbage_data_is_typed_error");
    let s = h.open().await;
    let garbage: [&[u8]; 4] = [
        b"not a number",
        &[0, 0, 0, 5],
        &[0, 0, 0, 0, 0, 0, 0, 5],
        b"99999999999999999999",
    ];
    for (i, data) in garbage.iter().enumerate() {
        let path = join(&root, &format!("c{i}"));
        s.create(&path, data, CreateMode::Persistent)
            .await
            .expect("create");
        let c = Counter::new(&s, &path).expect("counter");
        assert!(
            matches!(c.get().await, Err(Error::InvalidArgument(_))),
            "get of {data:?}"
        );
        assert!(
            matches!(c.add(1).await, Err(Error::InvalidArgument(_))),
            "add to {data:?}"
        );
        let mut w = c.watch();
        assert!(
            matches!(w.next().await, Some(Err(Error::InvalidArgument(_)))),
            "watch of {data:?}"
        );
        let node = s.get(&path).await.expect("get").expect("node");
        assert_eq!(&node.data[..], *data, "the add wrote to a garbage node");
        // A set repairs it.
        c.set(2).await.expect("set");
        assert_eq!(c.add(1).await.expect("add").post, 3);
    }
    let _ = s.close().await;
}

/// An add past `i64::MAX` or below `i64::MIN` is `InvalidArgument` and
/// writes nothing: the counter never wraps.
pub async fn counter_overflow_is_typed_error(h: &dyn Harness) {
    let path = join(&h.root("counter_overflow_is_typed_error"), "c");
    let s = h.open().await;
    let c = Counter::new(&s, &path).expect("counter");
    c.set(i64::MAX - 1).await.expect("set");
    assert_eq!(c.increment().await.expect("add").post, i64::MAX);
    let (_, version) = c.get().await.expect("get");
    assert!(matches!(
        c.increment().await,
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(c.get().await.expect("get"), (i64::MAX, version));
    c.set(i64::MIN).await.expect("set");
    assert!(matches!(
        c.decrement().await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        c.add(i64::MIN).await,
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(c.get().await.expect("get").0, i64::MIN);
    assert_eq!(c.add(i64::MAX).await.expect("add").post, -1);
    let _ = s.close().await;
}

/// Rounds of [`counter_add_during_cut_counts_once`].
const CUT_ROUNDS: usize = 4;

/// An add whose session's connection is cut while it runs (and comes back
/// within the session timeout) counts at most once: `Ok` means the counter
/// moved by exactly that add; an "outcome unknown" error means it moved by
/// it at most once; any other error means it did not move. Never twice.
pub async fn counter_add_during_cut_counts_once(h: &dyn Harness) {
    let path = join(&h.root("counter_add_during_cut_counts_once"), "c");
    let (faulty, fault) = h.open_faulty(SHORT_FAULT_TIMEOUT).await;
    let observer = h.open().await;
    let c = Counter::new(&faulty, &path).expect("counter");
    let seen = Counter::new(&observer, &path).expect("counter");
    let mut expected = c.get().await.expect("get").0;
    // How each round ended: (add still running when the cut was noticed,
    // and what it returned).
    let mut rounds = Vec::new();
    for round in 0..CUT_ROUNDS {
        let (in_flight, r) = {
            let c = c.clone();
            through_cut(&faulty, &*fault, round, async move { c.add(1).await }).await
        };
        let (now, _) = seen.get().await.expect("get by the observer");
        rounds.push((
            in_flight,
            match &r {
                Ok(_) => "ok".to_owned(),
                Err(e) => e.to_string(),
            },
        ));
        match r {
            Ok(o) => {
                assert_eq!((o.pre, o.post), (expected, expected + 1), "round {round}");
                assert_eq!(
                    now,
                    expected + 1,
                    "round {round}: Ok, but the counter is {now}"
                );
            }
            Err(Error::OutcomeUnknown { .. }) => {
                assert!(
                    now == expected || now == expected + 1,
                    "round {round}: the add counted {} times",
                    now - expected
                );
            }
            Err(e) => assert_eq!(now, expected, "round {round}: failed ({e}) yet applied"),
        }
        expected = now;
        let mut state = faulty.state_watch();
        within(
            "connected again",
            state.wait_for(|s| *s == SessionState::Connected),
        )
        .await
        .expect("state watch");
    }
    println!("counter cut rounds: backend={} {rounds:?}", h.name());
    assert!(
        rounds.iter().any(|(in_flight, _)| *in_flight),
        "no add was still running when its cut was noticed: the test cut nothing"
    );
    assert_eq!(
        c.add(1).await.expect("add after the rounds").post,
        expected + 1
    );
    let _ = faulty.close().await;
    let _ = observer.close().await;
}

/// Rounds of [`counter_lost_answer_never_counts_twice`].
const LOST_ROUNDS: usize = 4;

/// A write of the counter whose answer is lost (the request reaches the
/// server, the answer never comes back, the connection closes): with one
/// writer, the counter moves by exactly one each round — a compare-and-set
/// or add either reports success, or fails as "outcome unknown" having
/// landed once; it is never repeated on top of itself. (In memory the hook
/// loses create answers only, so there the writes simply succeed.)
pub async fn counter_lost_answer_never_counts_twice(h: &dyn Harness) {
    let path = join(&h.root("counter_lost_answer_never_counts_twice"), "c");
    let (faulty, fault) = h.open_faulty(SHORT_FAULT_TIMEOUT).await;
    let observer = h.open().await;
    let c = Counter::new(&faulty, &path).expect("counter");
    let seen = Counter::new(&observer, &path).expect("counter");
    let mut rounds = Vec::new();
    for round in 0..LOST_ROUNDS {
        let mut state = faulty.state_watch();
        within(
            "connected before the round",
            state.wait_for(|s| *s == SessionState::Connected),
        )
        .await
        .expect("state watch");
        let (before, version) = c.get().await.expect("get");
        fault.lose_next_answer();
        let r = if round % 2 == 0 {
            within(
                "the compare-and-set whose answer was lost",
                c.compare_and_set(version, before + 1),
            )
            .await
            .map(|set| assert!(set, "round {round}: a lone writer's compare-and-set failed"))
        } else {
            within("the add whose answer was lost", c.add(1))
                .await
                .map(|o| assert_eq!((o.pre, o.post), (before, before + 1), "round {round}"))
        };
        let (now, _) = seen.get().await.expect("get by the observer");
        assert_eq!(
            now,
            before + 1,
            "round {round}: the write counted {} times ({r:?})",
            now - before
        );
        match &r {
            Ok(()) => rounds.push("ok".to_owned()),
            Err(Error::OutcomeUnknown { .. }) => rounds.push("outcome unknown".to_owned()),
            Err(e) => panic!("round {round}: {e}"),
        }
    }
    println!(
        "counter lost-answer rounds: backend={} {rounds:?}",
        h.name()
    );
    let _ = faulty.close().await;
    let _ = observer.close().await;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __counter_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            counter::counter_fresh_reads_initial_value,
            counter::counter_set_then_get,
            counter::counter_compare_and_set,
            counter::counter_concurrent_adds_all_count,
            counter::counter_watch_sees_changes,
            counter::counter_garbage_data_is_typed_error,
            counter::counter_overflow_is_typed_error,
            counter::counter_add_during_cut_counts_once,
            counter::counter_lost_answer_never_counts_twice,
        );
    };
}

//! Conformance of the shared values ([`coord_core::recipes::SharedValue`],
//! [`coord_core::recipes::TypedSharedValue`] and Curator's
//! [`coord_core::recipes::SharedCount`]).

use std::collections::{BTreeMap, BTreeSet};

use coord_core::path::join;
use coord_core::recipes::{SharedCount, SharedValue, TypedSharedValue, Update, Versioned};
use coord_core::{CreateMode, Error, SessionState};
use tokio::task::JoinSet;

use crate::faults::SHORT_FAULT_TIMEOUT;
use crate::{await_state, within, Harness};

/// The watcher's next item, which must come within [`crate::WAIT`] and be
/// `Ok`.
async fn next_value<T, C: coord_core::recipes::Codec<T>>(
    what: &str,
    w: &mut coord_core::recipes::SharedValueWatcher<T, C>,
) -> Option<Versioned<T>> {
    within(what, w.next())
        .await
        .unwrap_or_else(|| panic!("{what}: the watcher ended"))
        .unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// A read of a missing node makes it with the initial value; a set of a
/// missing node makes it; a compare-and-set of a missing node fails and
/// makes nothing; a watcher reports a missing node as `None` without
/// making it, then sees it made by another session. A bad path is refused
/// before any I/O.
pub async fn shared_value_missing_node_made_by_set(h: &dyn Harness) {
    let root = h.root("shared_value_missing_node_made_by_set");
    let (a, b) = (h.open().await, h.open().await);
    let seeded = SharedValue::new(&a, &join(&root, "seeded"))
        .expect("value")
        .with_initial("seed");
    let read = seeded.get().await.expect("get");
    assert_eq!(read.value, b"seed");
    let raw = a
        .get(seeded.path())
        .await
        .expect("get")
        .expect("get made the node");
    assert_eq!(
        (raw.data, raw.stat.version),
        (b"seed".to_vec(), read.version)
    );

    let path = join(&root, "later");
    let va = SharedValue::new(&a, &path).expect("value");
    let vb = SharedValue::new(&b, &path).expect("value");
    assert!(
        !vb.try_set(0, "cas").await.expect("try_set"),
        "a compare-and-set of a missing node succeeded"
    );
    let mut watcher = va.watch();
    assert_eq!(next_value("a missing node", &mut watcher).await, None);
    assert!(
        !a.exists(&path).await.expect("exists"),
        "a watcher or a failed compare-and-set made the node"
    );
    let pending = tokio::spawn(async move {
        let v = next_value("the node made", &mut watcher).await;
        (watcher, v)
    });
    let version = vb.set("made").await.expect("set of a missing node");
    let (_watcher, seen) = within("the watcher task", pending).await.expect("task");
    assert_eq!(
        seen,
        Some(Versioned {
            value: b"made".to_vec(),
            version
        })
    );
    assert_eq!(va.get().await.expect("get").value, b"made");

    // Under a parent that does not exist yet either.
    let deep = join(&root, "not/yet/there");
    let mut watcher = SharedValue::new(&a, &deep).expect("value").watch();
    assert_eq!(
        next_value("a node under a missing parent", &mut watcher).await,
        None
    );
    let pending = tokio::spawn(async move { next_value("the deep node made", &mut watcher).await });
    let version = SharedValue::new(&b, &deep)
        .expect("value")
        .set("deep")
        .await
        .expect("set under a missing parent");
    assert_eq!(
        within("the watcher task", pending).await.expect("task"),
        Some(Versioned {
            value: b"deep".to_vec(),
            version
        })
    );
    for bad in ["relative", "/", "/a//b", "/a/"] {
        assert!(
            matches!(SharedValue::new(&a, bad), Err(Error::InvalidPath { .. })),
            "{bad:?} was accepted"
        );
    }
    let _ = a.close().await;
    let _ = b.close().await;
}

/// A value set by one session is what another reads, at the version the
/// set returned, and what a watcher on the other session sees.
pub async fn shared_value_set_by_another_session_is_seen(h: &dyn Harness) {
    let path = join(&h.root("shared_value_set_by_another_session_is_seen"), "v");
    let (a, b) = (h.open().await, h.open().await);
    let va = SharedValue::new(&a, &path).expect("value");
    let vb = SharedValue::new(&b, &path).expect("value");
    let v1 = va.set(b"\x00binary\xff").await.expect("set");
    assert_eq!(
        vb.get().await.expect("get"),
        Versioned {
            value: b"\x00binary\xff".to_vec(),
            version: v1
        }
    );
    let mut watcher = vb.watch();
    assert_eq!(
        next_value("the value now", &mut watcher)
            .await
            .map(|v| v.version),
        Some(v1)
    );
    let pending = tokio::spawn(async move {
        let v = next_value("the change", &mut watcher).await;
        (watcher, v)
    });
    let v2 = va.set("second").await.expect("set");
    assert_ne!(v1, v2, "a set must change the version");
    let (_watcher, seen) = within("the watcher task", pending).await.expect("task");
    assert_eq!(
        seen,
        Some(Versioned {
            value: b"second".to_vec(),
            version: v2
        })
    );
    let _ = a.close().await;
    let _ = b.close().await;
}

/// Sessions racing in [`shared_value_cas_exactly_one_wins`].
const RACERS: usize = 4;
/// Compare-and-sets per session, all in flight at once.
const TRIES: usize = 3;

/// `RACERS` sessions × `TRIES` concurrent compare-and-sets against the
/// same version: exactly one succeeds, the node holds its data, and a
/// compare-and-set on the stale version fails afterwards and writes
/// nothing.
pub async fn shared_value_cas_exactly_one_wins(h: &dyn Harness) {
    let path = join(&h.root("shared_value_cas_exactly_one_wins"), "v");
    let mut sessions = Vec::new();
    let mut tasks: JoinSet<(String, bool)> = JoinSet::new();
    let first = h.open().await;
    let start = SharedValue::new(&first, &path)
        .expect("value")
        .with_initial("start")
        .get()
        .await
        .expect("get");
    for s in 0..RACERS {
        let session = h.open().await;
        let v = SharedValue::new(&session, &path).expect("value");
        sessions.push(session);
        for t in 0..TRIES {
            let v = v.clone();
            let data = format!("racer-{s}-{t}");
            let version = start.version;
            tasks.spawn(async move {
                let won = v.try_set(version, &data).await.expect("try_set");
                (data, won)
            });
        }
    }
    let mut winners = Vec::new();
    while let Some(r) = within("the compare-and-sets finish", tasks.join_next()).await {
        let (data, won) = r.expect("a compare-and-set panicked");
        if won {
            winners.push(data);
        }
    }
    assert_eq!(winners.len(), 1, "winners: {winners:?}");
    let now = SharedValue::new(&first, &path)
        .expect("value")
        .get()
        .await
        .expect("get");
    assert_eq!(now.value, winners[0].as_bytes());
    let late = SharedValue::new(&first, &path).expect("value");
    assert!(!late.try_set(start.version, "late").await.expect("try_set"));
    assert_eq!(
        late.get().await.expect("get"),
        now,
        "a failed try_set wrote"
    );
    for s in sessions {
        let _ = s.close().await;
    }
    let _ = first.close().await;
}

/// Sets in the burst of [`shared_value_watch_sees_last_of_burst`].
const BURST: usize = 20;

/// A watcher coalesces a burst of sets by another session but always
/// reaches the last one, never going back, each version reported once; a
/// set of the same bytes is a new version and is reported too. Deleted, the
/// node is reported missing, and its return is seen.
pub async fn shared_value_watch_sees_last_of_burst(h: &dyn Harness) {
    let path = join(&h.root("shared_value_watch_sees_last_of_burst"), "v");
    let (a, b) = (h.open().await, h.open().await);
    let vb = SharedValue::new(&b, &path).expect("value");
    vb.set("0").await.expect("set");
    let mut watcher = SharedValue::new(&a, &path).expect("value").watch();
    let first = next_value("the value now", &mut watcher)
        .await
        .expect("the node exists");
    assert_eq!(first.value, b"0");
    let mut last_version = 0;
    for i in 1..=BURST {
        last_version = vb.set(i.to_string()).await.expect("set");
    }
    let mut seen = 0usize;
    let mut versions = BTreeSet::from([first.version]);
    while seen != BURST {
        let v = next_value("the latest value after a burst", &mut watcher)
            .await
            .expect("the node exists");
        let n: usize = String::from_utf8_lossy(&v.value).parse().expect("a number");
        assert!(n > seen, "the watcher went from {seen} to {n}");
        assert!(
            versions.insert(v.version),
            "version {} seen twice",
            v.version
        );
        seen = n;
        if n == BURST {
            assert_eq!(v.version, last_version);
        }
    }
    // The same bytes again: a new version, reported.
    let again = vb.set(BURST.to_string()).await.expect("set");
    let v = next_value("a set of the same bytes", &mut watcher).await;
    assert_eq!(v.map(|v| v.version), Some(again));
    // Deleted: missing; made again: seen.
    b.delete(&path, None).await.expect("delete");
    assert_eq!(next_value("the node deleted", &mut watcher).await, None);
    let back = vb.set("back").await.expect("set");
    assert_eq!(
        next_value("the node made again", &mut watcher).await,
        Some(Versioned {
            value: b"back".to_vec(),
            version: back
        })
    );
    let _ = a.close().await;
    let _ = b.close().await;
}

/// `close` ends every watcher of the value and of its clones (a pending
/// `next` returns `SessionClosed`, then `None`) and refuses later calls;
/// the node stays, and a new value on the same node works.
pub async fn shared_value_close_ends_watchers(h: &dyn Harness) {
    let path = join(&h.root("shared_value_close_ends_watchers"), "v");
    let s = h.open().await;
    let v = SharedValue::new(&s, &path).expect("value");
    v.set("kept").await.expect("set");
    let mut watcher = v.clone().watch();
    assert!(next_value("the value now", &mut watcher).await.is_some());
    let pending = tokio::spawn(async move {
        let end = watcher.next().await;
        matches!(end, Some(Err(Error::SessionClosed))) && watcher.next().await.is_none()
    });
    let clone = v.clone();
    clone.close();
    assert!(
        within("the watcher ends", pending).await.expect("task"),
        "a closed value's watcher went on"
    );
    assert!(v.is_closed());
    assert!(matches!(v.get().await, Err(Error::InvalidArgument(_))));
    assert!(matches!(v.set("x").await, Err(Error::InvalidArgument(_))));
    let mut late = v.watch();
    assert!(matches!(late.next().await, Some(Err(Error::SessionClosed))));
    assert!(late.next().await.is_none());
    let fresh = SharedValue::new(&s, &path).expect("value");
    assert_eq!(fresh.get().await.expect("get").value, b"kept");
    let _ = s.close().await;
}

/// A `SharedCount` writes exactly Curator's 4 big-endian bytes and reads
/// them (Curator's format, byte for byte); its initial value goes into a
/// node a read makes. A node of any other length is `InvalidArgument` for
/// get, add and the watcher (which goes on), never a panic, and an add
/// writes nothing to it; a set repairs it. An add that would overflow an
/// `i32` is `InvalidArgument` and writes nothing.
pub async fn shared_count_is_curators_format(h: &dyn Harness) {
    let root = h.root("shared_count_is_curators_format");
    let s = h.open().await;
    let c = SharedCount::new(&s, &join(&root, "c")).expect("count");
    let version = c.set(258).await.expect("set");
    let raw = s.get(c.path()).await.expect("get").expect("node");
    assert_eq!(raw.data, [0, 0, 1, 2]);
    assert_eq!(
        c.get().await.expect("get"),
        Versioned {
            value: 258,
            version
        }
    );
    let minus = join(&root, "minus");
    s.create(&minus, &[0xff, 0xff, 0xff, 0xfe], CreateMode::Persistent)
        .await
        .expect("create");
    assert_eq!(
        SharedCount::new(&s, &minus)
            .expect("count")
            .get()
            .await
            .expect("get")
            .value,
        -2
    );
    let seeded = SharedCount::new(&s, &join(&root, "seeded"))
        .expect("count")
        .with_initial(7);
    assert_eq!(seeded.get().await.expect("get").value, 7);
    let raw = s.get(seeded.path()).await.expect("get").expect("node");
    assert_eq!(raw.data, [0, 0, 0, 7]);

    let garbage: [&[u8]; 4] = [b"", b"42", &[0, 0, 1], &[0, 0, 0, 0, 0, 0, 0, 5]];
    for (i, data) in garbage.iter().enumerate() {
        let path = join(&root, &format!("g{i}"));
        s.create(&path, data, CreateMode::Persistent)
            .await
            .expect("create");
        let c = SharedCount::new(&s, &path).expect("count");
        assert!(
            matches!(c.get().await, Err(Error::InvalidArgument(_))),
            "get of {data:?}"
        );
        assert!(
            matches!(c.add(1).await, Err(Error::InvalidArgument(_))),
            "add to {data:?}"
        );
        let node = s.get(&path).await.expect("get").expect("node");
        assert_eq!(&node.data[..], *data, "the add wrote to a garbage node");
        let mut w = c.watch();
        assert!(
            matches!(
                within("the garbage value", w.next()).await,
                Some(Err(Error::InvalidArgument(_)))
            ),
            "watch of {data:?}"
        );
        let repaired = c.set(2).await.expect("set");
        assert_eq!(
            next_value("the repaired value", &mut w).await,
            Some(Versioned {
                value: 2,
                version: repaired
            })
        );
        assert_eq!(c.add(1).await.expect("add").post, 3);
    }

    c.set(i32::MAX).await.expect("set");
    let before = c.get().await.expect("get");
    assert!(matches!(c.add(1).await, Err(Error::InvalidArgument(_))));
    assert_eq!(
        c.get().await.expect("get"),
        before,
        "an overflowing add wrote"
    );
    assert_eq!(c.add(i32::MIN).await.expect("add").post, -1);
    let _ = s.close().await;
}

/// Sessions adding at once in [`shared_count_concurrent_adds_all_count`].
const ADDERS: usize = 3;
/// Adds per session, all in flight at once.
const ADDS: usize = 5;

/// `ADDERS` sessions × `ADDS` concurrent adds of 1: the count ends at
/// exactly their number and the adds' (pre, post) pairs form a chain: no
/// update lost, none counted twice.
pub async fn shared_count_concurrent_adds_all_count(h: &dyn Harness) {
    let path = join(&h.root("shared_count_concurrent_adds_all_count"), "c");
    let mut sessions = Vec::new();
    let mut tasks: JoinSet<Update<i32>> = JoinSet::new();
    for _ in 0..ADDERS {
        let s = h.open().await;
        let c = SharedCount::new(&s, &path).expect("count");
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
    let n = (ADDERS * ADDS) as i32;
    let pres: BTreeSet<i32> = outcomes.iter().map(|o| o.pre).collect();
    assert_eq!(pres, (0..n).collect::<BTreeSet<_>>(), "{outcomes:?}");
    assert!(outcomes.iter().all(|o| o.post == o.pre + 1), "{outcomes:?}");
    let check = h.open().await;
    let now = SharedCount::new(&check, &path)
        .expect("count")
        .get()
        .await
        .expect("get");
    assert_eq!(now.value, n);
    for s in sessions {
        let _ = s.close().await;
    }
    let _ = check.close().await;
}

/// The typed form with JSON: the node holds the value's JSON text (what
/// any other client reads), updates apply, a watcher decodes, and data
/// that is not JSON of the type is `InvalidArgument`, never a panic.
pub async fn shared_value_typed_json(h: &dyn Harness) {
    let path = join(&h.root("shared_value_typed_json"), "limits");
    let (a, b) = (h.open().await, h.open().await);
    type Limits = BTreeMap<String, u32>;
    let ta: TypedSharedValue<Limits, _> =
        TypedSharedValue::new(&a, &path, &Limits::new()).expect("value");
    let tb: TypedSharedValue<Limits, _> =
        TypedSharedValue::new(&b, &path, &Limits::new()).expect("value");
    assert_eq!(ta.get().await.expect("get").value, Limits::new());
    let mut watcher = tb.watch();
    assert_eq!(
        next_value("the value now", &mut watcher)
            .await
            .map(|v| v.value),
        Some(Limits::new())
    );
    let done = ta
        .update(|now| {
            let mut next = now.clone();
            next.insert("rps".into(), 100);
            Ok(next)
        })
        .await
        .expect("update");
    assert_eq!(done.pre, Limits::new());
    let raw = a.get(&path).await.expect("get").expect("node");
    assert_eq!(raw.data, br#"{"rps":100}"#);
    assert_eq!(
        next_value("the update", &mut watcher).await,
        Some(Versioned {
            value: done.post.clone(),
            version: done.version
        })
    );
    a.set(&path, b"not json", None).await.expect("raw set");
    assert!(matches!(tb.get().await, Err(Error::InvalidArgument(_))));
    assert!(matches!(
        within("the garbage value", watcher.next()).await,
        Some(Err(Error::InvalidArgument(_)))
    ));
    let v = tb.set(&done.post).await.expect("set repairs");
    assert_eq!(
        next_value("the repaired value", &mut watcher)
            .await
            .map(|v| v.version),
        Some(v)
    );
    let _ = a.close().await;
    let _ = b.close().await;
}

/// A watcher whose connection is cut while another session writes (and
/// deletes, and writes again) still reaches the latest value once the
/// connection is back within the session timeout: a lost connection is
/// retried, never an end of the watcher, and no change is lost for good.
pub async fn shared_value_watch_catches_up_after_cut(h: &dyn Harness) {
    let path = join(&h.root("shared_value_watch_catches_up_after_cut"), "v");
    let (faulty, fault) = h.open_faulty(SHORT_FAULT_TIMEOUT).await;
    let writer = h.open().await;
    let v = SharedValue::new(&writer, &path).expect("value");
    v.set("before").await.expect("set");
    let mut watcher = SharedValue::new(&faulty, &path).expect("value").watch();
    assert_eq!(
        next_value("the value now", &mut watcher)
            .await
            .map(|v| v.value),
        Some(b"before".to_vec())
    );
    let pending = tokio::spawn(async move {
        let mut last = None;
        while last
            .as_ref()
            .map(|v: &Versioned<Vec<u8>>| v.value.as_slice())
            != Some(b"after")
        {
            last = next_value("the value after the heal", &mut watcher).await;
        }
        last.map(|v| v.version)
    });
    fault.cut();
    await_state(&faulty, SessionState::Suspended).await;
    v.set("during").await.expect("set");
    writer.delete(&path, None).await.expect("delete");
    let version = v.set("after").await.expect("set");
    fault.heal();
    assert_eq!(
        within("the watcher catches up", pending)
            .await
            .expect("task"),
        Some(version)
    );
    let _ = faulty.close().await;
    let _ = writer.close().await;
}

/// Rounds of [`shared_count_lost_answer_counts_once`].
const LOST_ROUNDS: usize = 6;

/// A write of a shared count whose answer is lost (the request reaches the
/// server, the answer never comes back, the connection closes): with one
/// writer, the count moves by exactly one each round — a `try_set`, an
/// `add` or a `set` either reports success, or fails as "outcome unknown"
/// having landed once; it is never repeated on top of itself, and nothing
/// else is returned. An `add` and a `set` read first, so theirs may be
/// the lost answer: a read retried, then the write. (In memory the hook
/// loses create answers only, so there the writes simply succeed.)
pub async fn shared_count_lost_answer_counts_once(h: &dyn Harness) {
    let path = join(&h.root("shared_count_lost_answer_counts_once"), "c");
    let (faulty, fault) = h.open_faulty(SHORT_FAULT_TIMEOUT).await;
    let observer = h.open().await;
    let c = SharedCount::new(&faulty, &path).expect("count");
    let seen = SharedCount::new(&observer, &path).expect("count");
    let mut rounds = Vec::new();
    for round in 0..LOST_ROUNDS {
        await_state(&faulty, SessionState::Connected).await;
        let before = c.get().await.expect("get");
        fault.lose_next_answer();
        let r = match round % 3 {
            0 => within(
                "the try_set whose answer was lost",
                c.try_set(before.version, before.value + 1),
            )
            .await
            .map(|set| assert!(set, "round {round}: a lone writer's try_set failed")),
            1 => within("the add whose answer was lost", c.add(1))
                .await
                .map(|o| assert_eq!((o.pre, o.post), (before.value, before.value + 1))),
            _ => within("the set whose answer was lost", c.set(before.value + 1))
                .await
                .map(drop),
        };
        let moved = seen.get().await.expect("get by the observer").value - before.value;
        assert_eq!(
            moved, 1,
            "round {round}: the write counted {moved} times ({r:?})"
        );
        rounds.push(match r {
            Ok(()) => "ok",
            Err(Error::OutcomeUnknown { .. }) => "outcome unknown",
            Err(e) => panic!("round {round}: {e}"),
        });
    }
    println!("shared count lost answers: {} {rounds:?}", h.name());
    let _ = faulty.close().await;
    let _ = observer.close().await;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __shared_value_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            shared_value::shared_value_missing_node_made_by_set,
            shared_value::shared_value_set_by_another_session_is_seen,
            shared_value::shared_value_cas_exactly_one_wins,
            shared_value::shared_value_watch_sees_last_of_burst,
            shared_value::shared_value_close_ends_watchers,
            shared_value::shared_value_watch_catches_up_after_cut,
            shared_value::shared_count_is_curators_format,
            shared_value::shared_count_concurrent_adds_all_count,
            shared_value::shared_count_lost_answer_counts_once,
            shared_value::shared_value_typed_json,
        );
    };
}

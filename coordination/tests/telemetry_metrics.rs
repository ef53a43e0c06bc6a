//! The `metrics` feature (on for every `cargo test`: this crate's
//! dev-dependency on coord-core enables it): a contended lock on the
//! in-memory backend records its wait in `coord_lock_wait_seconds` with
//! bounded labels, and the waiters and holders gauges come back to 0; a
//! session's state and a lost hold are counted; a queue listing records
//! its depth.
//!
//! One test in this binary: the recorder is process-wide.

use std::collections::HashMap;
use std::time::Duration;

use coord_core::recipes::{Lock, Queue};
use coord_core::{Session, SessionState};
use coord_mem::MemStore;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::MetricKind;

/// A metric's name and its labels, sorted.
type Series = (String, Vec<(String, String)>);

/// What the recorder saw. Its snapshots reset counters and gauges to 0 and
/// drain histograms, so increments are summed over snapshots here; a gauge
/// that is `set` keeps its last value in `last`.
#[derive(Default)]
struct Seen {
    sums: HashMap<Series, f64>,
    last: HashMap<Series, f64>,
    samples: HashMap<Series, Vec<f64>>,
}

impl Seen {
    fn take(&mut self, snapshotter: &Snapshotter) {
        for (key, _, _, value) in snapshotter.snapshot().into_vec() {
            let (kind, key) = key.into_parts();
            let mut labels: Vec<(String, String)> = key
                .labels()
                .map(|l| (l.key().to_owned(), l.value().to_owned()))
                .collect();
            labels.sort();
            let series = (key.name().to_owned(), labels);
            match (kind, value) {
                (MetricKind::Counter, DebugValue::Counter(n)) => {
                    #[allow(clippy::cast_precision_loss)]
                    let n = n as f64;
                    *self.sums.entry(series).or_default() += n;
                }
                (MetricKind::Gauge, DebugValue::Gauge(v)) => {
                    let v = v.into_inner();
                    *self.sums.entry(series.clone()).or_default() += v;
                    if v != 0.0 {
                        self.last.insert(series, v);
                    }
                }
                (MetricKind::Histogram, DebugValue::Histogram(vs)) => self
                    .samples
                    .entry(series)
                    .or_default()
                    .extend(vs.into_iter().map(|v| v.into_inner())),
                other => panic!("unexpected metric value {other:?}"),
            }
        }
    }

    fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.sums.get(&series(name, labels)).copied().unwrap_or(0.0)
    }

    fn samples(&self, name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
        self.samples
            .get(&series(name, labels))
            .cloned()
            .unwrap_or_default()
    }
}

fn series(name: &str, labels: &[(&str, &str)]) -> Series {
    let mut labels: Vec<(String, String)> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    labels.sort();
    (name.to_owned(), labels)
}

/// Take snapshots until `check` holds (10 s at most).
async fn until(
    seen: &mut Seen,
    snapshotter: &Snapshotter,
    what: &str,
    check: impl Fn(&Seen) -> bool,
) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        seen.take(snapshotter);
        if check(seen) {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "never saw: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn reach(s: &Session, want: SessionState) {
    let mut rx = s.state_watch();
    let got = tokio::time::timeout(Duration::from_secs(10), rx.wait_for(|st| *st == want)).await;
    assert!(matches!(got, Ok(Ok(_))), "never reached {want:?}");
}

#[tokio::test]
async fn metrics_follow_a_contended_lock_a_session_and_a_queue() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder
        .install()
        .expect("the only recorder of this test binary");
    let mut seen = Seen::default();

    let store = MemStore::new();
    let a = store.open();
    let b = store.open();
    let id = uuid::Uuid::new_v4().simple().to_string();
    let top = format!("/metrics-{}", &id[..12]);
    let path = format!("{top}/jobs/report");
    let labels = [
        ("backend", "mem"),
        ("prefix", top.as_str()),
        ("recipe", "lock"),
    ];

    until(&mut seen, &snapshotter, "two connected mem sessions", |s| {
        s.sum(
            "coord_session_state",
            &[("backend", "mem"), ("state", "connected")],
        ) == 2.0
    })
    .await;

    // A holds; B waits behind it.
    let held = Lock::new(&a, &path)
        .expect("lock")
        .acquire()
        .await
        .expect("a");
    let lock_b = Lock::new(&b, &path).expect("lock");
    let waiter = tokio::spawn(async move { lock_b.acquire().await });
    until(&mut seen, &snapshotter, "one holder and one waiter", |s| {
        s.sum("coord_lock_holders", &labels) == 1.0 && s.sum("coord_lock_waiters", &labels) == 1.0
    })
    .await;
    // B is queued (its node is there): from now on it waits at least this.
    let lock_a = Lock::new(&a, &path).expect("lock");
    let queued = tokio::time::timeout(Duration::from_secs(10), async {
        while lock_a.participants().await.expect("participants").len() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(queued.is_ok(), "the waiter never queued");
    let min_wait = Duration::from_millis(50);
    tokio::time::sleep(min_wait).await;
    held.release().await.expect("release a");
    let got = waiter.await.expect("task").expect("b acquires");
    until(&mut seen, &snapshotter, "b holding, nobody waiting", |s| {
        s.sum("coord_lock_holders", &labels) == 1.0 && s.sum("coord_lock_waiters", &labels) == 0.0
    })
    .await;
    got.release().await.expect("release b");
    until(&mut seen, &snapshotter, "nobody holding", |s| {
        s.sum("coord_lock_holders", &labels) == 0.0
    })
    .await;

    let waits = seen.samples("coord_lock_wait_seconds", &labels);
    assert_eq!(waits.len(), 2, "one sample per acquire: {waits:?}");
    let longest = waits.iter().copied().fold(0.0, f64::max);
    assert!(
        longest >= min_wait.as_secs_f64(),
        "the waiter's wait {longest}s is under the {min_wait:?} it surely waited"
    );
    assert_eq!(seen.sum("coord_lock_waiters", &labels), 0.0);
    assert_eq!(seen.sum("coord_lock_holds_lost_total", &labels), 0.0);

    // A hold whose session expires is lost: counted once, and no longer held.
    let lost_guard = Lock::new(&b, &path)
        .expect("lock")
        .acquire()
        .await
        .expect("b again");
    until(&mut seen, &snapshotter, "b holding again", |s| {
        s.sum("coord_lock_holders", &labels) == 1.0
    })
    .await;
    assert!(store.expire(&b.id()), "the store held b");
    reach(&b, SessionState::Expired).await;
    let why = lost_guard.lost().await;
    assert!(why.is_session_end(), "lost for {why:?}");
    drop(lost_guard);
    until(&mut seen, &snapshotter, "the lost hold counted", |s| {
        s.sum("coord_lock_holds_lost_total", &labels) == 1.0
            && s.sum("coord_lock_holders", &labels) == 0.0
    })
    .await;
    until(&mut seen, &snapshotter, "b counted expired", |s| {
        s.sum(
            "coord_session_state",
            &[("backend", "mem"), ("state", "connected")],
        ) == 1.0
            && s.sum(
                "coord_session_state",
                &[("backend", "mem"), ("state", "expired")],
            ) == 1.0
    })
    .await;
    // Every handle of b gone: it no longer counts.
    drop(b);
    until(&mut seen, &snapshotter, "b no longer counted", |s| {
        s.sum(
            "coord_session_state",
            &[("backend", "mem"), ("state", "expired")],
        ) == 0.0
    })
    .await;

    // A queue's length is its observed depth.
    let queue = Queue::new(&a, &format!("{top}/work/q")).expect("queue");
    for item in [b"1", b"2", b"3"] {
        queue.offer(item).await.expect("offer");
    }
    assert_eq!(queue.len().await.expect("len"), 3);
    seen.take(&snapshotter);
    assert_eq!(
        seen.last
            .get(&series(
                "coord_queue_depth",
                &[("backend", "mem"), ("prefix", top.as_str())]
            ))
            .copied(),
        Some(3.0)
    );

    // Bounded labels: no series of this test carries the full path or a
    // node's name, only the first segment.
    for (name, labels) in seen
        .sums
        .keys()
        .chain(seen.samples.keys())
        .chain(seen.last.keys())
    {
        for (key, value) in labels {
            assert!(
                !value.contains("/jobs") && !value.contains("/work") && !value.contains("_c_"),
                "{name} has the label {key}={value}: more than the path's first segment"
            );
        }
    }
    a.close().await.expect("close a");
}

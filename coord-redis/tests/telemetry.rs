//! No secret in what coord tells a tracing subscriber: a session opened
//! with a password in its URL (a Redis ACL user this test makes on the
//! server at `COORD_TEST_REDIS`) shows its id as the `session` field of
//! every span and event, at every level, and the password nowhere — through
//! an acquire, a release, and the session's expiry. And the `metrics`
//! feature (on for these tests) on a real server: a contended lock's wait
//! is recorded with bounded labels.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use coord_core::recipes::Lock;
use coord_core::SessionState;
use coord_redis::RedisOptions;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// Every field of every event and span, as `name=value` text, and the
/// `session` fields apart.
#[derive(Clone, Default)]
struct Collect {
    text: Arc<Mutex<Vec<String>>>,
    sessions: Arc<Mutex<Vec<String>>>,
}

struct Text<'a>(&'a Collect, Vec<String>);

impl Visit for Text<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let value = format!("{value:?}");
        if field.name() == "session" {
            self.0
                .sessions
                .lock()
                .expect("sessions")
                .push(value.clone());
        }
        self.1.push(format!("{}={value}", field.name()));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "session" {
            self.0
                .sessions
                .lock()
                .expect("sessions")
                .push(value.to_owned());
        }
        self.1.push(format!("{}={value}", field.name()));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Collect {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _id: &tracing::span::Id,
        _ctx: Context<'_, S>,
    ) {
        let mut t = Text(self, vec![format!("span {}", attrs.metadata().name())]);
        attrs.record(&mut t);
        self.text.lock().expect("text").push(t.1.join(" "));
    }

    fn on_record(
        &self,
        _id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        _ctx: Context<'_, S>,
    ) {
        let mut t = Text(self, vec!["record".to_owned()]);
        values.record(&mut t);
        self.text.lock().expect("text").push(t.1.join(" "));
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut t = Text(self, vec![format!("event {}", event.metadata().name())]);
        event.record(&mut t);
        self.text.lock().expect("text").push(t.1.join(" "));
    }
}

/// `redis://user:password@…` for the test server's host and port.
fn with_user(url: &str, user: &str, password: &str) -> String {
    let (host, _) = common::via(url, "");
    format!("redis://{user}:{password}@{host}")
}

#[tokio::test]
async fn no_password_reaches_a_span_or_an_event() {
    let url = common::redis_url();
    let admin = redis::Client::open(url.as_str()).expect("the test server's URL");
    let mut admin = admin
        .get_multiplexed_async_connection()
        .await
        .expect("the Redis server at COORD_TEST_REDIS");
    let id = uuid::Uuid::new_v4().simple().to_string();
    let user = format!("coord-telemetry-{}", &id[..12]);
    let password = format!("pw-{}", &id[12..]);
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg(&user)
        .arg("on")
        .arg(format!(">{password}"))
        .arg("~*")
        .arg("&*")
        .arg("+@all")
        .query_async(&mut admin)
        .await
        .expect("ACL SETUSER");

    let collect = Collect::default();
    let subscriber = tracing_subscriber::registry().with(collect.clone());
    let guard = tracing::subscriber::set_default(subscriber);

    let options = RedisOptions::new(with_user(&url, &user, &password))
        .with_namespace(format!("coord-test-{}", &id[..12]));
    let session = coord_redis::connect(options.clone())
        .await
        .expect("a session as the ACL user");
    let path = format!("/telemetry/{}", &id[..12]);
    let lock = Lock::new(&session, &path).expect("lock");
    lock.acquire()
        .await
        .expect("acquire")
        .release()
        .await
        .expect("release");
    let held = lock.acquire().await.expect("acquire again");
    coord_redis::testing::expire(&options, &session.id())
        .await
        .expect("expire the session");
    let mut state = session.state_watch();
    let expired = tokio::time::timeout(
        Duration::from_secs(30),
        state.wait_for(|s| *s == SessionState::Expired),
    )
    .await;
    assert!(matches!(expired, Ok(Ok(_))), "the session never expired");
    let why = held.lost().await;
    assert!(why.is_session_end(), "lost for {why:?}");
    let sid = session.id().to_string();
    drop(held);
    drop(lock);
    drop(session);
    drop(guard);

    let _: () = redis::cmd("ACL")
        .arg("DELUSER")
        .arg(&user)
        .query_async(&mut admin)
        .await
        .expect("ACL DELUSER");

    let text = collect.text.lock().expect("text").clone();
    assert!(
        text.iter()
            .any(|t| t.starts_with("span coord.lock.acquire")),
        "the acquire's span was seen: {text:#?}"
    );
    assert!(
        text.iter()
            .any(|t| t.starts_with("event coord.session.state") && t.contains("state=expired")),
        "the expiry was seen: {text:#?}"
    );
    for t in &text {
        assert!(!t.contains(&password), "the password is in: {t}");
    }
    let sessions = collect.sessions.lock().expect("sessions").clone();
    assert!(!sessions.is_empty(), "no `session` field at all: {text:#?}");
    for s in &sessions {
        assert_eq!(s, &sid, "a `session` field that is not the id: {s}");
        assert!(!s.contains("redis://") && !s.contains('@'), "{s}");
    }
}

/// The value of the gauge or the samples of the histogram `name` whose
/// labels are exactly `labels`, from one snapshot (which resets them).
fn read<'s, U, D>(
    snapshot: &'s [(
        metrics_util::CompositeKey,
        U,
        D,
        metrics_util::debugging::DebugValue,
    )],
    name: &str,
    labels: &[(&str, &str)],
) -> Option<&'s metrics_util::debugging::DebugValue> {
    snapshot.iter().find_map(|(key, _, _, value)| {
        let key = key.key();
        let mut have: Vec<(&str, &str)> = key.labels().map(|l| (l.key(), l.value())).collect();
        let mut want = labels.to_vec();
        have.sort_unstable();
        want.sort_unstable();
        (key.name() == name && have == want).then_some(value)
    })
}

/// On a real server: a contended lock's wait is in
/// `coord_lock_wait_seconds{backend="redis"}` with the path's first
/// segment only, and nobody holds or waits once both released.
#[tokio::test]
async fn a_contended_lock_records_its_wait_on_redis() {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder
        .install()
        .expect("the only recorder of this test binary");

    let harness = common::RedisHarness::from_env();
    let a = coord_redis::connect(harness.options()).await.expect("a");
    let b = coord_redis::connect(harness.options()).await.expect("b");
    let id = uuid::Uuid::new_v4().simple().to_string();
    let top = format!("/metrics-{}", &id[..12]);
    let path = format!("{top}/report");
    let labels = [
        ("backend", "redis"),
        ("prefix", top.as_str()),
        ("recipe", "lock"),
    ];

    let held = Lock::new(&a, &path)
        .expect("lock")
        .acquire()
        .await
        .expect("a");
    let lock_b = Lock::new(&b, &path).expect("lock");
    let waiter = tokio::spawn(async move { lock_b.acquire().await });
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
    waiter
        .await
        .expect("task")
        .expect("b acquires")
        .release()
        .await
        .expect("release b");

    let snapshot = snapshotter.snapshot().into_vec();
    let Some(DebugValue::Histogram(waits)) = read(&snapshot, "coord_lock_wait_seconds", &labels)
    else {
        panic!("no wait histogram with {labels:?}: {snapshot:#?}");
    };
    assert_eq!(waits.len(), 2, "one sample per acquire: {waits:?}");
    let longest = waits.iter().map(|w| w.into_inner()).fold(0.0, f64::max);
    assert!(
        longest >= min_wait.as_secs_f64(),
        "b's wait {longest}s is under the {min_wait:?} it surely waited"
    );
    // Each gauge went up and back down by as much: the snapshot's value
    // (its sum since it was made) is 0.
    for gauge in ["coord_lock_holders", "coord_lock_waiters"] {
        assert!(
            matches!(read(&snapshot, gauge, &labels), Some(DebugValue::Gauge(v)) if v.into_inner() == 0.0),
            "{gauge} is not back to 0: {snapshot:#?}"
        );
    }
    a.close().await.expect("close a");
    b.close().await.expect("close b");
}

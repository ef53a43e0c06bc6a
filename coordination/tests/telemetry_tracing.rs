//! What coord tells a tracing subscriber, on the in-memory backend: an
//! acquire runs in a `coord.lock.acquire` span with the backend, session
//! and path, and emits `coord.acquired` with how long it waited and
//! `coord.released` when let go; a session's expiry is one
//! `coord.session.state` event, not one per layer.
//!
//! The events are collected by a small layer of our own, set as the
//! thread's default subscriber; the tests run on a current-thread runtime,
//! so every task they spawn reports to it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coord_core::recipes::Lock;
use coord_core::{Session, SessionState};
use coord_mem::MemStore;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// Field values as text (strings without quotes).
#[derive(Debug, Clone, Default)]
struct Fields(HashMap<String, String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

/// One event as seen: its name, target, level, fields, and the spans it
/// happened in (outermost first) with theirs.
#[derive(Debug, Clone)]
struct Seen {
    name: String,
    target: String,
    level: Level,
    fields: HashMap<String, String>,
    spans: Vec<(String, HashMap<String, String>)>,
}

impl Seen {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
    fn span(&self, name: &str) -> Option<&HashMap<String, String>> {
        self.spans.iter().find(|(n, _)| n == name).map(|(_, f)| f)
    }
}

#[derive(Clone, Default)]
struct Collect(Arc<Mutex<Vec<Seen>>>);

impl Collect {
    fn events(&self) -> Vec<Seen> {
        self.0.lock().expect("events").clone()
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Collect {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: Context<'_, S>,
    ) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let spans = ctx
            .event_scope(event)
            .map(|scope| {
                scope
                    .from_root()
                    .map(|s| {
                        let f = s.extensions().get::<Fields>().cloned().unwrap_or_default();
                        (s.name().to_owned(), f.0)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let meta = event.metadata();
        self.0.lock().expect("events").push(Seen {
            name: meta.name().to_owned(),
            target: meta.target().to_owned(),
            level: *meta.level(),
            fields: fields.0,
            spans,
        });
    }
}

fn collecting() -> (Collect, tracing::subscriber::DefaultGuard) {
    let collect = Collect::default();
    let subscriber = tracing_subscriber::registry().with(collect.clone());
    (collect, tracing::subscriber::set_default(subscriber))
}

async fn reach(s: &Session, want: SessionState) {
    let mut rx = s.state_watch();
    let got = tokio::time::timeout(Duration::from_secs(10), rx.wait_for(|st| *st == want)).await;
    assert!(matches!(got, Ok(Ok(_))), "never reached {want:?}");
}

fn unique(what: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("/tracing-{what}-{}", &id[..12])
}

#[tokio::test]
async fn an_acquire_is_a_span_with_its_wait_and_its_release() {
    let (collect, _guard) = collecting();
    let store = MemStore::new();
    let a = store.open();
    let b = store.open();
    let path = unique("lock");

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
    let got = waiter.await.expect("task").expect("b acquires");
    got.release().await.expect("release b");

    let events = collect.events();
    let b_id = b.id().to_string();
    let acquired: Vec<&Seen> = events
        .iter()
        .filter(|e| e.name == "coord.acquired")
        .filter(|e| {
            e.span("coord.lock.acquire")
                .is_some_and(|s| s.get("session") == Some(&b_id))
        })
        .collect();
    assert_eq!(acquired.len(), 1, "b's acquire: {events:#?}");
    let ev = acquired[0];
    assert_eq!(ev.target, "coord");
    assert_eq!(ev.level, Level::INFO);
    assert_eq!(ev.field("recipe"), Some("lock"));
    let waited: f64 = ev
        .field("wait_seconds")
        .expect("wait_seconds")
        .parse()
        .expect("a number");
    assert!(
        waited >= min_wait.as_secs_f64(),
        "b waited {waited}s, surely at least {min_wait:?}"
    );
    let span = ev.span("coord.lock.acquire").expect("in the acquire span");
    assert_eq!(span.get("backend").map(String::as_str), Some("mem"));
    assert_eq!(span.get("path"), Some(&path));
    assert_eq!(span.get("recipe").map(String::as_str), Some("lock"));

    // Both holds said they ended, each once, with the session's id.
    for s in [&a, &b] {
        let id = s.id().to_string();
        let released: Vec<&Seen> = events
            .iter()
            .filter(|e| e.name == "coord.released" && e.field("session") == Some(id.as_str()))
            .collect();
        assert_eq!(released.len(), 1, "{id}: {events:#?}");
        assert_eq!(released[0].level, Level::INFO);
        assert_eq!(released[0].field("path"), Some(path.as_str()));
        assert_eq!(released[0].field("backend"), Some("mem"));
        assert_eq!(released[0].field("in_background"), Some("false"));
    }
    assert!(
        !events.iter().any(|e| e.name == "coord.lost"),
        "nothing was lost: {events:#?}"
    );
    a.close().await.expect("close a");
    b.close().await.expect("close b");
}

#[tokio::test]
async fn an_expiry_is_one_event_and_the_hold_says_it_is_lost() {
    let (collect, _guard) = collecting();
    let store = MemStore::new();
    let s = store.open();
    let id = s.id().to_string();
    let path = unique("expiry");
    let guard = Lock::new(&s, &path)
        .expect("lock")
        .acquire()
        .await
        .expect("acquire");

    assert!(store.expire(&s.id()), "the store held the session");
    reach(&s, SessionState::Expired).await;
    let why = guard.lost().await;
    assert!(why.is_session_end(), "lost for {why:?}");
    drop(guard);
    drop(s);
    // Let the session's own tasks see the end and finish.
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }

    let events = collect.events();
    let about_this: Vec<&Seen> = events
        .iter()
        .filter(|e| e.field("session") == Some(id.as_str()))
        .collect();
    let states: Vec<(&str, Level)> = about_this
        .iter()
        .filter(|e| e.name == "coord.session.state")
        .map(|e| (e.field("state").expect("state"), e.level))
        .collect();
    assert_eq!(
        states,
        [("connected", Level::INFO), ("expired", Level::WARN)],
        "{events:#?}"
    );
    let expired = about_this
        .iter()
        .find(|e| e.field("state") == Some("expired"))
        .expect("the expiry");
    assert_eq!(expired.target, "coord");
    assert_eq!(expired.field("backend"), Some("mem"));
    assert_eq!(expired.field("from"), Some("connected"));
    // Said once: no other event at INFO or above speaks of the expiry.
    let loud_expiries = events
        .iter()
        .filter(|e| e.level <= Level::INFO)
        .filter(|e| {
            e.fields
                .values()
                .any(|v| v.to_lowercase().contains("expired"))
        })
        .filter(|e| e.name != "coord.lost")
        .count();
    assert_eq!(loud_expiries, 1, "{events:#?}");
    let lost: Vec<&&Seen> = about_this
        .iter()
        .filter(|e| e.name == "coord.lost")
        .collect();
    assert_eq!(lost.len(), 1, "{events:#?}");
    assert_eq!(lost[0].level, Level::WARN);
    assert_eq!(lost[0].field("path"), Some(path.as_str()));
}

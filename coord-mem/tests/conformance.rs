//! The whole conformance suite on the in-memory backend.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coord_conformance::fault::{Fault, FaultHooks};
use coord_conformance::Harness;
use coord_core::{Client, ClientOptions, Session, SessionId};
use coord_mem::MemStore;

/// One store per test, shared by every session the test opens; `expire`
/// is the store's hook.
struct MemHarness {
    store: MemStore,
}

impl MemHarness {
    fn new() -> Self {
        MemHarness {
            store: MemStore::new(),
        }
    }
}

#[async_trait::async_trait]
impl Harness for MemHarness {
    fn name(&self) -> &'static str {
        "mem"
    }

    async fn open(&self) -> Session {
        self.store.open()
    }

    async fn expire(&self, session: &Session) {
        self.store.expire(&session.id());
    }

    /// The store's hooks over every session the client opens. While a
    /// partition or a cut is on, opening a session fails as a connection
    /// would; a session opened then is never handed out.
    async fn faulty_client(
        &self,
        session_timeout: Duration,
        options: ClientOptions,
    ) -> (Client, Box<dyn Fault>) {
        let ids: Arc<Mutex<Vec<SessionId>>> = Arc::default();
        let down = Arc::new(AtomicBool::new(false));
        let (store, opened, refused) = (self.store.clone(), ids.clone(), down.clone());
        let client = Client::start(
            move || {
                let result = if refused.load(Ordering::SeqCst) {
                    Err(coord_core::Error::ConnectionLost(
                        "the fault refuses new connections".into(),
                    ))
                } else {
                    let session = store.open_with_session_timeout(session_timeout);
                    opened
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(session.id());
                    Ok(session)
                };
                async move { result }
            },
            options,
        );
        let flag = |on: bool, then: Box<dyn Fn() + Send + Sync>| {
            let down = down.clone();
            Box::new(move || {
                down.store(on, Ordering::SeqCst);
                then();
            }) as Box<dyn Fn() + Send + Sync>
        };
        let fault = FaultHooks {
            partition: flag(true, self.hooks_over(ids.clone(), MemStore::suspend)),
            silence: self.hooks_over(ids.clone(), MemStore::silence),
            cut: flag(true, self.hooks_over(ids.clone(), MemStore::suspend)),
            heal: flag(false, self.hooks_over(ids.clone(), MemStore::resume)),
            lose_next_answer: self.hooks_over(ids, MemStore::lose_next_create_answer),
        };
        (client, Box::new(fault))
    }

    /// The store's hooks: a partition or a cut suspends the session (the
    /// store hears nothing), silence suspends only the client's side (the
    /// store still hears its heartbeats), heal resumes it.
    async fn open_faulty(&self, session_timeout: Duration) -> (Session, Box<dyn Fault>) {
        let session = self.store.open_with_session_timeout(session_timeout);
        let hook = |f: fn(&MemStore, &coord_core::SessionId) -> bool| {
            let (store, id) = (self.store.clone(), session.id());
            Box::new(move || {
                f(&store, &id);
            }) as Box<dyn Fn() + Send + Sync>
        };
        let fault = FaultHooks {
            partition: hook(MemStore::suspend),
            silence: hook(MemStore::silence),
            cut: hook(MemStore::suspend),
            heal: hook(MemStore::resume),
            lose_next_answer: hook(MemStore::lose_next_create_answer),
        };
        (session, Box::new(fault))
    }
}

impl MemHarness {
    /// Hooks that apply `f` to every live session in `ids`.
    fn hooks_over(
        &self,
        ids: Arc<Mutex<Vec<SessionId>>>,
        f: fn(&MemStore, &SessionId) -> bool,
    ) -> Box<dyn Fn() + Send + Sync> {
        let store = self.store.clone();
        Box::new(move || {
            for id in ids.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                f(&store, id);
            }
        })
    }
}

coord_conformance::conformance_tests!(MemHarness::new());

//! The whole conformance suite on the in-memory backend.

use std::time::Duration;

use coord_conformance::fault::{Fault, FaultHooks};
use coord_conformance::Harness;
use coord_core::Session;
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

coord_conformance::conformance_tests!(MemHarness::new());

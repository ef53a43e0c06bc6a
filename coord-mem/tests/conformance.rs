//! The whole conformance suite on the in-memory backend.

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
}

coord_conformance::conformance_tests!(MemHarness::new());

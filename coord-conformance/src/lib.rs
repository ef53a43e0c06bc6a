//! # coord-conformance
//!
//! One suite of tests that every coord backend runs, identically. A backend
//! proves itself by implementing [`Harness`] (open a session, expire one,
//! open one behind a [`fault::Fault`]) and
//! calling [`conformance_tests!`] in one short test file:
//!
//! ```no_run
//! // tests/conformance.rs of a backend crate
//! use coord_conformance::Harness;
//! use coord_core::Session;
//!
//! struct MyHarness; // connection settings, e.g. read from the environment
//!
//! #[async_trait::async_trait]
//! impl Harness for MyHarness {
//!     fn name(&self) -> &'static str {
//!         "mine"
//!     }
//!     async fn open(&self) -> Session {
//!         todo!("connect to the server; panic if it cannot be reached")
//!     }
//!     async fn expire(&self, session: &Session) {
//!         todo!("make the server end {}", session.id())
//!     }
//!     async fn open_faulty(
//!         &self,
//!         timeout: std::time::Duration,
//!     ) -> (Session, Box<dyn coord_conformance::fault::Fault>) {
//!         // Put the session behind a FaultProxy in front of the server.
//!         let proxy = coord_conformance::fault::FaultProxy::start("127.0.0.1:2181").await;
//!         todo!("connect to {} with session timeout {timeout:?}", proxy.addr())
//!     }
//! }
//!
//! // At the top level of the test file, this one line is the whole run:
//! // coord_conformance::conformance_tests!(MyHarness);
//! ```
//!
//! Every test is a plain `pub async fn(&dyn Harness)` in one of the modules
//! below, so a backend can also call one by hand. Each works under its own
//! random root ([`Harness::root`]), so tests never see each other's nodes.
//!
//! The lock tests ([`locks`], and the revocation and scoped-helper tests)
//! run over every implementation of `Lockable` in one list,
//! [`lock_kinds::lock_kinds`], each kind declaring what it promises
//! (exclusive or shared, FIFO, reentrant, wake-ups per release): a new lock
//! recipe is tested by adding one line there.
//!
//! ## Errors and cancel safety of every test
//!
//! A test returns nothing: it panics, saying what broke, when the backend
//! does not conform, and it fails (panics) rather than skips when the
//! backend cannot be reached. Each awaits conditions with a deadline
//! ([`CONDITION_DEADLINE`], [`WAIT`]) and never sleeps and hopes.
//!
//! A test may be dropped at any await point (the macro's runner drops it
//! when it passes [`TEST_DEADLINE`]): its sessions are then dropped
//! unclosed, their ephemeral nodes go with their sessions' end, and its
//! persistent nodes stay under its own random root, where no other test
//! looks.
#![warn(missing_docs)]

use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use coord_core::{Session, SessionState};

pub mod barrier;
pub mod caches;
pub mod cluster;
mod conditions;
pub mod counter;
pub mod election;
pub mod fault;
pub mod faults;
pub mod group;
pub mod inspect;
pub mod latch;
pub mod lock_kinds;
pub mod locks;
pub mod multi_lock;
pub mod participants;
pub mod partitioner;
pub mod periodic_job;
pub mod primitives;
pub mod priority_delay_queue;
pub mod queue;
pub mod recipe_faults;
pub mod reentrant;
pub mod revocation;
pub mod round_trips;
pub mod rwlock;
pub mod scoped;
pub mod semaphore;
pub mod server;
pub mod server_restart;
mod support;
pub mod tree_watch;
pub mod ttl;

pub use conditions::*;
pub use support::*;

/// What the suite needs from a backend.
#[async_trait]
pub trait Harness: Send + Sync {
    /// The backend's short name, for messages.
    fn name(&self) -> &'static str;

    /// Open a new session (its own connection where the backend has them).
    /// Panics if the backend cannot be reached: a test that needs a server
    /// it cannot reach fails.
    async fn open(&self) -> Session;

    /// Make the server end `session` now, as if it had missed its timeout
    /// (ZooKeeper: a second handle on the same session closes it; etcd:
    /// revoke its lease; Redis: delete its key; memory: the store's hook).
    /// Returns once the server has ended it; the session's own state may
    /// learn of it a little later.
    async fn expire(&self, session: &Session);

    /// Open a session behind a fault injector (a [`fault::FaultProxy`]
    /// between it and the server; in memory, the store's hooks) asking for
    /// `session_timeout` as its session timeout (etcd rounds it up to whole
    /// seconds). Only that session's traffic is affected. Panics if the
    /// backend cannot be reached.
    async fn open_faulty(&self, session_timeout: Duration) -> (Session, Box<dyn fault::Fault>);

    /// Whether the backend offers [`Session::watch_tree`]. Where it says
    /// not, the suite checks the call is refused with `NotSupported`.
    fn tree_watches(&self) -> bool {
        true
    }

    /// A fresh, unique root for one test.
    fn root(&self, test: &str) -> String {
        let id = uuid::Uuid::new_v4().simple().to_string();
        format!("/coord-conformance/{test}-{}", &id[..12])
    }
}

/// Longest a single conformance test may run before it is failed as hung.
pub const TEST_DEADLINE: Duration = Duration::from_secs(120);

#[doc(hidden)]
pub fn __run<F: Future<Output = ()>>(name: &str, fut: F) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("build a tokio runtime");
    rt.block_on(async {
        if tokio::time::timeout(TEST_DEADLINE, fut).await.is_err() {
            panic!("conformance test {name} did not finish within {TEST_DEADLINE:?}");
        }
    });
}

/// Wait until `session` reports the terminal state `want` (after
/// [`Harness::expire`] the client learns of it asynchronously).
///
/// # Errors
/// Panics if it does not within 30 s.
///
/// # Cancel safety
/// Cancel safe: it only watches.
pub async fn await_state(session: &Session, want: SessionState) {
    let mut rx = session.state_watch();
    let got = tokio::time::timeout(Duration::from_secs(30), rx.wait_for(|s| *s == want)).await;
    assert!(
        matches!(got, Ok(Ok(_))),
        "session {} never reached {want:?} (now {:?})",
        session.id(),
        session.state()
    );
}

#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_each {
    ($make:expr; $($module:ident :: $name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                $crate::__run(stringify!($name), async {
                    let harness = $make;
                    $crate::$module::$name(&harness).await;
                });
            }
        )*
    };
}

/// Instantiate every conformance test for a backend: one `#[test]` each.
/// `$make` is an expression that builds the backend's [`Harness`]; it is
/// evaluated inside each test's own tokio runtime.
#[macro_export]
macro_rules! conformance_tests {
    ($make:expr) => {
        $crate::__primitives_tests!($make);
        $crate::__lock_tests!($make);
        $crate::__multi_lock_tests!($make);
        $crate::__reentrant_tests!($make);
        $crate::__revocation_tests!($make);
        $crate::__participants_tests!($make);
        $crate::__scoped_tests!($make);
        $crate::__election_tests!($make);
        $crate::__latch_tests!($make);
        $crate::__queue_tests!($make);
        $crate::__priority_delay_queue_tests!($make);
        $crate::__group_tests!($make);
        $crate::__partitioner_tests!($make);
        $crate::__barrier_tests!($make);
        $crate::__periodic_job_tests!($make);
        $crate::__counter_tests!($make);
        $crate::__cache_tests!($make);
        $crate::__tree_watch_tests!($make);
        $crate::__ttl_tests!($make);
        $crate::__inspect_tests!($make);
        $crate::__fault_tests!($make);
        $crate::__recipe_faults_tests!($make);
        $crate::__round_trips_tests!($make);
    };
}

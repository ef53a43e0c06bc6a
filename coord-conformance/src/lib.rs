//! # coord-conformance
//!
//! One suite of tests that every coord backend runs, identically. A backend
//! proves itself by implementing [`Harness`] (open a session, expire one,
//! open one or a supervised client behind a [`fault::Fault`]) and
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
//!     async fn faulty_client(
//!         &self,
//!         timeout: std::time::Duration,
//!         options: coord_core::ClientOptions,
//!     ) -> (coord_core::Client, Box<dyn coord_conformance::fault::Fault>) {
//!         // Every session the client opens goes through one FaultProxy.
//!         let proxy = coord_conformance::fault::FaultProxy::start("127.0.0.1:2181").await;
//!         todo!("Client::start with an opener connecting to {} ({timeout:?}, {options:?})", proxy.addr())
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

pub mod barrier;
pub mod caches;
pub mod cluster;
pub mod come_back;
pub mod come_back_nodes;
mod conditions;
pub mod counter;
pub mod discovery;
mod each;
pub mod election;
pub mod fault;
pub mod faults;
pub mod follow_caches;
pub mod group;
mod harness;
pub mod inspect;
pub mod latch;
pub mod lock_kinds;
pub mod locks;
pub mod loss_reason;
pub mod multi_lock;
pub mod participants;
pub mod partitioner;
pub mod periodic_job;
pub mod persistent_node;
pub mod primitives;
pub mod priority_delay_queue;
pub mod queue;
pub mod recipe_faults;
pub mod reentrant;
pub mod rejoining_partitioner;
pub mod restart_come_back;
pub mod revocation;
pub mod round_trips;
pub mod rwlock;
pub mod scoped;
pub mod semaphore;
pub mod server;
pub mod server_restart;
mod service;
pub mod shared_value;
mod suite;
mod support;
pub mod tree_watch;
pub mod ttl;

pub use conditions::*;
pub use support::*;

#[doc(hidden)]
pub use harness::__run;
pub use harness::{await_state, Harness, TEST_DEADLINE};

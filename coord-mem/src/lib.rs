//! # coord-mem
//!
//! The in-process coord backend: many sessions over one shared tree in
//! memory. It implements the primitive contract of
//! [`coord_core::backend::PrimitiveSession`] exactly and is the reference semantics
//! every other backend is checked against (it runs the whole
//! `coord-conformance` suite), and it has the fault hooks tests need: expire
//! a session, suspend and resume it, or stop its heartbeat and let its TTL
//! run out (see [`MemStore`]).
//!
//! Like ZooKeeper, it refuses children under an ephemeral node
//! ([`coord_core::Error::NotSupported`]), names sequential nodes with a
//! ten-digit, zero-padded counter per parent that is never reused while the
//! parent lives (a name already taken by hand is skipped), and gives every
//! created node a stamp from one store-wide counter (the root has 0).
//! Versions start at 0 and count sets. Only nodes created sequential carry
//! a [`coord_core::Child::sequence`]; the others are listed after them, by
//! name. Each node keeps its children in sequence order too, so
//! `Session::place` and `Session::first_children` are answered from that
//! index in O(log N) (`orders_at_server` is true), never from a listing.
//!
//! A transaction (`Session::commit`) is checked whole under the store's
//! lock, then applied; its limits are ZooKeeper's (1,000 steps, 960,000
//! bytes), so a test on mem refuses what ZooKeeper would.
//!
//! # Cancel safety
//! Every operation of a mem session takes the store's lock once, on its
//! first poll, and does all its work there: a future dropped before it was
//! polled did nothing, and once polled its write has happened. A
//! `wait_gone` or a [`coord_core::Watch`] dropped while waiting only
//! unregisters; nothing leaks (see [`MemStore::registered_watches`]).
//!
//! ```
//! use coord_core::{CreateMode, Error, SessionState};
//! use coord_mem::MemStore;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> coord_core::Result<()> {
//! let store = MemStore::new();
//! let alice = store.open();
//! let bob = store.open();
//!
//! alice.create("/workers/alice", b"up", CreateMode::Ephemeral).await?;
//! assert!(bob.exists("/workers/alice").await?);
//!
//! // The server gives up on alice: her ephemeral node goes with her session.
//! assert!(store.expire(&alice.id()));
//! assert_eq!(alice.state(), SessionState::Expired);
//! assert!(!bob.exists("/workers/alice").await?);
//! assert!(matches!(alice.get("/workers").await, Err(Error::SessionExpired)));
//! # Ok(())
//! # }
//! ```
#![warn(missing_docs)]

mod kids;
mod session;
mod shared;
mod store;
mod tree;
mod txn;

pub use store::{MemStore, DEFAULT_SESSION_TIMEOUT};

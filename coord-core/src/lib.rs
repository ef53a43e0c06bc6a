//! # coord-core
//!
//! Distributed coordination recipes — locks, read/write locks, semaphores and
//! more — written once over a small primitive contract
//! ([`backend::PrimitiveSession`]) that every backend
//! implements: ZooKeeper, etcd, Redis, or the in-process `coord-mem`.
//!
//! Users hold a [`Session`] (opened by a backend crate) and build recipes
//! ([`recipes`]) on it. Code that should not care which recipe it gets is
//! written against the traits ([`Lockable`](prelude::Lockable),
//! [`Hold`](prelude::Hold), [`LeaderElection`](prelude::LeaderElection),
//! [`WorkQueue`](prelude::WorkQueue)); `use coord_core::prelude::*` brings
//! them in. Every argument is checked before any I/O ([`path`]); every
//! error is one [`Error`].
//!
//! # Cargo features
//!
//! | feature | adds | compiles |
//! |---|---|---|
//! | `metrics` | metrics (lock wait times, waiters, holders, lost holds, session states, queue depths) through the [`metrics`](https://docs.rs/metrics) facade: see [`telemetry`] | the `metrics` crate |
//! | `tls-probe` | for backend authors: the one TLS handshake probe the ZooKeeper and etcd backends share (`backend::tls_probe`), and the sniff of what listens at an address after a failed connect (`backend::sniff`) | rustls (ring provider), the public web roots |
//! | `serde` | the JSON codec of a typed shared value (`recipes::Json`, `TypedSharedValue::new`) | `serde` (serde_json is always compiled: discovery needs it) |
//!
//! All are off by default: without them coord-core compiles no metrics
//! code and no TLS stack. Through the `coordination` facade, turn on its
//! `metrics` or `serde` feature; the backends that need `tls-probe` turn
//! it on themselves.
//!
//! # Event streams
//! Everything that reports a sequence of events — the caches, the
//! watchers, [`LeaderObserver`](recipes::LeaderObserver),
//! [`Participant`](recipes::Participant), [`TreeWatch`] — is a
//! [`Stream`](futures_core::Stream), with an inherent `next()` that
//! behaves exactly as `StreamExt::next` (and needs no import). Each type's
//! doc says which of two kinds it is:
//!
//! * `Item = Result<T>` where reading can fail. An error that ends the
//!   stream (the session's end, a closed cache, a watch that is over) is
//!   yielded once as `Some(Err(e))`; then the stream ends (`None`) — for
//!   a cache, until `restart` (a cache that follows a [`Client`] reports a
//!   session's end as [`CacheEvent::Reset`](recipes::CacheEvent::Reset)
//!   instead, and goes on). An error that leaves the stream usable (a
//!   lost connection the watcher will ride out, a counter holding a value
//!   that is not a number) is `Some(Err(e))` and the stream goes on.
//! * `Item = T` where a task reports its own failures as events (an
//!   election's `Failed`, a latch's `NotLeader`, a partitioner's
//!   `Failed`); the stream ends when the task is over.
//!
//! Every `next()` is cancel safe: dropped before it resolves, it loses
//! nothing, and the next call goes on from where it was.
//!
//! # Map
//! Layers, bottom first. A file imports only from its own layer's files
//! below it and from lower layers, never upward, and no two files import
//! each other, directly or through a chain.
//!
//! | Layer | Holds |
//! |---|---|
//! | `error.rs`, `path.rs`, `limits.rs`, `layout.rs` | the vocabulary: the one [`Error`], path and size rules, duration limits, and every name the recipes write on the server ([`layout`]) |
//! | `backend/` | what only backend authors need ([`backend`]): the primitive contract and its node types (public at the root), the lease clock, backoff, redaction, TLS material |
//! | `telemetry/` | spans, events and metrics ([`telemetry`]); told the backend and session id, it knows nothing of the layers above |
//! | `session.rs` | [`Session`], the checked handle every recipe holds |
//! | `client/` | [`Client`]: one live session at a time, the next opened after the last ends ([`client`]) |
//! | `machinery/` | crate-private helpers: cancel-safe creates and deletes, retried reads, waits, counters, event streams that a dropped `next()` leaves intact |
//! | `hold/` | what every guard is made of: the `Hold` trait and [`while_held`](recipes::while_held), the held node, contenders and queueing, revocation |
//! | `recipes/` | one folder or file per family, its trait beside its recipes: `lock/`, `election/`, `queue/`, `cache/`, then group, `partitioner/`, barrier, counter, periodic job (a family may use an earlier one: a semaphore or a periodic job holds a `Lock`) |
//! | `inspect/` | what lives at a path ([`inspect`]), one file per family |
//!
//! `mod.rs` files only declare and re-export.
#![warn(missing_docs)]

pub mod backend;
pub mod client;
pub mod error;
mod hold;
pub mod inspect;
pub mod layout;
pub mod limits;
mod machinery;
pub mod path;
pub mod recipes;
mod session;
pub mod telemetry;

/// The traits, for `use coord_core::prelude::*`: their methods then work on
/// every recipe and every `dyn` of them.
pub mod prelude {
    pub use crate::hold::Hold;
    pub use crate::recipes::election::{LeaderElection, LeaderElectionExt};
    pub use crate::recipes::lock::{Lockable, LockableExt};
    pub use crate::recipes::queue::WorkQueue;
}

pub use backend::node::{
    Child, CreateMode, Created, Fence, Node, Op, OpResult, SessionId, SessionState, Stat,
    MAX_NODE_TTL, MIN_NODE_TTL,
};
pub use backend::order::{Blockers, Place};
pub use backend::tls::TlsOptions;
pub use backend::txn::{Transaction, TxnLimits, TxnOp, TxnResult};
pub use backend::watch::{TreeChange, TreeWatch, Watch};
pub use backend::Backoff;
pub use client::{Client, ClientEvent, ClientEvents, ClientOptions, Generation};
pub use error::{Error, PathErrorKind, Result, TxnFailure, TxnStep};
pub use session::Session;

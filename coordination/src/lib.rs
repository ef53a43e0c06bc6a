//! # coordination
//!
//! Distributed coordination for Rust — one lock holder, one leader, one
//! runner of the six-hourly job, a queue no item falls out of, a view of who
//! is alive — on ZooKeeper, etcd, Redis, PostgreSQL, or in memory. This crate is the
//! front door: it re-exports the recipes (written once, in `coord-core`)
//! and opens a [`Session`] on whichever backend a URL names.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use coordination::Lock;
//!
//! let session = coordination::connect("mem://").await?; // or "zk://zk1:2181,zk2:2181/myapp"
//! let lock = Lock::new(&session, "/locks/nightly-report")?;
//! let guard = lock.acquire().await?;
//! println!("holding, fencing token {}", guard.fencing_token());
//! guard.release().await?;
//! session.close().await?;
//! # Ok(()) }
//! ```
//!
//! Every recipe has an example in [`recipes`], and a runnable program in
//! `coordination/examples/`.
//!
//! ## Cargo features
//!
//! | feature | backend | URL | needs to build |
//! |---|---|---|---|
//! | (always) | in-process store | `mem://` | nothing |
//! | `zk` | ZooKeeper (`coord-zk`) | `zk://…` | nothing |
//! | `etcd` | etcd v3.4+ (`coord-etcd`) | `etcd://…` | `protoc` (etcd-client compiles its protobufs) |
//! | `redis` | Redis 7 (`coord-redis`) | `redis://…`, `rediss://…` | nothing |
//! | `pg` | PostgreSQL 15 (`coord-pg`) | `postgres://…`, `postgresql://…` | nothing |
//! | `full` | all of the above | | `protoc` |
//! | `metrics` | (no backend) metrics through the `metrics` facade: see [`telemetry`] | | nothing |
//! | `serde` | (no backend) JSON for a typed shared value: `TypedSharedValue::new`, `Json` | | nothing |
//!
//! No feature is on by default: the default build needs no server and no
//! `protoc`. A URL whose backend is not compiled in fails with
//! [`ConnectError::BackendNotCompiled`], which names the feature to enable.
//! Each enabled backend crate is re-exported (`coordination::zk`, `coordination::etcd`,
//! `coordination::redis`, `coordination::pg`) for its options and its details.
//!
//! ## URLs
//!
//! | URL | what |
//! |---|---|
//! | `mem://` | the process-wide in-memory store, [`default_mem_store`] |
//! | `zk://[user:password@]h1:2181,h2:2181/chroot` | a ZooKeeper ensemble; every path lives under the optional chroot (made if missing); port 2181 when omitted; credentials log in with digest auth |
//! | `etcd://[user:password@]h1:2379,h2:2379/namespace` | an etcd cluster; every key starts with the optional namespace; port 2379 when omitted; credentials when etcd's auth is on |
//! | `redis://[user:password@]host:6379/db` | one Redis server; port 6379 and database 0 when omitted |
//! | `rediss://…` | the same, over TLS |
//! | `postgres://user[:password]@host:5432/database` | one PostgreSQL server (or the address of its current primary); port 5432 when omitted, the database the user's name when omitted, as in libpq; `postgresql://` is the same |
//!
//! Query parameters:
//! - `session_timeout=<duration>` (all): how long the server keeps a
//!   session after its client stops answering — and with it the client's
//!   lock holds, leadership and memberships. Default 10 s everywhere;
//!   durations are written `500ms`, `10s`, `1m` ([`parse_duration`]).
//!   [`Connector::with_session_timeout`] sets it in code (and wins over the URL).
//!   It must be longer than zero and at most a day
//!   ([`limits::MAX_SESSION_TIMEOUT`]), and on Redis and PostgreSQL at
//!   least 300 ms;
//!   anything else is refused with [`ConnectError::InvalidUrl`] (or
//!   [`ConnectError::InvalidOption`]), as is a duration that does not parse.
//! - `tls=true`, `ca=PATH`, `cert=PATH&key=PATH`, `server_name=NAME` (zk,
//!   etcd, redis, postgres): TLS, trusting the public web roots built in or the
//!   certificate authorities of `ca`; `cert` and `key` present a client
//!   certificate (mutual TLS). Any of `ca`, `cert`, `key`, `server_name`
//!   turns TLS on.
//!   `server_name` checks the server's certificate for another name: etcd
//!   and postgres only (ZooKeeper refuses it, Redis refuses one other than
//!   the URL's host). The files are read when the session connects.
//! - `auth=digest|sasl` (zk only): how the URL's credentials log in
//!   (default `digest`; `sasl` is SASL DIGEST-MD5).
//! - `acl=creator|creator_only|open` (zk only): the ACL of every node coord
//!   creates (default `creator` with credentials, `open` without; the
//!   creator ACLs need credentials).
//! - `namespace=<name>` (redis only): keep every key under `{name}:`
//!   (default `coord`), so applications can share a server.
//! - `schema=<name>` (postgres only): the PostgreSQL schema holding
//!   coord's tables and functions (default `coord`; `[a-z_][a-z0-9_]*`, at
//!   most 63 characters), which coord creates and upgrades itself, so
//!   applications can share a database. A role that owns only that schema
//!   is enough (`create schema coord authorization app;`).
//! - `sslmode=disable|require|verify-full` (postgres only), libpq's
//!   parameter: `disable` is plain text; `require` and `verify-full` are
//!   TLS, both checking the server's certificate and name (coord never
//!   talks TLS unverified), against the public web roots or `ca`.
//!   `verify-ca`, `prefer` and `allow` are refused (coord falls back to
//!   plain text never), as is an `sslmode` that contradicts `tls`.
//! - `keyspace_events=enable|require|assume` (redis only): what to do
//!   about the server's `notify-keyspace-events` (see
//!   `coord_redis::KeyspaceEvents`); `CONFIG` is never required.
//!
//! Everything between `://` and the last `@` is the user info (a password
//! may hold reserved characters as they are, or percent-encoded); a path or
//! query cannot hold a raw `@`. A URL is checked completely before any I/O:
//! a malformed one fails with [`ConnectError::InvalidUrl`] saying what is
//! wrong, with any password shown as `***`; an unknown query parameter is
//! refused, never ignored.
//!
//! Not supported, and refused with what to write instead
//! ([`ConnectError::UnsupportedScheme`], [`ConnectError::InvalidUrl`]):
//! Unix sockets, Redis Cluster (more than one Redis host), more than one
//! PostgreSQL host (name the address of the current primary), libpq's other
//! query parameters, and the schemes
//! `http://`, `https://`, `zks://`, `etcds://` (write `etcd://…?tls=true` or
//! `zk://…?tls=true`).
//!
//! ## `mem://`: one store per process
//!
//! Every `mem://` session of a process lives in one store,
//! [`default_mem_store`], created on first use: sessions opened anywhere in
//! the program see each other's nodes, as processes sharing a ZooKeeper
//! would. Nothing outside the process sees it — two processes given
//! `mem://` coordinate nothing. It is for tests, examples and
//! single-process programs; its fault hooks ([`mem::MemStore::expire`],
//! …) let a test kill a session. Sessions default to a 10 s timeout that
//! only matters for a handle whose keep-alive stopped.
//!
//! ## What every recipe promises
//!
//! Every lock-like guard is `#[must_use]`; `release().await` reports
//! errors; dropping it releases in the background, best effort (the
//! session's end is the backstop). `fencing_token()` strictly increases
//! across successive holders; `lost()` resolves when the hold is gone.
//! Every acquire is cancel safe: dropping its future leaves no node behind.
#![warn(missing_docs)]

mod backend;
mod connect;
mod duration;
mod error;
pub mod recipes;
mod url;

pub use backend::{compiled_backends, Backend};
pub use connect::{client, connect, default_mem_store, Connector};
pub use duration::{
    parse_duration, parse_period, parse_session_timeout, parse_timeout, ParseDurationError,
};
pub use error::ConnectError;

#[cfg(feature = "serde")]
pub use coord_core::recipes::Json;
pub use coord_core::recipes::{
    period_index, revocation, while_held, AddOutcome, Barrier, Contender, ContenderState, Counter,
    CounterWatcher, Delivery, DoubleBarrier, Election, ElectionEvent, ElectionLayout,
    ElectionState, Group, GroupChange, GroupWatcher, HoldContext, Inside, Leader, LeaderObserver,
    Leadership, Lease, Lock, LockGuard, Member, Membership, MultiLock, MultiLockGuard, OnCrash,
    Participant, PeriodicJob, Queue, ReadLock, ReentrantLock, ReliableQueue, RunContext,
    RunOutcome, RwLock, Semaphore, SemaphoreMutex, SimpleLock, WriteLock,
};
pub use coord_core::recipes::{
    BigEndianI32, Codec, CodecError, RawBytes, SharedCount, SharedCountWatcher, SharedValue,
    SharedValueWatcher, TypedSharedValue, Update, Versioned,
};
pub use coord_core::recipes::{CacheEvent, ChildrenCache, NodeCache, TreeCache};
pub use coord_core::recipes::{
    DelayQueue, PriorityQueue, ReliableDelayQueue, ReliablePriorityQueue,
};
pub use coord_core::recipes::{
    DownInstancePolicy, ProviderStrategy, ServiceCache, ServiceCacheEvent, ServiceDiscovery,
    ServiceInstance, ServiceProvider, ServiceRegistration, ServiceType,
};
pub use coord_core::recipes::{
    GroupMember, PersistentMode, PersistentNode, Presence, PresenceWatcher,
};
pub use coord_core::recipes::{
    LatchEvent, LatchWatcher, LeaderLatch, PartitionState, PartitionWatcher, Partitioner,
    RejoiningLatch, RejoiningLatchWatcher, RejoiningPartitioner, SetPartitioner,
};
pub use coord_core::{
    limits, path, Backoff, Child, Client, ClientEvent, ClientEvents, ClientOptions, CreateMode,
    Created, Error, Fence, Generation, Node, Op, OpResult, Result, Session, SessionId,
    SessionState, Stat, TlsOptions, Transaction, TxnFailure, TxnLimits, TxnOp, TxnResult, TxnStep,
    MAX_NODE_TTL, MIN_NODE_TTL,
};

/// `use coordination::prelude::*`: the traits every recipe implements
/// ([`Lockable`](prelude::Lockable), [`Hold`](prelude::Hold),
/// [`LeaderElection`](prelude::LeaderElection),
/// [`WorkQueue`](prelude::WorkQueue)) and their scoped helpers
/// ([`LockableExt::run`](prelude::LockableExt::run),
/// [`LeaderElectionExt::lead`](prelude::LeaderElectionExt::lead)): the one
/// path to each trait, so their methods work on every recipe and on `dyn`
/// ones.
pub mod prelude {
    pub use coord_core::prelude::*;
}

/// What lives at a path: [`inspect::inspect`] (holders, waiters, leader,
/// members, queue length and head, a job's last run).
pub use coord_core::inspect;
/// Tracing target, span and event names, and (feature `metrics`) the
/// metrics coord records; [`telemetry::set_path_prefix_depth`] bounds the
/// metrics' path label.
pub use coord_core::telemetry;
/// The in-process backend (always compiled in).
pub use coord_mem as mem;

/// The ZooKeeper backend (feature `zk`).
#[cfg(feature = "zk")]
pub use coord_zk as zk;

/// The etcd backend (feature `etcd`).
#[cfg(feature = "etcd")]
pub use coord_etcd as etcd;

/// The Redis backend (feature `redis`).
#[cfg(feature = "redis")]
pub use coord_redis as redis;

/// The PostgreSQL backend (feature `pg`).
#[cfg(feature = "pg")]
pub use coord_pg as pg;

// Every ```rust block of the README compiles (and, unless `no_run`, runs)
// as a doc test of this crate, so the README cannot drift from the API.
// Not gated on a feature: the README's code uses only what the facade has
// without features (its server URLs sit in `no_run` blocks), so any
// `cargo test -p coordination --doc` checks it. `cfg(doctest)` keeps it out
// of normal and `cargo package` builds. The one `rust,ignore` block, the
// first screen's `#[tokio::test]`, is run by tests/readme.rs instead
// (rustdoc compiles without `--test`, which leaves a `#[test]` fn unread).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

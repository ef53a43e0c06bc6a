//! # coord-zk
//!
//! The ZooKeeper backend of coord: [`connect`] opens a ZooKeeper session as a
//! [`coord_core::Session`], on which every coord recipe runs.
//!
//! ## Pointing coord at an ensemble
//!
//! Give the ensemble's connect string, as the Java client takes it: the hosts,
//! comma-separated, optionally followed by a chroot under which every path of
//! the session lives (made at connect time if it is missing):
//!
//! ```no_run
//! # async fn demo() -> coord_core::Result<()> {
//! use std::time::Duration;
//! use coord_zk::ZkOptions;
//!
//! let options = ZkOptions::new("zk1:2181,zk2:2181,zk3:2181/myapp")
//!     .with_session_timeout(Duration::from_secs(10));
//! let session = coord_zk::connect(options).await?;
//! // `/locks/job` is `/myapp/locks/job` on the server.
//! session.ensure_dir("/locks/job").await?;
//! session.close().await?;
//! # Ok(()) }
//! ```
//!
//! The session runs on the tokio runtime [`connect`] is called on (the
//! client keeps a task there that holds the connection): that runtime must
//! outlive the session.
//!
//! The session timeout is how long the ensemble keeps the session (and its
//! ephemeral nodes: lock holds, leases, leadership) after the client stops
//! answering; the server clamps it to its `minSessionTimeout` ..
//! `maxSessionTimeout` (by default 2 to 20 ticks of `tickTime`).
//!
//! ## Authentication and ACLs
//!
//! [`ZkOptions::with_digest`] (ZooKeeper's `digest` scheme) and
//! [`ZkOptions::with_sasl_digest`] (SASL DIGEST-MD5, checked by the server's JAAS
//! users) give the session an identity, sent again on every reconnection.
//! With one, every node coord creates gets [`ZkAcl::CreatorAllWorldRead`]
//! unless [`ZkOptions::with_acl`] says otherwise, so a process under another
//! identity cannot delete a lock node it does not own
//! ([`coord_core::Error::PermissionDenied`]); all processes sharing a
//! recipe must then use the same identity (see [`ZkAcl`]). Without one,
//! nodes are open to all ([`ZkAcl::Open`]). A SASL login the server refuses
//! is [`coord_core::Error::Unauthenticated`]; a digest password cannot be
//! refused (ZooKeeper takes any), it is simply another identity.
//!
//! ```no_run
//! # async fn demo() -> coord_core::Result<()> {
//! use coord_zk::{ZkAcl, ZkOptions};
//!
//! let options = ZkOptions::new("zk1:2181/myapp")
//!     .with_digest("billing", "secret")
//!     .with_acl(ZkAcl::CreatorAll);
//! let session = coord_zk::connect(options).await?;
//! # drop(session); Ok(()) }
//! ```
//!
//! ## TLS
//!
//! [`ZkOptions::with_tls`] reaches every host through TLS (the server's secure
//! client port), optionally with a client certificate (mutual TLS):
//!
//! ```no_run
//! # async fn demo() -> coord_core::Result<()> {
//! let tls = coord_core::TlsOptions::new()
//!     .with_ca("/etc/zk/ca.pem")
//!     .with_identity("/etc/zk/client.pem", "/etc/zk/client-key.pem");
//! let options = coord_zk::ZkOptions::new("zk1:2281,zk2:2281").with_tls(tls);
//! let session = coord_zk::connect(options).await?;
//! # Ok(()) }
//! ```
//!
//! The certificate is checked against each host as given: `server_name`
//! cannot be set on ZooKeeper (see [`ZkOptions::with_tls`]).
//!
//! ## How the contract maps onto ZooKeeper
//!
//! | contract | ZooKeeper |
//! |---|---|
//! | session state | client state: SyncConnected → `Connected` (after a reconnection, once a request sent after it is answered), Disconnected → `Suspended`, Expired → `Expired`, closed by us → `Closed` |
//! | ephemeral / sequential | the EPHEMERAL / SEQUENTIAL create modes |
//! | missing parents | made as CONTAINER nodes: the server deletes them once emptied |
//! | sequence | the 10-digit suffix; any child whose name ends in ten digits has one, so Curator's and kazoo's nodes count |
//! | stamp | `czxid` (from `create2`'s stat) |
//! | version | `stat.version` |
//! | wait gone | `getData` with a watch (no watch is left on a missing node, unlike `exists`) |
//! | get and watch (data watch) | `getData` with a watch: fires at the node's next set or its deletion |
//! | children watch | `getChildren` with a watch |
//! | place, first children (`Session::place`, `Session::first_children`) | the defaults: a full `getChildren`, then `order::place_in` / `order::first_in` (ZooKeeper has no query for a child's neighbour or the first n children; `orders_at_server` is `false`) |
//! | many nodes read at once (`Session::get_many`) | the default: every `getData` sent at once, pipelined on the session's connection (not a 3.6+ multi-read: its one answer must fit the client's packet limit, which a few nodes near the 1 MiB data limit would pass) |
//! | tree watch | `addWatch` in PERSISTENT_RECURSIVE mode (3.6+; `NotSupported` before); added again after every reconnection, then `Resync`. One connection keeps one watch per path before 3.9 (ZOOKEEPER-4466): a data watch on a tree watch's own path is served by the tree watch, and a tree watch on a path with a data watch set is `NotSupported` (the caches then use one-shot watches) |
//! | creation time | `ctime` (the server's clock, in ms) |
//! | guarded write | read the fence's czxid, then `multi(check(fence, version), op)` (see below) |
//! | transaction | read every fence's czxid, then one `multi`: the fences' version checks, the check ops, the writes (see below) |
//! | children of an ephemeral | refused by ZooKeeper: `Error::NotSupported` |
//! | lease renewal | an `exists` on the session's root every third of the session timeout, counted from its send time (not in `requests_sent`) |
//! | abandon | the session is closed once the client reaches the ensemble again; state `Expired` |
//!
//! **Guarded writes.** ZooKeeper's multi can check a node's data version, not
//! its czxid. The fence is therefore read first: missing or with another
//! czxid is `LockLost`; then the write is a `multi(check(fence, version
//! read), op)`, which fails if the fence was deleted or changed in between.
//! A fence deleted and made again at the same path with the same version in
//! that window would pass; lock nodes are sequential, so their paths never
//! repeat and a lock holder's fence has no such window.
//!
//! **Transactions** (`Session::commit`) are guarded writes grown up: the
//! fences are read as above, then one `multi` checks each fence's version,
//! then every check op, then makes every write in op order; ZooKeeper
//! names the first op that failed, which coord maps back to the user's
//! step. A create whose parent is missing gets its parents made (as
//! containers) and the multi is sent again; a lost answer is
//! `OutcomeUnknown`. Limits: 1,000 steps and 960,000 bytes of paths and data
//! (the server's `jute.maxbuffer`, 1 MiB by default, bounds the whole
//! request; a server with a larger one still gets these limits).
//!
//! **Connection loss.** While the connection is down the session is
//! `Suspended`: a write then fails at once with
//! [`coord_core::Error::ConnectionLost`]; a read is retried, with backoff,
//! for up to twice the session timeout while the session lives (the client
//! sends it on the next connection). A sequential create whose
//! name starts with a protected prefix `_c_<uuid>-` (as coord's recipes and
//! Curator's protected mode name their nodes) is looked for by that prefix
//! after a lost answer, before any retry (as `findPrefixInChildren` of the
//! ZooKeeper recipes' `WriteLock` does), so it is never made twice; a
//! *persistent* one that is not found (never made, or made and already
//! taken by another session) is not made again either, but returned as
//! [`coord_core::Error::OutcomeUnknown`]. A
//! sequential create without one cannot be told apart from a stranger's
//! node, so a lost answer there is returned as
//! [`coord_core::Error::ConnectionLost`] (made or not), as are other writes
//! whose answer was lost; a non-sequential ephemeral create is retried and
//! recognised by its owner.
//! An expired session is final: every operation then fails with
//! [`coord_core::Error::SessionExpired`].
//!
//! **Round trips.** Every request is sent when its future is first polled,
//! and ZooKeeper answers one session's requests in order (FIFO client
//! order). So a `children` polled right after a `create` (before awaiting
//! the create, e.g. in `tokio::join!`) is sent behind it and sees it: an
//! uncontended lock acquire and release cost create + getChildren + delete,
//! with the first two in one round trip.
#![warn(missing_docs)]

mod auth;
mod connect;
mod create;
mod error;
mod guarded;
mod handle;
mod keepalive;
mod names;
mod options;
mod paths;
mod session;
mod shared;
mod stat;
mod states;
mod tls;
mod txn;
mod watch;

#[doc(hidden)]
pub mod testing;

pub use auth::ZkAcl;
pub use connect::connect;
pub use error::BACKEND;
pub use options::{ZkOptions, DEFAULT_SESSION_TIMEOUT};
pub use session::{SessionCredentials, ZkSession};

// The crate's README, whose Rust blocks are compiled as doc tests so they
// cannot drift: `cargo test -p coord-zk --doc` checks them (the server ones
// `no_run`). `cfg(doctest)` keeps it out of normal and `cargo package`
// builds.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

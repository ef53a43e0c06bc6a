//! # coord-etcd
//!
//! The etcd backend of coord: [`connect`](fn@connect) opens a [`coord_core::Session`] on
//! an etcd v3 cluster (3.4 or later), on which every coord recipe runs.
//!
//! ## Pointing coord at an etcd cluster
//!
//! ```no_run
//! # async fn demo() -> coord_core::Result<()> {
//! use std::time::Duration;
//! use coord_etcd::EtcdOptions;
//!
//! let options = EtcdOptions::new([
//!     "http://etcd-0.etcd:2379",
//!     "http://etcd-1.etcd:2379",
//!     "http://etcd-2.etcd:2379",
//! ])
//! // Optional: keep this application's keys under /myapp (path /locks/x
//! // is then the key /myapp/locks/x).
//! .with_namespace("/myapp")
//! // Optional: how long ephemeral nodes outlive a crashed client (10 s).
//! .with_session_timeout(Duration::from_secs(10));
//! let session = coord_etcd::connect(options).await?;
//! # Ok(()) }
//! ```
//!
//! Give every member's client URL (as in `ETCDCTL_ENDPOINTS`;
//! [`EtcdOptions::from_endpoint_list`] takes that comma-separated form), or
//! a URL `etcd://h1:2379,h2:2379/namespace` ([`EtcdOptions::from_url`]). The
//! client balances over them; a request routed to a member it cannot
//! connect to is sent to another. Use [`EtcdOptions::with_user`] when the
//! cluster has auth enabled, and [`EtcdOptions::with_tls`] (or `https://`
//! endpoints) when it serves TLS: a CA file, a client certificate and key
//! for mutual TLS, a server name (rustls with the ring provider; without a
//! CA, the public web roots built in). A TLS refusal is a typed error:
//! [`coord_core::Error::Unauthenticated`] naming the setting to fix (`ca`,
//! `server_name`, `cert`/`key`); a plaintext client on a TLS port gets
//! [`coord_core::Error::ConnectionLost`] saying the server requires TLS.
//!
//! ## Cargo features
//!
//! | feature | adds |
//! |---|---|
//! | `tls` (on by default) | TLS to the cluster: rustls with the ring provider, no system library, the public web roots built in (webpki-roots), and coord-core's `tls-probe` to tell why a handshake failed |
//!
//! Built without it (`default-features = false`), a session asking for TLS
//! is refused before any I/O with [`coord_core::Error::InvalidArgument`].
//! Building this crate needs `protoc`: etcd-client compiles etcd's
//! protobufs.
//!
//! ## How the primitive maps to etcd
//!
//! | coord | etcd |
//! |---|---|
//! | session | a lease whose TTL is the session timeout, kept alive every TTL/3 by a background task |
//! | node at `/a/b` | key `<namespace>/a/b` |
//! | children of `/a` | keys directly under `<namespace>/a/`, by create revision; read in pages of 32,768 keys at one revision, so any size lists, as one snapshot |
//! | place, first children | one range sorted by create revision with a small limit: the earlier keys below the contender's create revision, nearest first, behind a compare of its own key's (`place`); the first keys (`first_children`). A few keys come back whatever the crowd; the server still reads the whole range to sort it (see `neighbours.rs`). A contender's create reads its own place in its Txn, right after the put (`create_contender`: the same range, newest first, limit 9) |
//! | many nodes read at once (`get_many`) | a read-only Txn of gets per 128 keys (`--max-txn-ops`), sent together, then per batch one Txn reading the TTL markers of the other sessions' leases found (see `reads.rs`) |
//! | parents | plain keys (empty value) made by the create that needs them |
//! | ephemeral | a key on the session's lease |
//! | sequence, stamp | the key's create revision |
//! | version (CAS) | the key's mod revision |
//! | wait gone, get and watch, children watch | a watch from the current revision (synced on the server); when that is past the read's revision, one read covers the gap (a keys-only Get; for children a read-only Txn of counts) |
//! | tree watch | one watch over the subtree's key range from the current revision + 1, resumed after the last revision seen; `Resync` after a compaction past it |
//! | set by another session | a put with `ignore_lease`: the key keeps its lease (stays ephemeral of its creator) and its create revision (its stamp) |
//! | creation time | none: etcd keeps no time per key ([`coord_core::Stat::created_at`] is `None`) |
//! | guarded write | one Txn comparing the fence key's create revision |
//! | transaction ([`coord_core::Session::commit`]) | one Txn: every fence's, check's and write's compares, every write's op; reads in its failure branch name the step that failed |
//!
//! ## Transactions
//!
//! A transaction is one etcd Txn, so its checks and fences are compared
//! against the store before any of its writes, and all of it is applied or
//! none. The Txn compares each create's parent (there, not ephemeral);
//! when one is missing, the parents are made (as a create of each would
//! make it, with its missing ancestors) and the Txn is sent again, one
//! more round trip each; a parent made for a transaction that then fails
//! stays. Every key a Txn writes gets its revision: the creates of one
//! transaction share one create revision, so its sequential creates have
//! the same sequence (and stamp). A TTL create gets its lease before the Txn,
//! revoked again if the transaction is refused. An answer lost with the
//! connection is `OutcomeUnknown` (all or nothing was applied), except for
//! a transaction of checks alone, which is sent again.
//!
//! **Limits** ([`coord_core::TxnLimits`]): 42 steps (fences plus ops) and
//! 1,000,000 bytes of paths and data. etcd refuses a Txn of more than
//! `--max-txn-ops` ops in its compares or either branch (128 by default),
//! and a step costs up to three (a create compares its key and its
//! parent twice; a delete reads its key and counts its children when it
//! fails): 128 / 3 = 42. A request is at most `--max-request-bytes` (1.5
//! MiB by default); a transaction whose Txn would be larger (each key
//! appears in a compare, an op and a read) is refused with
//! `InvalidArgument` before any I/O.
//!
//! Every write is one Txn, and a failed one reads back in the same round
//! trip which condition failed, so errors are the same as on every other
//! backend: `NotFound`, `AlreadyExists`, `VersionMismatch`, `NotEmpty`
//! (a key anywhere under the node), `NotSupported` for a node under an
//! ephemeral one (as ZooKeeper refuses).
//!
//! Sequential nodes get the suffix `<lease id, 16 hex digits><counter, 10
//! digits>`, unique among siblings before etcd assigns the revision; their
//! order is their create revision ([`coord_core::Child::sequence`]), never
//! the name. A create whose answer is lost is sent again with the same name
//! and recognised, so it is never made twice.
//!
//! An ephemeral-sequential create reuses the name of a node this session
//! deleted at the same path prefix (its delete answered), as etcd's own
//! recipes reuse `<prefix>/<lease>`: etcd keeps deleted keys in its index
//! until a compaction and every listing walks them, so a lock that made a
//! new key per acquisition got slower with each one. A reused name never
//! belongs to two live nodes; each incarnation has a new create revision
//! (sequence and fencing stamp), and this session's deletes of it compare
//! that revision, so a late delete of an old one cannot remove the new one.
//! coord's `Lock` names each node with a protection id that it lends again
//! once the node is deleted, so its cycles reuse one key.
//!
//! The session is `Suspended` while keep-alives fail, `Connected` again when
//! one succeeds, and `Expired` when the server says the lease is gone (TTL 0,
//! revoked) or when no keep-alive was answered before the lease deadline
//! (90 % of the TTL after the send time of the last answered one; see
//! [`coord_core::backend::lease`]): then the client gives the session up before the
//! server can, and revokes the lease as soon as it reaches a member, so its
//! nodes stop blocking others. Closing revokes the lease: its ephemeral
//! nodes go at once.
//!
//! ## Working with Go's `concurrency` package
//!
//! The layout is the one `etcdctl lock` and `etcdctl elect` (Go's
//! `concurrency.Mutex` and `Election`) use: every key under `<P>/` is a
//! contender, ordered by create revision, and an election's value is the
//! key's value. So a coord lock at path `P` and `etcdctl lock <key of P>`
//! exclude each other, and `etcdctl elect -l` sees coord's leader. With a
//! namespace, give etcdctl the key ([`EtcdOptions::key_of`]), not the path.
#![warn(missing_docs)]

mod commit;
mod connect;
mod error;
mod etcd_session;
mod keepalive;
mod keys;
mod listing;
mod neighbours;
mod options;
#[cfg(feature = "tls")]
mod probe;
mod reads;
mod session;
mod shared;
mod slots;
mod transaction;
mod tree_watch;
mod ttl;
mod txn;
mod watch;
mod writes;

#[doc(hidden)]
pub mod testing;

pub use connect::connect;
pub use keepalive::lease_id;
pub use options::{
    EtcdOptions, DEFAULT_REQUEST_TIMEOUT, DEFAULT_SESSION_TIMEOUT, MAX_REQUEST_TIMEOUT,
};

// The crate's README, whose Rust blocks are compiled as doc tests so they
// cannot drift: `cargo test -p coord-etcd --doc` checks them (the server ones
// `no_run`). `cfg(doctest)` keeps it out of normal and `cargo package`
// builds.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

//! # coord-redis
//!
//! The Redis backend of coord: every recipe of `coord_core::recipes` (locks,
//! elections, queues, …) on a Redis 7 server, through
//! [`coord_core::backend::PrimitiveSession`].
//!
//! ```no_run
//! # async fn demo() -> coord_core::Result<()> {
//! use std::time::Duration;
//! let options = coord_redis::RedisOptions::new("redis://app:secret@127.0.0.1:6379/0")
//!     .with_namespace("billing")
//!     .with_session_timeout(Duration::from_secs(10));
//! let session = coord_redis::connect(options).await?;
//! // … build recipes on `session` …
//! session.close().await?;
//! # Ok(())
//! # }
//! ```
//!
//! ## How the contract maps onto Redis
//!
//! - **Session**: a key `{ns}:s:<id>` whose `PX` TTL is the session timeout
//!   (default 10 s), kept alive by a heartbeat every third of the TTL. It is over once the key is
//!   gone: the heartbeat's `PEXPIRE` answers 0, a keyspace notice says the
//!   key expired, or a script run by the session finds it missing. `close`
//!   deletes it. Each session has its own command connection (multiplexed,
//!   reconnecting) and its own pub/sub connection.
//! - **Lease**: the client keeps its own deadline (see
//!   [`coord_core::backend::lease`]): each `PEXPIRE` the server answers with 1 (and
//!   the request that created the key) moves it to that request's *send*
//!   time plus 90 % of the TTL, a moment before the key can expire on the
//!   server. When it passes without a newer answer (a partition, a dead
//!   server), the session is lost on the client first — `Expired`, every
//!   `lost()` resolves — its heartbeat stops for good, and it is ended on
//!   the server (its key deleted, its ephemeral nodes reaped) as soon as
//!   the server answers, retried for a TTL plus a request timeout (by then
//!   the key has expired anyway). No request waits longer than the request
//!   timeout ([`RedisOptions::with_request_timeout`]), reconnecting included.
//! - **Tree**: a hash per node (`{ns}:n:<path>`: data, version, stamp, owner,
//!   sequence, creation time from the server's `TIME`) and a sorted set of children per node (`{ns}:c:<path>`, scored
//!   by sequence; children without one score `inf` and so sort by name). All
//!   of a store's keys start with `{ns}:` (a hash tag). The root `/` always
//!   exists. A contender's place (`Session::place`) and a directory's
//!   first children (`Session::first_children`) are one script each that
//!   walks that sorted set from the contender's score (or from the start):
//!   O(log N), never a listing of every waiter. Many nodes read at once
//!   (`Session::get_many`) are one script per 256 paths.
//! - **Atomicity**: every operation is one Lua script (EVALSHA, after a
//!   SCRIPT LOAD where the server lacks it), so each create, set, delete and guarded write is atomic, and
//!   each publishes its change notice in the same step: `{ns}:w:<path>` when
//!   a node is deleted, `{ns}:u:<path>` when it is set or deleted,
//!   `{ns}:cw:<dir>` when a directory's children change.
//! - **Sequence**: an `INCR` per directory; the name gets it as a ten-digit,
//!   zero-padded suffix. **Stamp** (the fencing token): one store-wide
//!   counter, `max(last + 1, server TIME in µs)` (see [Stamps](#stamps)).
//!   Versions come from the same counter, so a version is never reused,
//!   even by a node deleted and made again. A node's sequence and stamp are
//!   taken in the same script, so among siblings the order by sequence is
//!   the order by stamp.
//! - **Ephemeral nodes** belong to their session, which lists them in
//!   `{ns}:e:<id>`. They are reaped (deleted, with their notices) when the
//!   session key expires — every client listens for that through keyspace
//!   notifications, which [`connect`] enables (see [`KeyspaceEvents`]) — and
//!   lazily by every read: a script that meets an ephemeral node whose
//!   session key is gone reaps that session before it answers. A crashed
//!   client's nodes therefore never block a lock for longer than its TTL.
//!   A node cannot have children under an ephemeral node here
//!   ([`coord_core::Error::NotSupported`]), as on ZooKeeper.
//! - **Watches**: `wait_gone`, `get_watch` and `children_watch` subscribe
//!   (and wait for the server's confirmation) before they read, so a change
//!   between the read and the watch is never missed. A dropped waiter
//!   unsubscribes. There is no tree watch (`watch_tree` is
//!   `NotSupported`): the caches use one-shot watches here.
//! - **Writes by others**: a `set` changes only a node's data and version;
//!   an ephemeral node set by another session stays its creator's, with
//!   its stamp, so the holder's fence still holds.
//! - **Lost answers**: a sequential create whose name is protected
//!   (`_c_<uuid>-…`, as recipes name theirs) that loses its answer to a
//!   dropped connection is retried by a script that first looks for a child
//!   with that prefix made by this session, so it is never made twice.
//!
//! - **Transactions** ([`coord_core::Session::commit`]): one script,
//!   which checks every fence, then every op, before it writes anything
//!   (so checks see the state before the transaction, and a refused one
//!   leaves nothing: Redis does not roll a script back), then writes with
//!   the single writes' own code. A create's missing parents are made in
//!   the same step. Limits, refused with `InvalidArgument` before any I/O:
//!   1,000 steps (as on ZooKeeper) and 1,000,000 bytes of paths and data;
//!   Redis has none a transaction meets first, and these bound how long
//!   one script holds a server that runs nothing else meanwhile. The
//!   script keeps a writing transaction's answer for twice the session
//!   timeout (`{ns}:t:<session>:<n>`, expiring on its own): after an
//!   answer lost with the connection, the session reads it back (the
//!   transaction was applied: its results) or finds none and marks it so,
//!   which refuses the transaction should it still arrive (not applied:
//!   `ConnectionLost`). Only when the server stays unreachable for a
//!   session timeout is it `OutcomeUnknown`.
//!
//! Redis Cluster is not supported: the scripts compute their keys.
//!
//! ## What Redis does not guarantee, and why the fencing token still holds
//!
//! ZooKeeper and etcd replicate every write to a quorum and fsync it before
//! they answer. Redis does neither by default:
//! - **One server** holds the truth. If it dies, coordination stops until it
//!   is back; if it comes back without its data, every lock is free.
//! - **No fsync by default**: with RDB snapshots or `appendfsync everysec`, a
//!   crash loses the last writes the server had already acknowledged.
//! - **A failover can lose acknowledged writes**: replication is
//!   asynchronous, so a replica promoted by Sentinel (or an operator) may
//!   not have the node a client was just told it created. Two clients can
//!   then both believe they hold the same lock. `WAIT` narrows that window
//!   but does not close it.
//! - **Redlock** (locking on several independent masters) does not fix this
//!   either: as Martin Kleppmann argued, it relies on bounded clock drift,
//!   network delay and process pauses; a GC pause or a stalled process can
//!   outlive its lease while it still believes it holds the lock. coord
//!   does not implement Redlock.
//!
//! So a lock on Redis is best-effort *mutual exclusion*: fine for efficiency
//! (not doing the same work twice), not by itself for correctness. What
//! protects a resource is the **fencing token**: every hold carries its
//! node's stamp, which comes from one counter that only grows. A holder
//! writes under it — with [`coord_core::Session::guarded`], which refuses the
//! write atomically unless the holder's node still exists with exactly that
//! stamp, or at an external store that remembers the largest token it has
//! seen and refuses older ones. A paused holder that lost its lock then
//! cannot overwrite the work of the next one: its token is older — also
//! after a restart or failover that lost the counter (next section).
//!
//! ## Stamps
//!
//! A stamp (and a version) is `max(last + 1, now)`, where `last` is the
//! store-wide counter (`{ns}:stamp`) and `now` the server's `TIME` in
//! microseconds since the epoch, read by the same script (Redis 7
//! replicates and logs a script's effects, not the script, so the AOF and
//! replicas store the value it computed). So stamps strictly increase while
//! the counter lives, and when a restart without the data (or a snapshot
//! older than the last writes, or a failover to a replica that lagged)
//! loses the counter, the clock carries on above every stamp handed out
//! before: a stale holder's token never passes a resource's check, and a
//! node made again at the same path never gets a stale fence's stamp.
//!
//! - Stamps are microsecond timestamps (sixteen digits today), not small
//!   consecutive numbers: compare them, do not count with them. They stay
//!   below 2⁵³ (exact in Lua's numbers, in JSON and in JavaScript) until
//!   the year 2255. A store made by an older coord-redis (a plain `INCR`)
//!   jumps once to the clock at its first new stamp; still increasing.
//! - **The limit**: after the counter is lost, the stamps carry on above
//!   the old ones only if the server's clock has not been stepped back by
//!   more than the time between the last stamp before the loss and the
//!   first after (the restart or failover gap). A clock stepped back while
//!   the counter lives does no harm (`last + 1` wins). After a failover the
//!   new primary's clock counts: keep the servers' clocks synchronised.
//!
//! ## Restarts
//!
//! - **Without the data** (no persistence, `kill -9`): every session of
//!   that server is over, its key gone. Each client renews at once when
//!   its pub/sub link comes back (otherwise at its next heartbeat, a third
//!   of the session timeout), the `PEXPIRE` answers that the key is gone,
//!   and the session is `Expired` then — every hold's `lost()` resolves —
//!   without waiting for a write or for the lease to run out. Until that
//!   renewal (tens of milliseconds after the server answers again) a new
//!   client may take a lock the old holder still believes it holds: its
//!   guarded writes are refused (its node is gone) and its token is
//!   smaller than the new holder's.
//! - **On the same data** (`appendonly yes`, `appendfsync always`: Redis
//!   answers a write only once it is on disk, renewals included): the
//!   session keys come back with their absolute expiry times. A session
//!   whose key is still alive survives — its renewals succeed, its holds
//!   stay valid and block everyone else. One whose lease ran out while the
//!   server was down was `Expired` on its client first (the lease ends a
//!   margin before the key can expire) and is ended on the server as soon
//!   as it answers. Never two holders.
//! - **On older data** (an RDB snapshot, `appendfsync everysec`): what
//!   was written after the snapshot is gone. A session opened after it is
//!   `Expired` as above; one whose key came back renews as usual, but a
//!   hold whose node was made after the snapshot is lost (`lost()` resolves
//!   with `LockLost`, guarded writes are refused). Stamps still carry on
//!   from the clock.
//!
//! A restarted server also forgets a `CONFIG SET` of
//! `notify-keyspace-events`: each session checks (and per
//! [`KeyspaceEvents`] sets) it again when its pub/sub link comes back.
//!
//! ## Server settings
//!
//! Keyspace notifications for expired keys: `notify-keyspace-events` must
//! include `K` and `x` (or `A`). [`connect`] adds them with `CONFIG SET`
//! unless told otherwise ([`KeyspaceEvents`]), and fails with a
//! [`KeyspaceEventsError`] saying what to set where it may not.
//!
//! ## TLS and ACL users
//!
//! `rediss://…` or [`RedisOptions::with_tls`] (a `coord_core::TlsOptions`: CA,
//! client certificate and key for mutual TLS) puts every connection of a
//! session on TLS: rustls with the ring provider, and without a CA the
//! public web roots (Mozilla's list, built in; the system store is never
//! read). A `server_name` other than the URL's host is refused: the
//! `redis` crate checks the certificate against the host connected to.
//! Handshake refusals are typed: an untrusted or misnamed server
//! certificate, and a missing or refused client certificate, are
//! [`coord_core::Error::Unauthenticated`] with a hint naming what to set.
//!
//! An ACL user needs no admin command. The simple grant:
//! `user coord on >PASSWORD ~* &* +@all -@admin -@dangerous`. The
//! narrowest one coord works with (tested), for namespace `NS` on
//! database `DB`: its keys and channels, the keyspace channels of its keys
//! (the second pattern literally, as `PSUBSCRIBE` needs), and the commands
//! it sends, those its Lua scripts call included:
//!
//! ```text
//! user coord on >PASSWORD resetkeys ~{NS}:* resetchannels &{NS}:*
//!   &__keyspace@DB__:{NS}:* &__keyspace@DB__:{NS}:s:* -@all
//!   +evalsha +script|load +set +exists +pexpire +ping
//!   +subscribe +psubscribe +unsubscribe +punsubscribe
//!   +del +get +hget +hmget +hset +incr +publish +sadd +smembers +srem
//!   +time +zadd +zcard +zrange +zrem
//! ```
//!
//! With `CONFIG` refused, keyspace notifications must be on in the
//! server's config (`notify-keyspace-events Kx`); [`connect`] then checks
//! them by watching a scratch key expire.
#![warn(missing_docs)]

mod connect;
mod error;
mod keepalive;
mod keyspace;
mod notices;
mod options;
mod reply;
mod scripts;
mod session;
mod shared;
#[doc(hidden)]
pub mod testing;
mod transaction;
mod watch;

pub use connect::connect;
pub use error::KeyspaceEventsError;
pub use options::{
    KeyspaceEvents, RedisOptions, DEFAULT_NAMESPACE, DEFAULT_SESSION_TIMEOUT, MAX_SESSION_TIMEOUT,
    MIN_SESSION_TIMEOUT,
};

//! What coord tells operators: tracing spans and events, and — with the
//! cargo feature `metrics` — metrics through the [`metrics`](https://docs.rs/metrics) facade. Every
//! span, event and metric is made here; recipes and the session call one
//! function each.
//!
//! # Tracing
//! Every span and event has the target [`TARGET`] (`"coord"`), so
//! `RUST_LOG=coord=info` shows them. coord installs no subscriber.
//!
//! Spans, one per operation, all at INFO, with the fields `recipe`,
//! `backend`, `session` (the session's id as the backend shows it: a
//! ZooKeeper session id, an etcd lease id, a Redis session key's id — never
//! a URL, user or password) and `path` (the recipe's path as given):
//!
//! | span | around |
//! |---|---|
//! | `coord.lock.acquire` | every acquire (`acquire`, `try_acquire`, `acquire_timeout`) of `Lock`, `SimpleLock`, `Semaphore`/`SemaphoreMutex`, `ReadLock`/`WriteLock` (`RwLock::read`/`write`), `ReentrantLock` (its span holds the inner lock's) |
//! | `coord.election.campaign` | `Election::campaign`(`_timeout`) and a `Participant`'s campaign |
//! | `coord.queue.take` | `take`, `take_timeout`, `poll` of `Queue`, `PriorityQueue`, `DelayQueue` (recipe `queue`) and their reliable forms (recipe `reliable_queue`) |
//! | `coord.group.join` | `Group::join`, `Group::join_as` |
//! | `coord.periodic_job.run` | `PeriodicJob::run`, `try_run`; one more field, `period` |
//!
//! Events (their tracing name, then the level):
//!
//! | event | level | when | fields |
//! |---|---|---|---|
//! | `coord.acquired` | INFO (DEBUG for a queue take) | a hold was granted (lock, lease, leadership, membership) or an item taken | `recipe`, `wait_seconds` (how long the caller waited); in the span above |
//! | `coord.not_acquired` | DEBUG | a `try_*`/`poll` found nothing, or the operation failed (a timeout too) | `recipe`, `wait_seconds`, `error` (none when busy) |
//! | `coord.released` | INFO | a hold was given up: `release`, or a guard dropped (`in_background = true`) | `recipe`, `backend`, `session`, `path`, `held_seconds`, `in_background` |
//! | `coord.lost` | WARN | a hold was found lost: its `lost()` resolved, or `release` found it gone | `recipe`, `backend`, `session`, `path`, `held_seconds`, `error` |
//! | `coord.session.state` | INFO for `connected`/`reconnected`/`closed`, WARN for `suspended`/`expired` | every change of a [`Session`](crate::Session)'s state, once, on every backend (the first one when the session is made) | `backend`, `session`, `state`, `from`, `reason` (when coord itself ends the session: its lease deadline passed) |
//! | `coord.periodic_job.outcome` | INFO | a periodic job's `run`/`try_run` ended | `outcome` (`ran`, `failed`, `already_done`, `abandoned`, `busy`) |
//!
//! Holds are followed (and the `released`/`lost` events emitted) only when,
//! as the hold is granted, WARN is enabled for the target `coord` (so a
//! `coord=warn` filter still sees `coord.lost`), or with the `metrics`
//! feature. With tracing off, a span costs what a disabled `tracing` span
//! costs, and nothing is allocated.
//!
//! # Metrics (cargo feature `metrics`)
//! Recorded through the `metrics` facade (0.24): install any recorder
//! (Prometheus exporter, …) and they appear. Without the feature none of
//! this code is compiled.
//!
//! | metric | kind | labels | what |
//! |---|---|---|---|
//! | `coord_lock_wait_seconds` | histogram | `backend`, `prefix`, `recipe` | how long each granted acquire waited |
//! | `coord_lock_waiters` | gauge | `backend`, `prefix`, `recipe` | acquires in progress now (a `try_acquire` too, briefly) |
//! | `coord_lock_holders` | gauge | `backend`, `prefix`, `recipe` | holds granted and not yet released, dropped or found lost |
//! | `coord_lock_holds_lost_total` | counter | `backend`, `prefix`, `recipe` | holds found lost (as for the `coord.lost` event) |
//! | `coord_session_state` | gauge | `backend`, `state` | sessions of this process in each state (`connected`, `suspended`, `expired`, `closed`); a session counts until its last handle is dropped |
//! | `coord_queue_depth` | gauge | `backend`, `prefix` | items the last listing of the queue saw (by a take that listed, or `len`), leased ones included |
//!
//! The lock metrics cover the recipes `lock`, `read_lock`, `write_lock`,
//! `simple_lock`, `semaphore` (a `SemaphoreMutex` is a one-lease
//! semaphore; each lease is a holder) and `election` (leadership).
//!
//! `prefix` is the recipe path cut to its first [`path_prefix_depth`]
//! segments (default 1: `/locks/report` → `/locks`; see
//! [`set_path_prefix_depth`]), so the number of label values stays bounded
//! by the number of top-level directories in use: never a full path, never
//! a node or sequence name. Keep per-entity names (user ids, uuids) out of
//! the segments the prefix covers.

#[cfg(feature = "metrics")]
mod meters;
mod operation;
mod origin;
mod prefix;
mod recipe;
mod state;
mod tracker;

pub(crate) use operation::{in_span, operation, period, queue_depth, Follow, Outcome};
pub(crate) use origin::Origin;
pub use prefix::{path_prefix, path_prefix_depth, set_path_prefix_depth, TARGET};
pub(crate) use recipe::Recipe;
pub(crate) use state::{session_gone, session_state};
pub(crate) use tracker::Tracker;

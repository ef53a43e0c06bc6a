//! # coord-nemesis
//!
//! Worker processes that use coord's recipes the way applications do,
//! faults injected among them at random, and a checker of what they
//! recorded. `scripts/nemesis` runs it; the binary's modes are:
//!
//! - `run` — the orchestrator: it puts every client process behind its own
//!   [`FaultProxy`](coord_conformance::fault::FaultProxy)s (hosted in the
//!   orchestrator itself, so faulting a connection is a method call), starts
//!   K counter workers, a queue producer and consumers, the long-lived
//!   services, and injects faults with a seed it prints: kill -9 (then a
//!   restart), SIGSTOP past the session timeout (then SIGCONT), a
//!   partition or a cut of one process's connections, and on a cluster
//!   kill -9 / restart of a member. Then it heals everything, stops the
//!   processes, drains the queue, reads the final counter, reads the
//!   services' end state in rounds until it settles, and runs the
//!   checker.
//! - `worker` — loops: acquire the [`coordination::Lock`], read the counter, write
//!   counter + 1 through the guarded write (`LockGuard::write`, fenced by
//!   the hold), release. `--unfenced`: read and write with a plain `set`
//!   through a store connection of its own that reconnects when its session
//!   ends, as a database client would — the control that must lose an
//!   update when a holder is paused.
//! - `producer` / `consumer` — numbered items offered to a
//!   [`coordination::ReliableQueue`]; consumers take and ack.
//! - `latch`, `member`, `cache` — the long-lived services, each one
//!   [`coordination::Client`] for the process's whole life with one recipe that
//!   comes back after every session loss: a [`coordination::RejoiningLatch`] in
//!   one election (logging its terms, writing the leader key fenced by
//!   each term), a [`coordination::GroupMember`] in one group, a
//!   [`coordination::TreeCache`] following the client over a subtree that the
//!   `writer` process mutates. The checker's rules for them: one leader at
//!   a time, every live process a member at the end, every cache equal to
//!   the server's tree at the end (see [`check`](mod@check)).
//! - `check DIR` — the checker ([`check`](mod@check)) on a run's history.
//!
//! Every process appends JSON lines to its own history file
//! ([`history`]); the checker merges them by CLOCK_MONOTONIC time.
#![warn(missing_docs)]

pub mod check;
pub mod history;
pub mod tree;

pub use check::{check, Report, Violation, ViolationKind};
pub use history::{Event, HistoryWriter, Kind};

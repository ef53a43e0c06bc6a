//! The history checker: what the merged history of a nemesis run says
//! about lost updates, stale fenced writes, overlapping holds and the
//! queue, and the throughput around each fault.
//!
//! # What is checked, precisely
//!
//! Times are the processes' CLOCK_MONOTONIC readings. An `invoke` is logged
//! before a call is made and its `ok` after the answer came, so an
//! operation took effect somewhere inside `[invoke, ok]`.
//!
//! The counter node holds `"<value> <token>"`: the value and the fencing
//! token of the hold it was written under. Every worker writes
//! `value read + 1`.
//!
//! - **Lost update** — an acknowledged increment missing from the end
//!   state: (a) two acknowledged writes wrote the same value (both read
//!   the same value: one overwrote the other); (b) a read invoked after a
//!   write of `v` was acknowledged returned less than `v` (the counter went
//!   back); (c) the final counter is below the number of acknowledged
//!   writes. Also reported: a final counter above what the acknowledged and
//!   indeterminate writes can explain.
//! - **Stale fenced write** — a write accepted under a token lower than one
//!   already accepted: (a) a write acknowledged after being invoked when a
//!   write with a larger token had already been acknowledged; (b) a read
//!   (workers' reads and the final read) that returned a value written
//!   under token `t` although a write under a larger token had been
//!   acknowledged before the read was invoked: the smaller token's write
//!   landed after the larger one's (or the read was stale; either breaks
//!   the lock's promise). (b) is what catches a holder paused after it
//!   logged its `invoke`.
//! - **Overlapping holds** — a process *believes* it holds the lock from
//!   its `ok acquire` until the first of: it invokes `release`; it is told
//!   the hold is gone (`event lost`: `lost()` resolved, or an operation
//!   failed with lock-lost or session-end); it starts a new session or a
//!   new acquire; it exits; the nemesis killed it (`start kill`, logged
//!   once the process is reaped); its history ends. An overlap is a grant
//!   (`ok acquire`) to another process inside that interval — except when
//!   the holder was paused (SIGSTOP) at any moment between its grant and
//!   the other grant: a paused process cannot be told anything, which is
//!   exactly the case the fencing token and the guarded write exist for
//!   (and the stale-write check covers). A fencing token granted twice is
//!   reported too.
//! - **Queue** — an item whose offer was acknowledged is *lost* when no
//!   consumer's ack of it succeeded nor may have succeeded (an ack cut
//!   short by a kill or a lost answer counts as maybe) by the end, and
//!   *acknowledged twice* when two acks of it succeeded. Items left in the
//!   queue at the end, and items consumed that were never offered, are
//!   reported too.
//!
//! Throughput (counter writes and queue acks per second) is reported for
//! the window before, during and after each fault; it is information, not
//! a verdict.

mod all;
mod beliefs;
mod calls;
mod counter;
mod findings;
mod holds;
mod queue;
mod report;
mod throughput;

pub use all::check;
pub use report::{FaultWindow, Report, Summary, Violation, ViolationKind, WINDOW_SECONDS};

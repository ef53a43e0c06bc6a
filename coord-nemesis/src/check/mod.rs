//! The history checker: what the merged history of a nemesis run says
//! about lost updates, stale fenced writes, overlapping holds, the queue,
//! the long-lived services (one leader at a time, every live process a
//! member, every cache equal to the server), and the throughput around
//! each fault.
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
//! ## The long-lived services
//!
//! Latch, member and cache processes each run one recipe on a supervised
//! `coordination::Client` for the whole run, under the same faults, and come back
//! by themselves after every session loss.
//!
//! - **One leader at any instant** (latch processes, one election). Each
//!   logs its terms as it sees them: `event lead` (token) when its
//!   `RejoiningLatch` reports `IsLeader`, `event lead-end` at `NotLeader`.
//!   Three rules, from the weakest to the one that carries the proof:
//!   - *leader-overlap*: a term is believed from its `lead` until its
//!     `lead-end`, its process's exit or kill (the kill logged once it is
//!     reaped: a dead process leads nothing), or the end of its history; a
//!     `lead` of another process inside it is an overlap — unless that
//!     leader was paused (SIGSTOP) at any moment between the two
//!     beginnings. A paused process believes it leads and cannot be told
//!     otherwise; nothing it logs (or does not log) can prove its term
//!     over, so its belief cannot be a violation. Only what it *does*
//!     matters, and that is the third rule.
//!   - *leader-terms*: a token in the terms of two processes; a term
//!     begun, in the history, after another term ended whose token is not
//!     smaller (always within one process; across processes unless the
//!     later one was paused between the two beginnings, which can delay
//!     its `lead` line past a term that really came after it); a term
//!     begun before its process's previous term was reported over (the
//!     latch's promise: `NotLeader` before the next `IsLeader`).
//!   - *leader-stale-write*, the invariant that holds under SIGSTOP: every
//!     ~150 ms a leader reads the leader key (`lread`, the token read in
//!     `rtoken`) and puts `"<token> <seq>"` there with a guarded write
//!     fenced by its term (`Session::guarded(latch.fence(), ..)`: written
//!     only while its offer node, the lowest of the election, still
//!     exists). The next leader leads only once that node is gone, and
//!     its token is larger; so the server accepts writes under tokens
//!     that never decrease, whatever the processes believe. Checked like
//!     the counter's stale writes: (a) a write acknowledged although
//!     invoked after a larger token's write was acknowledged; (b) a read
//!     (a leader's, or the nemesis's `lfinal` once every latch process
//!     stopped) invoked after a larger token's write was acknowledged that
//!     returns a smaller token. A paused leader that wakes up and writes
//!     before it learns its term is over must be refused (`fail lwrite`);
//!     were it accepted, the next read breaks (b).
//! - **Every live process a member at the end** (member processes, one
//!   group, name = slot, data = the incarnation's name, logged as
//!   `event member-join`): after the faults stop and the workers, writer
//!   and latch processes are stopped, the nemesis reads, in rounds, the
//!   processes alive (`event alive`), the group from a fresh session
//!   (`ok members-final`: `name=data` lines) and the cached subtree;
//!   rounds repeat until members and caches agree or a deadline (three
//!   session timeouts + 10 s) passes, and the last round is judged:
//!   *member-missing* — a live member process whose name is not in the
//!   group with its data; *member-stale* — a member no live process holds
//!   (an incarnation killed long enough ago that its session must have
//!   expired).
//! - **Every cache equal to the server's tree at the end** (cache
//!   processes, a `TreeCache` following the client over the subtree a
//!   writer process mutates with persistent and ephemeral nodes): in each
//!   round every live cache process dumps `current()` (`ok dump`, the
//!   round in `n`, the tree as [`crate::tree`] writes it: path, version,
//!   stamp, ephemerality, data) and the nemesis reads the server's tree
//!   (`ok tree-final`); *cache-diverged* — a dump that differs from the
//!   server's tree of the same round, or a live cache that did not dump.
//!
//! A history with services but without their end reads is *incomplete*.
//!
//! Throughput (counter writes and queue acks per second) is reported for
//! the window before, during and after each fault; it is information, not
//! a verdict.

mod all;
mod beliefs;
mod calls;
mod counter;
mod finale;
mod findings;
mod holds;
mod leader;
mod queue;
mod report;
mod services_report;
mod throughput;

pub use all::check;
pub use report::{FaultWindow, Report, Summary, Violation, ViolationKind, WINDOW_SECONDS};
pub use services_report::ServicesSummary;

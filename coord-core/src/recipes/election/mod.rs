//! Leader election (the ZooKeeper recipes' `LeaderElectionSupport`, etcd's
//! `Election`, Curator's `LeaderLatch`).
//!
//! Each participant offers by creating an ephemeral-sequential node
//! `_c_<uuid>-latch-<seq>` under the election directory (Curator
//! `LeaderLatch`'s names, so Curator and kazoo participants share the
//! election; see [`ElectionLayout`] for `LeaderSelector`'s), with its value
//! (a host name, say) as the node's data. The live offer with the lowest sequence
//! leads; every other participant waits on its *immediate predecessor* only,
//! so a leader's departure wakes exactly one participant. Every child with a
//! sequence counts as an offer, so on etcd — where every key under the
//! directory is ordered by create revision and its value is the proposal —
//! `etcdctl elect` processes take part in the same election.
//!
//! Three ways in:
//! - [`Election::campaign`] waits until elected and returns a [`Leadership`]
//!   guard (fencing token, `lost()`, `resign()`), like etcd's `Campaign`;
//! - [`Election::participate`] runs `LeaderElectionSupport`'s state machine
//!   in a task and delivers its events (`START`, `OFFER_*`, `DETERMINE_*`,
//!   `ELECTED_*`, `READY_*`, `FAILED`, `STOP_*`) in order, see
//!   [`Participant`];
//! - [`Election::latch`] (or [`LeaderLatch::start`]) is Curator's
//!   `LeaderLatch` over a participant: `has_leadership`, `await_leadership`,
//!   `IsLeader` / `NotLeader` events.
//!
//! Anyone, participant or not, can read the leader ([`Election::leader`]) and
//! follow leader changes ([`Election::observe`]).

pub(crate) mod campaign;
pub(crate) mod events;
pub(crate) mod latch;
pub(crate) mod leader;
pub(crate) mod leader_election;
pub(crate) mod leadership;
pub(crate) mod participant;

pub use campaign::ElectionLayout;
pub use events::{ElectionEvent, ElectionState};
pub use latch::{LatchEvent, LatchWatcher, LeaderLatch};
pub use leader::{Election, Leader, LeaderObserver};
pub use leader_election::{LeaderElection, LeaderElectionExt};
pub use leadership::Leadership;
pub use participant::{Participant, ParticipantStatus};

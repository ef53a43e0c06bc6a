//! The machinery the recipes share, written once so that every recipe gets
//! the same guarantees: queueing without herd effect ([`contend`]),
//! creates that leave nothing behind when their caller gives up
//! ([`pending`]), the node behind every guard ([`held`]), reads retried
//! through connection losses ([`retry`]), how long a caller waits
//! ([`wait`]) and the counters tests and benchmarks read ([`stats`]).
//!
//! Internal to the crate: the public pieces ([`HeldNode`](held::HeldNode),
//! [`Stats`](stats::Stats)) are re-exported from [`crate::recipes`].

pub(crate) mod contend;
pub(crate) mod held;
pub(crate) mod pending;
pub(crate) mod retry;
pub(crate) mod stats;
pub(crate) mod wait;

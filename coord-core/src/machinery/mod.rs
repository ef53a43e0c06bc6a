//! The machinery the recipes share, written once so that every recipe gets
//! the same guarantees: creates that leave nothing behind when their caller
//! gives up ([`pending`]), bounded waits in drops ([`in_drop`]), reads
//! retried through connection losses ([`retry`]), how long a caller waits
//! ([`wait`]), the counters tests and benchmarks read ([`stats`]) and event
//! streams that a dropped `next()` leaves intact ([`stream`]). Internal to
//! the crate.

pub(crate) mod in_drop;
pub(crate) mod pending;
pub(crate) mod retry;
pub(crate) mod stats;
pub(crate) mod stream;
pub(crate) mod wait;

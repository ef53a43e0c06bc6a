//! The set partitioner: group members split a set of work items, one
//! owner each. `set.rs` is the member on one session ([`Partitioner`]),
//! `rejoining.rs` the one that joins again on each new session of a client
//! ([`RejoiningPartitioner`]), `state.rs` what both report, `handle.rs`
//! the handle both wrap.

mod handle;
mod rejoining;
mod set;
mod state;

pub use rejoining::RejoiningPartitioner;
pub use set::{Partitioner, SetPartitioner};
pub use state::{PartitionState, PartitionWatcher};

//! Queues: the [`WorkQueue`] trait beside the recipes — [`Queue`] and
//! [`ReliableQueue`], [`PriorityQueue`] and [`DelayQueue`] and their
//! reliable forms — and the engine they share.

pub(crate) mod cache;
pub(crate) mod claim;
pub(crate) mod engine;
pub(crate) mod fifo;
pub(crate) mod keys;
pub(crate) mod ordered;
pub(crate) mod reliable;
pub(crate) mod work_queue;

pub use fifo::Queue;
pub use ordered::{DelayQueue, PriorityQueue, ReliableDelayQueue, ReliablePriorityQueue};
pub use reliable::{Delivery, ReliableQueue};
pub use work_queue::WorkQueue;

//! The workloads, one file each: its runner and the rows it records.
//! They run in this order; the raw round trip first, as the yardstick of
//! the rest. `scale` (and its Java peer, `curator`) runs on its own,
//! from the `lock-scale` binary. The growth workloads (`group_scale`,
//! `queue_scale`, `cycle`, `memory`) run apart, in [`crate::run_growth`];
//! the soak in [`soak::run`].

pub mod curator;
pub mod cycle;
pub mod group_scale;
pub mod memory;
pub mod queue_scale;
pub mod raw;
pub mod rt;
pub mod scale;
pub mod soak;
pub mod w1;
pub mod w2;
pub mod w3_w4;
pub mod w5;
pub mod w6;
pub mod w7;
pub mod w8;

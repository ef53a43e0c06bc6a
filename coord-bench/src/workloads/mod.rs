//! The workloads, one file each: its runner and the rows it records.
//! They run in this order; the raw round trip first, as the yardstick of
//! the rest.

pub mod raw;
pub mod rt;
pub mod w1;
pub mod w2;
pub mod w3_w4;
pub mod w5;
pub mod w6;
pub mod w7;
pub mod w8;

//! What the coord-etcd integration tests share: the conformance harness
//! ([`harness`]) and the secured test etcd's settings ([`secure`]). A
//! standalone etcd of a test's own (tests/restart.rs) is a
//! `coord_conformance::server::TestServer`.

#![allow(dead_code)]

pub mod harness;
pub mod secure;

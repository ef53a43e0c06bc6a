//! The conformance suite, whole, on the secured etcd
//! (scripts/servers/etcd-secure.sh): every session over mutual TLS and
//! authenticated as the `coord` user, whose role grants read-write on the
//! whole keyspace; the fault tests' proxy passes TLS through. Needs
//! `COORD_TEST_ETCD_SECURE*` and `COORD_TEST_CERTS` (scripts/test-all sets
//! them); without them every test fails: nothing is skipped.

#![cfg(feature = "tls")]

mod common;

coord_conformance::conformance_tests!(common::harness::EtcdHarness::secure_from_env());

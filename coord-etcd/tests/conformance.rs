//! The conformance suite on a real etcd: `COORD_TEST_ETCD` names it
//! (`http://127.0.0.1:2379`, or several, comma-separated); scripts/test-all
//! starts one and sets it. Without it every test fails: nothing is skipped.

mod common;

coord_conformance::conformance_tests!(common::harness::EtcdHarness::from_env());

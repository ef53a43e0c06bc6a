//! The conformance suite against a real ZooKeeper (`COORD_TEST_ZK`); the
//! harness is shared with tests/conformance_secure.rs (tests/common).

mod common;

use common::harness::ZkHarness;

fn harness() -> ZkHarness {
    let options = common::options_from_env();
    ZkHarness::new("zk", options.hosts(), common::plain_options)
}

coord_conformance::conformance_tests!(harness());

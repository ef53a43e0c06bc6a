//! The whole conformance suite once more, against the secured ZooKeeper
//! (`COORD_TEST_ZK_SECURE`, scripts/servers/zk-secure.sh): a TLS-only
//! secure client port that requires a client certificate (mutual TLS),
//! every session (the fault proxy's and `expire`'s included) through TLS
//! with the test client certificate and digest credentials, so every node
//! coord makes carries the creator-all, world-read ACL. The harness is
//! tests/conformance.rs's (tests/common).

mod common;

use common::harness::ZkHarness;

fn harness() -> ZkHarness {
    ZkHarness::new(
        "zk-secure",
        &common::secure_addr_from_env(),
        common::secure_options,
    )
}

coord_conformance::conformance_tests!(harness());

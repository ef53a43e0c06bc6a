//! The whole conformance suite against the Redis server at
//! `COORD_TEST_REDIS` (scripts/test-all starts one). Without a reachable
//! server every test fails; none is skipped.

mod common;

use common::RedisHarness;

coord_conformance::conformance_tests!(RedisHarness::from_env());

//! The whole conformance suite against the secured Redis server at
//! `COORD_TEST_REDIS_SECURE` (scripts/servers/redis-secure.sh): TLS only,
//! with a client certificate (mutual TLS), as the ACL user `coord` that has
//! neither @admin nor @dangerous commands (so no CONFIG: keyspace
//! notifications are set in the server's config and observed, not read).
//! The fault-injection tests go through `FaultProxy`, TLS passing through.
//! Without the server or its variables every test fails; none is skipped.

mod common;

use common::RedisHarness;

coord_conformance::conformance_tests!(RedisHarness::secure_from_env());

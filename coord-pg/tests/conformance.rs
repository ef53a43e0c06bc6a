//! The whole conformance suite against the PostgreSQL server at
//! `COORD_TEST_PG` (scripts/servers/pg.sh starts one). The fault tests go
//! through the shared `FaultProxy`. Without a reachable server every test
//! fails; none is skipped.

mod common;

use common::PgHarness;

coord_conformance::conformance_tests!(PgHarness::plain_from_env());

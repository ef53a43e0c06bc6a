//! The whole conformance suite against the secured PostgreSQL server at
//! `COORD_TEST_PG_SECURE` (scripts/servers/pg-secure.sh): TLS only, with a
//! client certificate signed by the test CA (`clientcert=verify-ca`) and a
//! scram-sha-256 password. The fault tests go through `FaultProxy`, TLS
//! passing through. Without the server every test fails; none is skipped.

mod common;

use common::PgHarness;

coord_conformance::conformance_tests!(PgHarness::secure_from_env());

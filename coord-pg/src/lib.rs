//! # coord-pg (work in progress, issue 33)
//!
//! The PostgreSQL backend of coord: the primitive contract of
//! [`coord_core::backend::PrimitiveSession`] on PostgreSQL 15, every
//! operation one call of a PL/pgSQL function of `sql/schema.sql` (one round
//! trip, one transaction), sessions ended by the server's clock, change
//! notices by a trigger's `NOTIFY` (sent at commit) to one `LISTEN`
//! connection per session.
//!
//! Not done yet: TLS, a schema named in the URL, transactions and the
//! tree watch, the facade and coordctl, the fault and restart tests.

mod connect;
mod error;
mod options;
mod session;
mod watch;

pub use connect::connect;
pub use options::PgOptions;
pub use session::expire;

//! # coord-pg
//!
//! The PostgreSQL backend of coord: the primitive contract of
//! [`coord_core::backend::PrimitiveSession`] on PostgreSQL 15, every
//! operation one call of a PL/pgSQL function of `sql/schema.sql` (one round
//! trip, one transaction).
//!
//! - **Sessions** end by the *server's* clock: a row with `expires_at =
//!   clock_timestamp() + timeout`, moved on by a heartbeat every third of
//!   the timeout (over the session's connection, and over the process's
//!   listening one too when the first, with requests of the session's own
//!   ahead of the renewal, has not answered within a third of the timeout:
//!   one of them may be waiting at the server); the client's lease
//!   deadline follows the send time of each answered renewal, as on every
//!   backend.
//! - **A dead process's nodes** go with its session's row (`on delete
//!   cascade`). Expired sessions are reaped by every operation and every
//!   heartbeat of any live client, so while any client of the schema lives
//!   they go within the session timeout plus one heartbeat period (a third
//!   of the *live* client's timeout). With no client at all nobody needs
//!   them gone; the next one to come reaps them first.
//! - **Stamps** (fencing tokens) come from one sequence: PostgreSQL logs a
//!   sequence ahead of what it hands out, so after a crash it skips
//!   forward, never back.
//! - **Watches**: a trigger `NOTIFY`s every change at commit, in commit
//!   order, to one `LISTEN` connection per process for each server and
//!   schema, shared by its sessions (PostgreSQL wakes every listening
//!   connection of a database at each notice); a waiter registers before
//!   its read, and a lost listening connection wakes every waiter (and
//!   sends tree watches `Resync`) rather than drop a change.
//! - **Guarded writes and transactions** are one function call that checks
//!   the fences first, in the same database transaction.
//! - **Ordered neighbours**: a contender's place (`Session::place`) and a
//!   directory's first children (`Session::first_children`) are one
//!   function call each over the children index `(parent, seq, name)`: a
//!   scan from the contender's sequence, O(log N), never a listing. A
//!   contender's create answers its place in the same call and
//!   transaction (`Session::create_contender`), so an uncontended
//!   acquire is one call and an arrival that must wait asks once. Many
//!   nodes read at once (`Session::get_many`) are one statement per 1,000
//!   paths: the schema's `get` joined over the array of paths.
//! - **The schema** (`coord` by default, [`PgOptions::with_schema`]) is made
//!   by coord itself when missing or older (version 2 added
//!   `create_contender`), versioned in `<schema>.meta`; a coord that finds
//!   a newer version than its own refuses it. A role that
//!   owns the schema (`create schema coord authorization app;`) needs no
//!   other grant; making the schema needs `CREATE` on the database.
//! - **Connections**: one per session (commands) and one per process for
//!   each server and schema (`LISTEN`), each made again when lost; TLS
//!   with rustls ([`PgOptions::with_tls`], `sslmode`).
//!
//! High availability is the operator's: a failover to an asynchronous
//! replica can lose acknowledged writes (a lock granted twice), and a
//! promoted replica's sequence may be behind (a token issued again).

mod connect;
mod error;
mod keepalive;
mod link;
mod listener;
mod options;
mod rows;
mod schema;
mod session;
pub mod testing;
mod tls;
mod txn;
mod watch;

pub use connect::connect;
pub use options::{PgOptions, MIN_SESSION_TIMEOUT};

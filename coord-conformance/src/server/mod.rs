//! Real server processes for tests: a ZooKeeper, etcd, Redis or PostgreSQL
//! of a test's own, which it may `kill -9` (or stop by the server's own
//! shutdown) and start again on the same port(s) and data.
//!
//! [`TestServer`] runs one server process on free loopback ports with its
//! data, config and log in a directory of its own (under `/dev/shm` when
//! there is one), waits until it serves, kills it (`SIGKILL`, that pid
//! only, or its process group for a server that forks; or the server's own
//! shutdown, [`Stop`]), starts it again on the same ports and data, and on
//! drop kills exactly what it started and removes the directory. What
//! differs between servers, the command line and how to tell it serves, is
//! a [`ServerKind`]: [`ZooKeeper`], [`Etcd`], [`Redis`] and [`Postgres`]
//! are here, so every backend's tests (and any other crate's) start them
//! the same way.
//!
//! The tests that use it need the server's binaries (`java` with Debian's
//! zookeeper package, `etcd`, `redis-server`, Debian's postgresql); without
//! them they fail, saying what is missing: they never skip.

mod etcd;
mod postgres;
mod process;
mod redis;
mod zookeeper;

pub use etcd::Etcd;
pub use postgres::{PgShutdown, Postgres};
pub use process::{ServerKind, ServerProcess, Stop, TestServer};
pub use redis::{Redis, RedisPersistence};
pub use zookeeper::ZooKeeper;

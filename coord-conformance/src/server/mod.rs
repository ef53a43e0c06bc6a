//! Real server processes for tests: a ZooKeeper, etcd or Redis of a test's
//! own, which it may `kill -9` and start again on the same port(s) and data.
//!
//! [`TestServer`] runs one server process on free loopback ports with its
//! data, config and log in a directory of its own (under `/dev/shm` when
//! there is one), waits until it serves, kills it (`SIGKILL`, that pid
//! only), starts it again on the same ports and data, and on drop kills
//! exactly the pid it started and removes the directory. What differs
//! between servers, the command line and how to tell it serves, is a
//! [`ServerKind`]: [`ZooKeeper`], [`Etcd`] and [`Redis`] are here, so every
//! backend's tests (and any other crate's) start them the same way.
//!
//! The tests that use it need the server's binaries (`java` with Debian's
//! zookeeper package, `etcd`, `redis-server`); without them they fail,
//! saying what is missing: they never skip.

mod etcd;
mod process;
mod redis;
mod zookeeper;

pub use etcd::Etcd;
pub use process::{ServerKind, ServerProcess, TestServer};
pub use redis::{Redis, RedisPersistence};
pub use zookeeper::ZooKeeper;

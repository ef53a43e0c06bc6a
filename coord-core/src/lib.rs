//! # coord-core
//!
//! Distributed coordination recipes — locks, read/write locks, semaphores and
//! more — written once over a small primitive contract
//! ([`PrimitiveSession`]) that every backend implements: ZooKeeper, etcd,
//! Redis, or the in-process `coord-mem`.
//!
//! Users hold a [`Session`] (opened by a backend crate) and build recipes
//! on it. Every argument is checked before any I/O ([`path`]); every error
//! is one [`Error`].
#![warn(missing_docs)]

pub mod error;
pub mod lease;
pub mod limits;
pub mod path;
pub mod primitive;
pub mod recipes;
pub mod redact;
mod session;

pub use error::{Error, PathErrorKind, Result};
pub use lease::LeaseClock;
pub use primitive::{
    Child, CreateMode, Created, Fence, Node, Op, OpResult, PrimitiveSession, SessionId,
    SessionState, Stat, Watch,
};
pub use redact::redact_url;
pub use session::Session;

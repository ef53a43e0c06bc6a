//! # coord-core
//!
//! Distributed coordination recipes — locks, read/write locks, semaphores and
//! more — written once over a small primitive contract
//! ([`PrimitiveSession`]) that every backend implements: ZooKeeper, etcd,
//! Redis, or the in-process `coord-mem`.
//!
//! Users hold a [`Session`] (opened by a backend crate) and build recipes
//! ([`recipes`]) on it. Code that should not care which recipe it gets is
//! written against the traits ([`traits`]: [`Lockable`](traits::Lockable),
//! [`Hold`](traits::Hold), [`LeaderElection`](traits::LeaderElection),
//! [`WorkQueue`](traits::WorkQueue)); `use coord_core::prelude::*` brings
//! them in. Every argument is checked before any I/O ([`path`]); every
//! error is one [`Error`].
#![warn(missing_docs)]

pub mod backend;
mod compat;
pub mod error;
mod hold;
pub mod inspect;
pub mod layout;
pub mod limits;
mod machinery;
pub mod path;
pub mod recipes;
mod session;
pub mod telemetry;

// Old paths, until the compat module goes.
#[doc(hidden)]
pub use compat::root::*;

/// The traits, for `use coord_core::prelude::*`: their methods then work on
/// every recipe and every `dyn` of them.
pub mod prelude {
    pub use crate::hold::Hold;
    pub use crate::recipes::election::{LeaderElection, LeaderElectionExt};
    pub use crate::recipes::lock::{Lockable, LockableExt};
    pub use crate::recipes::queue::WorkQueue;
}

pub use backend::node::{
    Child, CreateMode, Created, Fence, Node, Op, OpResult, SessionId, SessionState, Stat,
    MAX_NODE_TTL, MIN_NODE_TTL,
};
pub use backend::tls::TlsOptions;
pub use backend::watch::{TreeChange, TreeWatch, Watch};
pub use error::{Error, PathErrorKind, Result};
pub use session::Session;

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

#[doc(hidden)]
pub mod backend_net;
pub mod backoff;
pub mod error;
pub mod inspect;
pub mod lease;
pub mod limits;
pub mod path;
pub mod primitive;
pub mod recipes;
pub mod redact;
mod session;
pub mod telemetry;
pub mod tls;
pub mod traits;

/// The traits, for `use coord_core::prelude::*`: their methods then work on
/// every recipe and every `dyn` of them.
pub mod prelude {
    pub use crate::traits::{
        Hold, LeaderElection, LeaderElectionExt, Lockable, LockableExt, WorkQueue,
    };
}

pub use error::{Error, PathErrorKind, Result};
pub use lease::LeaseClock;
pub use primitive::{
    Child, CreateMode, Created, Fence, Node, Op, OpResult, PrimitiveSession, SessionId,
    SessionState, Stat, TreeChange, TreeWatch, Watch, MAX_NODE_TTL, MIN_NODE_TTL,
};
pub use redact::redact_url;
pub use session::Session;
pub use tls::{TlsMaterial, TlsOptions};

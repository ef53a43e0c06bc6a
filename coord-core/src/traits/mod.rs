//! The traits users program and test against: [`Lockable`] (every lock),
//! [`Hold`] (every guard), [`LeaderElection`] and [`WorkQueue`], with the
//! scoped helpers [`LockableExt::run`] and [`LeaderElectionExt::lead`].
//! The recipes in [`crate::recipes`] implement them.
//!
//! Traits are named for what a thing can do and structs for the recipe, so
//! a call site never has to tell a trait `Lock` from a struct `Lock`:
//! `fn f(lock: &dyn Lockable)` takes a [`Lock`](crate::recipes::Lock), a
//! [`SemaphoreMutex`](crate::recipes::SemaphoreMutex) or a
//! [`ReentrantLock`](crate::recipes::ReentrantLock). `use
//! coord_core::prelude::*` brings them all in.

mod election;
mod lock;
mod queue;

pub use crate::hold::{while_held, Hold, HoldContext};
pub use election::{LeaderElection, LeaderElectionExt};
pub use lock::{Lockable, LockableExt};
pub use queue::WorkQueue;

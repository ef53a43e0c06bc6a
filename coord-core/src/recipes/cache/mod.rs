//! The caches: local, always-converging views of a node, a directory or a
//! subtree, with an event stream ([`TreeCache`] says how they work).

mod event;
mod follow;
mod mirror;
mod views;
mod worker;

pub use event::CacheEvent;
pub use views::{ChildrenCache, NodeCache, TreeCache};

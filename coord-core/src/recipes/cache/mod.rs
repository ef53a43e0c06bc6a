//! Local, always-converging views of a node, a directory or a subtree, with
//! an event stream (Curator's `CuratorCache` / `NodeCache` /
//! `PathChildrenCache` / `TreeCache`; kazoo's `DataWatch`, `ChildrenWatch`,
//! `TreeCache`).
//! See [`TreeCache`] for how they work.

mod event;
mod mirror;
mod views;
mod worker;

pub use event::CacheEvent;
pub use views::{ChildrenCache, NodeCache, TreeCache};

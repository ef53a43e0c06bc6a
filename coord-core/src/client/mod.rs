//! [`Client`]: a supervised client that keeps one live session and opens
//! the next one after the last one ends, so that a service outlives its
//! sessions. The recipes that come back ([`PersistentNode`](crate::recipes::PersistentNode),
//! [`GroupMember`](crate::recipes::GroupMember), [`RejoiningLatch`](crate::recipes::RejoiningLatch),
//! [`RejoiningPartitioner`](crate::recipes::RejoiningPartitioner), the caches'
//! [`follow`](crate::recipes::TreeCache::follow)) are built on it.
//!
//! Files: `open.rs` (how a session is opened: [`Open`]), `events.rs` (the
//! [`ClientEvent`] stream), `state.rs` (what the handles share with the
//! supervisor), `supervisor.rs` (the loop that opens, watches and
//! re-opens), `handle.rs` ([`Client`] itself).

mod events;
mod handle;
mod open;
mod state;
mod supervisor;

pub use events::{ClientEvent, ClientEvents};
pub use handle::{Client, ClientOptions, Generation};
pub use open::{Open, OpenFuture};

//! Nodes that come back after their session ends: [`PersistentNode`]
//! (Curator's `PersistentNode`) and [`GroupMember`] (Curator's
//! `GroupMember`), built on a [`Client`](crate::Client).
//!
//! Files: `mode.rs` ([`PersistentMode`]), `presence.rs` ([`Presence`],
//! [`PresenceWatcher`]), `keep.rs` (the task that makes and keeps the
//! node on each session), `node.rs` ([`PersistentNode`], its handle),
//! `member.rs` ([`GroupMember`], a persistent node at a group member's
//! path).

mod keep;
mod member;
mod mode;
mod node;
mod presence;

pub use member::GroupMember;
pub use mode::PersistentMode;
pub use node::PersistentNode;
pub use presence::{Presence, PresenceWatcher};

//! What every guard is made of: the [`Hold`] trait with its scoped helper
//! [`while_held`] and [`HoldContext`], the held node behind every guard,
//! queueing contenders without herd effect ([`contend`]), who holds and who
//! waits ([`Contender`]), and asking a holder to let go ([`revocation`]).
//! Internal to the crate; the public pieces are re-exported from
//! [`crate::recipes`] and [`crate::prelude`].

pub(crate) mod contend;
pub(crate) mod contenders;
mod contract;
pub(crate) mod held;
pub(crate) mod reason;
pub mod revocation;

pub use contenders::{Contender, ContenderState};
pub use contract::{while_held, Hold, HoldContext};
pub(crate) use held::impl_hold;
pub use held::HeldNode;

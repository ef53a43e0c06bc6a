//! Leader election: [`Election`], the one way in, its four ways to take
//! part (campaign, lead, participant, latch) and the trait they implement;
//! [`RejoiningLatch`], a latch on a [`Client`](crate::Client) that
//! campaigns again on each new session.

pub(crate) mod campaign;
pub(crate) mod events;
pub(crate) mod latch;
pub(crate) mod leader;
pub(crate) mod leader_election;
pub(crate) mod leadership;
pub(crate) mod participant;
pub(crate) mod rejoining;

pub use campaign::ElectionLayout;
pub use events::{ElectionEvent, ElectionState};
pub use latch::{LatchEvent, LatchWatcher, LeaderLatch};
pub use leader::{Election, Leader, LeaderObserver};
pub use leader_election::{LeaderElection, LeaderElectionExt};
pub use leadership::Leadership;
pub use participant::{Participant, ParticipantStatus};
pub use rejoining::{RejoiningLatch, RejoiningLatchWatcher};

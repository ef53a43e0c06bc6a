//! The events and states of a [`Participant`](super::Participant): the
//! ZooKeeper recipes' `LeaderElectionSupport` state machine.

/// An event of a [`Participant`](super::Participant), as the ZooKeeper
/// recipes' `LeaderElectionSupport` dispatches them, delivered in order.
///
/// A participant that wins at once sees `Start, OfferStart, OfferComplete,
/// DetermineStart, DetermineComplete, ElectedStart, ElectedComplete`; one
/// that has to wait sees `… DetermineComplete, ReadyStart, ReadyComplete`
/// and, each time its predecessor goes, `DetermineStart, DetermineComplete`
/// again, then either `Ready*` or `Elected*`.
/// [`Participant::stop`](super::Participant::stop) adds `StopStart,
/// StopComplete`; an error (the session's end, a lost offer) gives
/// `Failed`. (`ReadyStart`/`ReadyComplete` are sent when the participant
/// starts watching its predecessor; `LeaderElectionSupport` skips them
/// when the predecessor is already gone, here the watch then fires at once
/// and determination follows.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ElectionEvent {
    /// The participant started.
    Start,
    /// Making the offer (creating the node).
    OfferStart,
    /// The offer node exists.
    OfferComplete,
    /// Listing the offers to find our place.
    DetermineStart,
    /// Our place is known.
    DetermineComplete,
    /// Ours is the first offer: becoming leader.
    ElectedStart,
    /// Leader ([`Participant::is_leader`](super::Participant::is_leader)
    /// is now true).
    ElectedComplete,
    /// Not first: about to watch the offer just before ours.
    ReadyStart,
    /// Watching the predecessor.
    ReadyComplete,
    /// An error ended the participation (see
    /// [`Participant::stop`](super::Participant::stop)).
    Failed,
    /// Stopping: leadership (if held) ends before the offer is deleted.
    StopStart,
    /// The offer is withdrawn.
    StopComplete,
}

/// The state of a [`Participant`](super::Participant)
/// (`LeaderElectionSupport`'s `State`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ElectionState {
    /// Started.
    Start,
    /// Making the offer.
    Offer,
    /// Finding its place.
    Determine,
    /// Leader.
    Elected,
    /// Waiting behind a predecessor.
    Ready,
    /// Ended by an error.
    Failed,
    /// Stopped (or stopping).
    Stop,
}

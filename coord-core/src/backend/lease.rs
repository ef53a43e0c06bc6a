//! The client's side of a session's life: a hold must end on the client
//! *before* the server can give it to someone else.
//!
//! A server ends a session `session_timeout` after it last heard from the
//! client. The client cannot see that instant, but it can bound it from
//! below: a request the server answered was heard no earlier than it was
//! sent, so the server keeps the session at least until
//! `send time + session_timeout`. A [`LeaseClock`] keeps the *lease
//! deadline*
//!
//! ```text
//! deadline = send time of the last answered renewal + session_timeout − margin
//! margin   = session_timeout / 10   (SAFETY_MARGIN_DIVISOR)
//! ```
//!
//! and [`crate::Session`] treats the session as lost once the deadline
//! passes without a newer answer: its state becomes
//! [`crate::SessionState::Expired`], every `lost()` resolves, guarded
//! writes and every other operation are refused locally, and the backend is
//! told to end the session on the server as soon as it reaches it
//! ([`crate::backend::PrimitiveSession::abandon`]), so its nodes stop blocking
//! others.
//!
//! # What it assumes, and what it cannot cover
//! - The client's and the server's clocks run at rates that differ by less
//!   than the margin (10 %): Chubby's "jeopardy" assumption. No wall-clock
//!   agreement is needed; both sides measure intervals on monotonic clocks.
//! - A paused process (GC, SIGSTOP, a VM migration) cannot act on a
//!   deadline while it is paused: it may wake holding what it no longer
//!   holds. That is what the fencing token and the guarded write are for.
//! - ZooKeeper ensembles: the leader learns that a follower heard a client
//!   only at its next tick (tickTime / 2 late at most), so keep
//!   `session_timeout ≥ 5 × tickTime` for the margin to cover it (the
//!   ZooKeeper default, tickTime 2 s with timeouts of 10 s and more, does).

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// The margin is `session_timeout / SAFETY_MARGIN_DIVISOR`: 10 % of it,
/// for clock-rate drift and a late timer.
pub const SAFETY_MARGIN_DIVISOR: u32 = 10;

/// The lease deadline of one session; see the module docs. Backends own
/// one per session and call [`LeaseClock::renewed`] whenever the server
/// answers a request that renews the session (ZooKeeper: any request, pings
/// included; etcd: a lease keep-alive; Redis: the session key's heartbeat).
#[derive(Debug)]
pub struct LeaseClock {
    session_timeout: Duration,
    usable: Duration,
    deadline: Mutex<Instant>,
}

impl LeaseClock {
    /// A clock for a session the server granted `session_timeout`, created
    /// by a request sent at `sent` (send it, note the instant, then build
    /// the clock once the answer is in).
    pub fn new(session_timeout: Duration, sent: Instant) -> Self {
        let usable = usable(session_timeout);
        LeaseClock {
            session_timeout,
            usable,
            deadline: Mutex::new(sent.checked_add(usable).unwrap_or(sent)),
        }
    }

    /// The server answered a renewing request sent at `sent`: the session
    /// lives on the server at least until `sent + session_timeout`, so the
    /// deadline moves to `sent + session_timeout − margin` (never back).
    pub fn renewed(&self, sent: Instant) {
        let candidate = sent.checked_add(self.usable).unwrap_or(sent);
        let mut d = self.deadline.lock().unwrap_or_else(|e| e.into_inner());
        if candidate > *d {
            *d = candidate;
        }
    }

    /// The instant past which the session counts as lost on the client.
    pub fn deadline(&self) -> Instant {
        *self.deadline.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the deadline has passed.
    pub fn expired(&self) -> bool {
        Instant::now() >= self.deadline()
    }

    /// The session timeout the server granted.
    pub fn session_timeout(&self) -> Duration {
        self.session_timeout
    }

    /// `session_timeout − margin`: how long after a renewal's send time the
    /// session still counts as alive on the client.
    pub fn usable(&self) -> Duration {
        self.usable
    }
}

/// `timeout − timeout / SAFETY_MARGIN_DIVISOR`.
pub fn usable(timeout: Duration) -> Duration {
    timeout.saturating_sub(timeout / SAFETY_MARGIN_DIVISOR)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_deadline_is_the_last_renewal_plus_the_usable_part() {
        let t0 = Instant::now();
        let clock = LeaseClock::new(Duration::from_secs(10), t0);
        assert_eq!(clock.usable(), Duration::from_secs(9));
        assert_eq!(clock.deadline(), t0 + Duration::from_secs(9));
        clock.renewed(t0 + Duration::from_secs(3));
        assert_eq!(clock.deadline(), t0 + Duration::from_secs(12));
        // An older answer arriving late never moves the deadline back.
        clock.renewed(t0 + Duration::from_secs(1));
        assert_eq!(clock.deadline(), t0 + Duration::from_secs(12));
        assert!(!clock.expired());
        tokio::time::advance(Duration::from_secs(12)).await;
        assert!(clock.expired());
    }
}

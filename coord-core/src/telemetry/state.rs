//! What a session's state changes say.

use crate::backend::node::{SessionId, SessionState};
#[cfg(feature = "metrics")]
use crate::telemetry::meters;
use crate::telemetry::prefix::TARGET;

fn state_name(state: SessionState) -> &'static str {
    match state {
        SessionState::Connected => "connected",
        SessionState::Suspended => "suspended",
        SessionState::Expired => "expired",
        SessionState::Closed => "closed",
    }
}

/// A session's state changed from `from` (`None`: the session was just
/// made) to `to`; `reason` when coord itself decided it.
pub(crate) fn session_state(
    backend: &'static str,
    id: &SessionId,
    from: Option<SessionState>,
    to: SessionState,
    reason: Option<&str>,
) {
    #[cfg(feature = "metrics")]
    {
        if let Some(from) = from {
            meters::session_state(backend, state_name(from), -1.0);
        }
        meters::session_state(backend, state_name(to), 1.0);
    }
    macro_rules! state_event {
        ($level:ident, $msg:literal) => {
            tracing::$level!(
                name: "coord.session.state",
                target: TARGET,
                backend,
                session = %id,
                state = state_name(to),
                from = from.map(state_name),
                reason,
                $msg
            )
        };
    }
    match (from, to) {
        (_, SessionState::Suspended) => state_event!(warn, "session suspended"),
        (_, SessionState::Expired) => state_event!(warn, "session expired"),
        (_, SessionState::Closed) => state_event!(info, "session closed"),
        (Some(SessionState::Suspended), SessionState::Connected) => {
            state_event!(info, "session reconnected")
        }
        (_, SessionState::Connected) => state_event!(info, "session connected"),
    }
}

/// A session whose last state was `state` is gone (its last handle
/// dropped): it no longer counts in `coord_session_state`.
#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
pub(crate) fn session_gone(backend: &'static str, state: SessionState) {
    #[cfg(feature = "metrics")]
    meters::session_state(backend, state_name(state), -1.0);
}

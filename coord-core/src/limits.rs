//! The largest durations coord accepts. Anything longer is refused with
//! [`Error::InvalidArgument`] before any I/O, the same on every backend:
//! no duration a user can write makes coord panic or overflow.

use std::time::Duration;

use crate::error::{Error, Result};

/// The longest timeout a wait accepts (`acquire_timeout`, `take_timeout`,
/// barrier waits, …): 10 years. To wait without a bound, call the method
/// without a timeout.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// The longest session timeout (TTL) a backend accepts: one day. Servers
/// cap it lower themselves (ZooKeeper's `maxSessionTimeout`, 20 ticks by
/// default); a session that outlives its process by a day is a mistake.
pub const MAX_SESSION_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// The longest delay a delay-queue item may be offered with: 10 years, as
/// the longest wait.
pub const MAX_DELAY: Duration = MAX_TIMEOUT;

/// The longest period a periodic job accepts: 10 years.
pub const MAX_PERIOD: Duration = MAX_TIMEOUT;

/// Refuse `value` when it is over `max`, naming `what` in the error.
///
/// # Errors
/// [`Error::InvalidArgument`] when `value > max`.
pub fn check(what: &str, value: Duration, max: Duration) -> Result<Duration> {
    if value > max {
        return Err(Error::InvalidArgument(format!(
            "{what} of {value:?} is longer than the maximum of {max:?}"
        )));
    }
    Ok(value)
}

/// Refuse a wait's timeout over [`MAX_TIMEOUT`].
///
/// # Errors
/// [`Error::InvalidArgument`] when it is over.
pub fn check_timeout(value: Duration) -> Result<Duration> {
    check("a timeout", value, MAX_TIMEOUT)
}

/// Refuse a session timeout that is zero or over [`MAX_SESSION_TIMEOUT`].
///
/// # Errors
/// [`Error::InvalidArgument`] when it is zero or over.
pub fn check_session_timeout(value: Duration) -> Result<Duration> {
    if value.is_zero() {
        return Err(Error::InvalidArgument(
            "a session timeout of zero cannot work".into(),
        ));
    }
    check("a session timeout", value, MAX_SESSION_TIMEOUT)
}

/// The instant `timeout` from now, for a wait given a timeout.
///
/// # Errors
/// [`Error::InvalidArgument`] when `timeout` is over [`MAX_TIMEOUT`].
pub fn deadline(timeout: Duration) -> Result<(tokio::time::Instant, Duration)> {
    let timeout = check_timeout(timeout)?;
    let now = tokio::time::Instant::now();
    let at = now.checked_add(timeout).ok_or_else(|| {
        Error::InvalidArgument(format!("a timeout of {timeout:?} is out of range"))
    })?;
    Ok((at, timeout))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        assert!(check_timeout(MAX_TIMEOUT).is_ok());
        assert!(matches!(
            check_timeout(Duration::MAX),
            Err(Error::InvalidArgument(_))
        ));
        assert!(check_session_timeout(Duration::ZERO).is_err());
        assert!(check_session_timeout(Duration::from_secs(5)).is_ok());
        assert!(check_session_timeout(MAX_SESSION_TIMEOUT + Duration::from_nanos(1)).is_err());
    }
}

//! How long a caller waits: not at all (`try_*`, `poll`), until a deadline
//! (`*_timeout`), or as long as it takes.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::Result;

/// How long an acquire or a take may wait.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wait {
    /// Do not wait at all: `try_acquire`, `poll`.
    No,
    /// Wait until this instant, then give up with `Timeout` (the timeout
    /// as asked for).
    Until(Instant, Duration),
    /// Wait as long as it takes.
    Forever,
}

impl Wait {
    /// Wait at most `d` from now.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] when `d` is over
    /// [`crate::limits::MAX_TIMEOUT`].
    pub(crate) fn timeout(d: Duration) -> Result<Self> {
        let (deadline, d) = crate::limits::deadline(d)?;
        Ok(Wait::Until(deadline, d))
    }

    /// The length of a timed wait (zero for the others).
    pub(crate) fn length(self) -> Duration {
        match self {
            Wait::Until(_, d) => d,
            _ => Duration::ZERO,
        }
    }

    /// Run `fut` within the wait's deadline, if it has one: `None` when the
    /// deadline passes first (a read held up by a partition must not hold
    /// the caller past its timeout).
    pub(crate) async fn within<T>(self, fut: impl Future<Output = T>) -> Option<T> {
        match self {
            Wait::Until(deadline, _) => tokio::time::timeout_at(deadline, fut).await.ok(),
            _ => Some(fut.await),
        }
    }
}

//! Hooks for this crate's own tests (a count of round trips); not part of
//! the API.

use std::sync::atomic::{AtomicU64, Ordering};

static REQUESTS: AtomicU64 = AtomicU64::new(0);

pub(crate) fn count_request() {
    REQUESTS.fetch_add(1, Ordering::Relaxed);
}

/// Unary requests (round trips) sent by every session in this process so
/// far; keep-alives and watch streams are not counted.
pub fn requests() -> u64 {
    REQUESTS.load(Ordering::Relaxed)
}

//! Wake-up counting, so a test or a benchmark can see the herd effect.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

/// Counters a recipe keeps for its waiters. Cheap to clone: clones share the
/// same counters, so many recipe handles can count into one.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    inner: Arc<Counters>,
}

#[derive(Debug, Default)]
struct Counters {
    wakeups: AtomicU64,
    acquisitions: AtomicU64,
    waiting: AtomicI64,
    listings: AtomicU64,
    names_listed: AtomicU64,
    attempts: AtomicU64,
}

impl Stats {
    /// New counters at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many times a waiter was woken to look again: each return of a
    /// wait on a node or a directory counts once.
    pub fn wakeups(&self) -> u64 {
        self.inner.wakeups.load(Ordering::Relaxed)
    }

    /// How many holds were granted.
    pub fn acquisitions(&self) -> u64 {
        self.inner.acquisitions.load(Ordering::Relaxed)
    }

    /// How many waiters are blocked right now, waiting for a change.
    pub fn waiting(&self) -> u64 {
        self.inner.waiting.load(Ordering::Relaxed).max(0) as u64
    }

    /// Count a waiter as blocked until the returned guard drops.
    pub(crate) fn blocked(&self) -> Blocked {
        self.inner.waiting.fetch_add(1, Ordering::Relaxed);
        Blocked(self.clone())
    }

    /// How many times a directory was listed to find work (a queue
    /// consumer's refills), so a test can check that draining N items
    /// costs O(N) round trips, not O(N²).
    pub fn listings(&self) -> u64 {
        self.inner.listings.load(Ordering::Relaxed)
    }

    /// How many names those listings returned in all: what a queue
    /// consumer's listings read (the server's cost of a listing grows with
    /// the names it returns).
    pub fn names_listed(&self) -> u64 {
        self.inner.names_listed.load(Ordering::Relaxed)
    }

    /// How many times a queue consumer tried to take an item: a delete
    /// (or in reliable mode a claim) sent, won or lost to another
    /// consumer. Against [`Stats::acquisitions`] it shows how often
    /// consumers raced for the same item.
    pub fn attempts(&self) -> u64 {
        self.inner.attempts.load(Ordering::Relaxed)
    }

    pub(crate) fn attempted(&self) {
        self.inner.attempts.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn listed(&self) {
        self.inner.listings.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn listed_names(&self, n: usize) {
        self.inner
            .names_listed
            .fetch_add(n as u64, Ordering::Relaxed);
    }

    pub(crate) fn woke(&self) {
        self.inner.wakeups.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn acquired(&self) {
        self.inner.acquisitions.fetch_add(1, Ordering::Relaxed);
    }
}

/// A waiter counted in [`Stats::waiting`] while this lives.
pub(crate) struct Blocked(Stats);

impl Drop for Blocked {
    fn drop(&mut self) {
        self.0.inner.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

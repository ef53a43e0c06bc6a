//! Every lock the suite tests through [`Lockable`], in one list
//! ([`lock_kinds`]), with what each one promises, so the generic lock tests
//! of [`crate::locks`] run over all of them: a new lock recipe is tested by
//! adding one line to the list.

use std::future::Future;
use std::panic::AssertUnwindSafe;

use coord_core::path::join;
use coord_core::prelude::*;
use coord_core::recipes::{Lock, ReentrantLock, RwLock, SemaphoreMutex, SimpleLock, Stats};
use coord_core::{Result, Session};
use futures_util::future::join_all;
use futures_util::FutureExt;

use crate::{children_or_none, eventually, Harness};

/// Makes one contender's handle on the lock at a path, through a session,
/// counting its waits into the given [`Stats`] (so a test can tell when it
/// is blocked).
pub type MakeLock = fn(&Session, &str, &Stats) -> Result<Box<dyn Lockable>>;

/// One implementation of [`Lockable`], and what it promises. Each call of
/// [`LockKind::make`] is a separate contender (for a
/// [`ReentrantLock`], a separate owner).
#[derive(Debug, Clone, Copy)]
pub struct LockKind {
    /// The recipe's name, for messages.
    pub name: &'static str,
    /// A contender of this kind.
    pub make: MakeLock,
    /// A contender at the same path that this kind excludes and is
    /// excluded by, and that excludes every other holder: the kind itself
    /// when it is exclusive, the write half for the read half.
    pub rival: MakeLock,
    /// Whether a holder of this kind excludes other holders of this kind
    /// (false for the read half of a read/write lock).
    pub exclusive: bool,
    /// Whether waiters are granted the lock in the order they queued (the
    /// simple lock's waiters race).
    pub fifo: bool,
    /// Whether the same handle may take it again while it holds it (a
    /// [`ReentrantLock`]); otherwise a second try by the holding handle
    /// gets `None` (or, for a shared kind, a hold of its own).
    pub reentrant: bool,
    /// How many wake-ups one release causes with several waiters queued,
    /// whatever their number (fewer only when fewer are queued): `None`
    /// for the simple lock (every waiter wakes: the herd effect) and for a
    /// shared kind (readers do not queue behind each other).
    pub wakeups_per_release: Option<u64>,
    /// Whether `participants()` lists the waiters (the simple lock's
    /// waiters make no node, so only its holder is listed).
    pub lists_waiters: bool,
    /// A [`Lock`] under the kind's directory (this relative name) that a
    /// contender who must wait queues on first: the semaphore's internal
    /// lock (`locks`). Its first attempt, made before it queues there, may
    /// touch what a queued waiter watches (a semaphore's fast attempt
    /// makes a lease node and deletes it, waking the waiter counting the
    /// leases), so a test that counts a release's wake-ups holds this
    /// lock while its waiters arrive and lets go once every first
    /// attempt is over.
    pub queue_gate: Option<&'static str>,
}

impl LockKind {
    /// An exclusive, FIFO, herd-free, non-reentrant lock that lists its
    /// waiters: what [`Lock`] promises. The other constructors below say
    /// where a kind differs.
    pub const fn new(name: &'static str, make: MakeLock) -> Self {
        LockKind {
            name,
            make,
            rival: make,
            exclusive: true,
            fifo: true,
            reentrant: false,
            wakeups_per_release: Some(1),
            lists_waiters: true,
            queue_gate: None,
        }
    }

    /// Holders of this kind share the lock; `rival` excludes them.
    pub const fn shared_with(mut self, rival: MakeLock) -> Self {
        self.rival = rival;
        self.exclusive = false;
        self.fifo = false;
        self.wakeups_per_release = None;
        self
    }

    /// Waiters are not granted in queue order.
    pub const fn unordered(mut self) -> Self {
        self.fifo = false;
        self
    }

    /// A release wakes every waiter.
    pub const fn herd(mut self) -> Self {
        self.wakeups_per_release = None;
        self
    }

    /// A release causes `n` wake-ups, whatever the number of waiters (as
    /// many as there are, when fewer).
    pub const fn wakeups_per_release(mut self, n: u64) -> Self {
        self.wakeups_per_release = Some(n);
        self
    }

    /// Contenders who must wait queue on the [`Lock`] at `name` under
    /// the kind's directory (see [`LockKind::queue_gate`]).
    pub const fn queue_gate(mut self, name: &'static str) -> Self {
        self.queue_gate = Some(name);
        self
    }

    /// The holding handle takes it again at once.
    pub const fn reentrant(mut self) -> Self {
        self.reentrant = true;
        self
    }

    /// `participants()` lists only the holder.
    pub const fn waiters_unlisted(mut self) -> Self {
        self.lists_waiters = false;
        self
    }

    /// A contender of this kind at `dir`.
    ///
    /// # Errors
    /// Panics, naming the kind, if the recipe refuses the path.
    pub fn lock(&self, s: &Session, dir: &str, stats: &Stats) -> Box<dyn Lockable> {
        (self.make)(s, dir, stats).unwrap_or_else(|e| panic!("{}: new at {dir}: {e}", self.name))
    }

    /// A rival contender at `dir` (see [`LockKind::rival`]).
    ///
    /// # Errors
    /// Panics, naming the kind, if the recipe refuses the path.
    pub fn rival_lock(&self, s: &Session, dir: &str, stats: &Stats) -> Box<dyn Lockable> {
        (self.rival)(s, dir, stats).unwrap_or_else(|e| panic!("{}: rival at {dir}: {e}", self.name))
    }

    /// The kind's name as a path segment.
    pub fn slug(&self) -> String {
        self.name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect()
    }
}

fn write_half(s: &Session, p: &str, st: &Stats) -> Result<Box<dyn Lockable>> {
    Ok(Box::new(
        RwLock::new(s, p)?.with_stats(st.clone()).write_lock(),
    ))
}

fn read_half(s: &Session, p: &str, st: &Stats) -> Result<Box<dyn Lockable>> {
    Ok(Box::new(
        RwLock::new(s, p)?.with_stats(st.clone()).read_lock(),
    ))
}

/// Every implementation of [`Lockable`] the generic lock tests run over.
///
/// - `Lock`: everything.
/// - `SimpleLock`: waiters race for the node (not FIFO), a release wakes
///   them all, and waiters make no node (not listed).
/// - `SemaphoreMutex`: FIFO through the semaphore's internal lock
///   (`locks`, its queue gate); a release wakes the acquirer counting
///   leases, and its hand-off of the internal lock wakes the next
///   acquirer: two wake-ups per release (one when the last waiter is
///   granted).
/// - `RwLock::write_lock`: as `Lock`.
/// - `RwLock::read_lock`: shared; its rival is the write half.
/// - `ReentrantLock<Lock>`: as `Lock`, re-entered by the holding handle.
pub fn lock_kinds() -> Vec<LockKind> {
    vec![
        LockKind::new("Lock", |s, p, st| {
            Ok(Box::new(Lock::new(s, p)?.with_stats(st.clone())))
        }),
        LockKind::new("SimpleLock", |s, p, st| {
            Ok(Box::new(SimpleLock::new(s, p)?.with_stats(st.clone())))
        })
        .unordered()
        .herd()
        .waiters_unlisted(),
        LockKind::new("SemaphoreMutex", |s, p, st| {
            Ok(Box::new(SemaphoreMutex::new(s, p)?.with_stats(st.clone())))
        })
        .wakeups_per_release(2)
        .queue_gate("locks"),
        LockKind::new("RwLock::write_lock", write_half),
        LockKind::new("RwLock::read_lock", read_half).shared_with(write_half),
        LockKind::new("ReentrantLock<Lock>", |s, p, st| {
            Ok(Box::new(ReentrantLock::new(
                Lock::new(s, p)?.with_stats(st.clone()),
            )))
        })
        .reentrant(),
    ]
}

/// Run `body` once for every kind of [`lock_kinds`] that `applies`, all at
/// once, each with its own directory under the test's root. Panics if no
/// kind applies (a test that tests nothing).
///
/// # Errors
/// Panics, naming the kinds, when any kind's body panics (after every
/// kind has run).
///
/// # Cancel safety
/// Dropped, every body is dropped where it stands.
pub async fn for_each_kind<F, Fut>(
    h: &dyn Harness,
    test: &str,
    applies: impl Fn(&LockKind) -> bool,
    body: F,
) where
    F: Fn(LockKind, String) -> Fut,
    Fut: Future<Output = ()>,
{
    let root = h.root(test);
    let kinds: Vec<LockKind> = lock_kinds().into_iter().filter(|k| applies(k)).collect();
    assert!(!kinds.is_empty(), "{test}: no lock kind to test");
    // Every kind runs to its end even when another fails, so one run names
    // every kind that breaks the property (each one's panic message is
    // printed as it happens).
    let outcomes = join_all(kinds.into_iter().map(|k| {
        let dir = join(&root, &k.slug());
        AssertUnwindSafe(body(k, dir))
            .catch_unwind()
            .map(move |r| (k.name, r.is_ok()))
    }))
    .await;
    let failed: Vec<&str> = outcomes
        .into_iter()
        .filter(|(_, ok)| !ok)
        .map(|(name, _)| name)
        .collect();
    assert!(failed.is_empty(), "{test} failed for {failed:?}");
}

/// The ephemeral nodes under `dir`, at any depth, sorted: what contenders
/// hold or queue with, whatever the recipe's layout.
///
/// # Errors
/// Panics when a read fails.
///
/// # Cancel safety
/// Cancel safe: it only reads.
pub async fn held_nodes(session: &Session, dir: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(d) = dirs.pop() {
        for c in children_or_none(session, &d).await {
            let p = join(&d, &c.name);
            match session.get(&p).await {
                Ok(Some(n)) if n.stat.ephemeral => out.push(p),
                Ok(Some(_)) => dirs.push(p),
                Ok(None) => {}
                Err(e) => panic!("get({p}) failed: {e}"),
            }
        }
    }
    out.sort();
    out
}

/// Wait until the ephemeral nodes under `dir` are exactly `want`.
///
/// # Errors
/// Panics (naming `what`) after [`crate::CONDITION_DEADLINE`].
///
/// # Cancel safety
/// Cancel safe: it only reads.
pub async fn await_held_nodes(session: &Session, dir: &str, what: &str, want: &[&str]) {
    let mut want: Vec<String> = want.iter().map(|s| (*s).to_owned()).collect();
    want.sort();
    eventually(what, || {
        let want = want.clone();
        async move { held_nodes(session, dir).await == want }
    })
    .await;
}

/// Wait until `n` contenders counted in `stats` are blocked.
///
/// # Errors
/// Panics (naming `what`) after [`crate::CONDITION_DEADLINE`].
///
/// # Cancel safety
/// Cancel safe: it only reads.
pub async fn await_blocked(stats: &Stats, n: u64, what: &str) {
    eventually(what, || {
        let st = stats.clone();
        async move { st.waiting() == n }
    })
    .await;
}

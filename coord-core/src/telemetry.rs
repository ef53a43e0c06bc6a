//! What coord tells operators: tracing spans and events, and — with the
//! cargo feature `metrics` — metrics through the [`metrics`](https://docs.rs/metrics) facade. Every
//! span, event and metric is made here; recipes and the session call one
//! function each.
//!
//! # Tracing
//! Every span and event has the target [`TARGET`] (`"coord"`), so
//! `RUST_LOG=coord=info` shows them. coord installs no subscriber.
//!
//! Spans, one per operation, all at INFO, with the fields `recipe`,
//! `backend`, `session` (the session's id as the backend shows it: a
//! ZooKeeper session id, an etcd lease id, a Redis session key's id — never
//! a URL, user or password) and `path` (the recipe's path as given):
//!
//! | span | around |
//! |---|---|
//! | `coord.lock.acquire` | every acquire (`acquire`, `try_acquire`, `acquire_timeout`) of `Lock`, `SimpleLock`, `Semaphore`/`SemaphoreMutex`, `ReadLock`/`WriteLock` (`RwLock::read`/`write`), `ReentrantLock` (its span holds the inner lock's) |
//! | `coord.election.campaign` | `Election::campaign`(`_timeout`) and a `Participant`'s campaign |
//! | `coord.queue.take` | `take`, `take_timeout`, `poll` of `Queue`, `PriorityQueue`, `DelayQueue` (recipe `queue`) and their reliable forms (recipe `reliable_queue`) |
//! | `coord.group.join` | `Group::join`, `Group::join_as` |
//! | `coord.periodic_job.run` | `PeriodicJob::run`, `try_run`; one more field, `period` |
//!
//! Events (their tracing name, then the level):
//!
//! | event | level | when | fields |
//! |---|---|---|---|
//! | `coord.acquired` | INFO (DEBUG for a queue take) | a hold was granted (lock, lease, leadership, membership) or an item taken | `recipe`, `wait_seconds` (how long the caller waited); in the span above |
//! | `coord.not_acquired` | DEBUG | a `try_*`/`poll` found nothing, or the operation failed (a timeout too) | `recipe`, `wait_seconds`, `error` (none when busy) |
//! | `coord.released` | INFO | a hold was given up: `release`, or a guard dropped (`in_background = true`) | `recipe`, `backend`, `session`, `path`, `held_seconds`, `in_background` |
//! | `coord.lost` | WARN | a hold was found lost: its `lost()` resolved, or `release` found it gone | `recipe`, `backend`, `session`, `path`, `held_seconds`, `error` |
//! | `coord.session.state` | INFO for `connected`/`reconnected`/`closed`, WARN for `suspended`/`expired` | every change of a [`Session`]'s state, once, on every backend (the first one when the session is made) | `backend`, `session`, `state`, `from`, `reason` (when coord itself ends the session: its lease deadline passed) |
//! | `coord.periodic_job.outcome` | INFO | a periodic job's `run`/`try_run` ended | `outcome` (`ran`, `failed`, `already_done`, `abandoned`, `busy`) |
//!
//! Holds are followed (and the `released`/`lost` events emitted) only when,
//! as the hold is granted, WARN is enabled for the target `coord` (so a
//! `coord=warn` filter still sees `coord.lost`), or with the `metrics`
//! feature. With tracing off, a span costs what a disabled `tracing` span
//! costs, and nothing is allocated.
//!
//! # Metrics (cargo feature `metrics`)
//! Recorded through the `metrics` facade (0.24): install any recorder
//! (Prometheus exporter, …) and they appear. Without the feature none of
//! this code is compiled.
//!
//! | metric | kind | labels | what |
//! |---|---|---|---|
//! | `coord_lock_wait_seconds` | histogram | `backend`, `prefix`, `recipe` | how long each granted acquire waited |
//! | `coord_lock_waiters` | gauge | `backend`, `prefix`, `recipe` | acquires in progress now (a `try_acquire` too, briefly) |
//! | `coord_lock_holders` | gauge | `backend`, `prefix`, `recipe` | holds granted and not yet released, dropped or found lost |
//! | `coord_lock_holds_lost_total` | counter | `backend`, `prefix`, `recipe` | holds found lost (as for the `coord.lost` event) |
//! | `coord_session_state` | gauge | `backend`, `state` | sessions of this process in each state (`connected`, `suspended`, `expired`, `closed`); a session counts until its last handle is dropped |
//! | `coord_queue_depth` | gauge | `backend`, `prefix` | items the last listing of the queue saw (by a take that listed, or `len`), leased ones included |
//!
//! The lock metrics cover the recipes `lock`, `read_lock`, `write_lock`,
//! `simple_lock`, `semaphore` (a `SemaphoreMutex` is a one-lease
//! semaphore; each lease is a holder) and `election` (leadership).
//!
//! `prefix` is the recipe path cut to its first [`path_prefix_depth`]
//! segments (default 1: `/locks/report` → `/locks`; see
//! [`set_path_prefix_depth`]), so the number of label values stays bounded
//! by the number of top-level directories in use: never a full path, never
//! a node or sequence name. Keep per-entity names (user ids, uuids) out of
//! the segments the prefix covers.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::time::Instant;
use tracing::Instrument;

use crate::backend::node::{SessionId, SessionState};
use crate::error::{Error, Result};
use crate::recipes::HeldNode;
use crate::session::Session;

/// The tracing target of every span and event coord emits.
pub const TARGET: &str = "coord";

static PREFIX_DEPTH: AtomicUsize = AtomicUsize::new(1);

/// Set how many leading segments of a recipe's path make its metrics'
/// `prefix` label (default 1; 0 puts every path under `/`). Process-wide;
/// meant to be set once at start-up.
pub fn set_path_prefix_depth(depth: usize) {
    PREFIX_DEPTH.store(depth, Ordering::Relaxed);
}

/// The depth [`set_path_prefix_depth`] set (1 unless changed).
pub fn path_prefix_depth() -> usize {
    PREFIX_DEPTH.load(Ordering::Relaxed)
}

/// `path` cut to its first `depth` segments: `("/a/b/c", 1)` → `"/a"`,
/// `("/a/b/c", 2)` → `"/a/b"`, `(_, 0)` → `"/"`; a shorter path whole.
pub fn path_prefix(path: &str, depth: usize) -> &str {
    if depth == 0 {
        return "/";
    }
    let mut seen = 0;
    for (i, b) in path.bytes().enumerate().skip(1) {
        if b == b'/' {
            seen += 1;
            if seen == depth {
                return &path[..i];
            }
        }
    }
    path
}

/// Which recipe an operation belongs to: the `recipe` field and label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Recipe {
    Lock,
    ReadLock,
    WriteLock,
    SimpleLock,
    Semaphore,
    Reentrant,
    Election,
    Group,
    Queue,
    ReliableQueue,
}

impl Recipe {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Recipe::Lock => "lock",
            Recipe::ReadLock => "read_lock",
            Recipe::WriteLock => "write_lock",
            Recipe::SimpleLock => "simple_lock",
            Recipe::Semaphore => "semaphore",
            Recipe::Reentrant => "reentrant_lock",
            Recipe::Election => "election",
            Recipe::Group => "group",
            Recipe::Queue => "queue",
            Recipe::ReliableQueue => "reliable_queue",
        }
    }

    /// Whether the lock metrics count it.
    #[cfg(feature = "metrics")]
    fn metered(self) -> bool {
        matches!(
            self,
            Recipe::Lock
                | Recipe::ReadLock
                | Recipe::WriteLock
                | Recipe::SimpleLock
                | Recipe::Semaphore
                | Recipe::Election
        )
    }
}

/// The span of one operation of `recipe` on `path`.
fn span(recipe: Recipe, session: &Session, path: &str) -> tracing::Span {
    macro_rules! op_span {
        ($name:literal) => {
            tracing::info_span!(
                target: TARGET,
                $name,
                recipe = recipe.name(),
                backend = session.backend(),
                session = %session.id(),
                path,
            )
        };
    }
    match recipe {
        Recipe::Lock
        | Recipe::ReadLock
        | Recipe::WriteLock
        | Recipe::SimpleLock
        | Recipe::Semaphore
        | Recipe::Reentrant => op_span!("coord.lock.acquire"),
        Recipe::Election => op_span!("coord.election.campaign"),
        Recipe::Group => op_span!("coord.group.join"),
        Recipe::Queue | Recipe::ReliableQueue => op_span!("coord.queue.take"),
    }
}

/// What an operation got: whether anything (a `try`/`poll` may get
/// nothing), and the holds in it, to be followed.
pub(crate) trait Outcome {
    /// `false` when a `try`/`poll` found nothing.
    fn got(&self) -> bool {
        true
    }
    /// Call `f` on every hold the outcome carries.
    fn holds(&mut self, _f: &mut dyn FnMut(&mut HeldNode)) {}
}

impl<T: Outcome> Outcome for Option<T> {
    fn got(&self) -> bool {
        self.as_ref().is_some_and(Outcome::got)
    }
    fn holds(&mut self, f: &mut dyn FnMut(&mut HeldNode)) {
        if let Some(t) = self {
            t.holds(f);
        }
    }
}

impl<T: Outcome> Outcome for Vec<T> {
    fn holds(&mut self, f: &mut dyn FnMut(&mut HeldNode)) {
        for t in self {
            t.holds(f);
        }
    }
}

impl Outcome for HeldNode {
    fn holds(&mut self, f: &mut dyn FnMut(&mut HeldNode)) {
        f(self);
    }
}

/// Whether holds granted now are followed: their end is worth an event
/// (`coord.lost` is at WARN) or a metric.
fn following() -> bool {
    cfg!(feature = "metrics") || tracing::enabled!(target: TARGET, tracing::Level::WARN)
}

/// Run `op`, an operation of `recipe` on `path`, in its span; then say
/// what it got and how long it waited, and follow the holds it got.
pub(crate) async fn operation<T: Outcome>(
    recipe: Recipe,
    session: &Session,
    path: &str,
    op: impl Future<Output = Result<T>>,
) -> Result<T> {
    let span = span(recipe, session, path);
    let start = Instant::now();
    #[cfg(feature = "metrics")]
    let _waiting = recipe
        .metered()
        .then(|| meters::Waiting::new(session.backend(), path, recipe));
    let mut result = op.instrument(span.clone()).await;
    let waited = start.elapsed();
    span.in_scope(|| {
        let wait_seconds = waited.as_secs_f64();
        let recipe_name = recipe.name();
        match &mut result {
            Ok(got) if got.got() => {
                if matches!(recipe, Recipe::Queue | Recipe::ReliableQueue) {
                    tracing::debug!(name: "coord.acquired", target: TARGET, recipe = recipe_name, wait_seconds, "took an item");
                } else {
                    tracing::info!(name: "coord.acquired", target: TARGET, recipe = recipe_name, wait_seconds, "acquired");
                }
                #[cfg(feature = "metrics")]
                if recipe.metered() {
                    meters::waited(session.backend(), path, recipe, wait_seconds);
                }
                if following() {
                    got.holds(&mut |held| {
                        held.follow(Tracker::new(recipe, session.backend(), path));
                    });
                }
            }
            Ok(_) => {
                tracing::debug!(name: "coord.not_acquired", target: TARGET, recipe = recipe_name, wait_seconds, "not acquired: busy");
            }
            Err(e) => {
                tracing::debug!(name: "coord.not_acquired", target: TARGET, recipe = recipe_name, wait_seconds, error = %e, "not acquired");
            }
        }
    });
    result
}

/// Run `op` in the span of `recipe` on `path`, saying nothing more (the
/// operations inside it do: a [`ReentrantLock`](crate::recipes::ReentrantLock)'s
/// inner lock).
pub(crate) async fn in_span<T>(
    recipe: Recipe,
    session: &Session,
    path: &str,
    op: impl Future<Output = T>,
) -> T {
    op.instrument(span(recipe, session, path)).await
}

/// Run a periodic job's period in its span, and say how it ended.
pub(crate) async fn period<T>(
    session: &Session,
    path: &str,
    period: u64,
    op: impl Future<Output = Result<T>>,
    outcome: impl FnOnce(&T) -> &'static str,
) -> Result<T> {
    let span = tracing::info_span!(
        target: TARGET,
        "coord.periodic_job.run",
        recipe = "periodic_job",
        backend = session.backend(),
        session = %session.id(),
        path,
        period,
    );
    let result = op.instrument(span.clone()).await;
    span.in_scope(|| match &result {
        Ok(t) => {
            tracing::info!(name: "coord.periodic_job.outcome", target: TARGET, outcome = outcome(t), "periodic job period over");
        }
        Err(e) => {
            tracing::info!(name: "coord.periodic_job.outcome", target: TARGET, outcome = "error", error = %e, "periodic job period over");
        }
    });
    result
}

/// A queue listing saw `depth` items.
#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
pub(crate) fn queue_depth(session: &Session, path: &str, depth: usize) {
    #[cfg(feature = "metrics")]
    meters::queue_depth(session.backend(), path, depth);
}

/// Follows one hold from its grant to its end: says how it ended (once),
/// and keeps the holders gauge.
pub(crate) struct Tracker {
    recipe: Recipe,
    path: String,
    since: Instant,
    ended: AtomicBool,
    #[cfg(feature = "metrics")]
    meters: Option<meters::Holding>,
}

impl std::fmt::Debug for Tracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracker")
            .field("recipe", &self.recipe)
            .finish_non_exhaustive()
    }
}

impl Tracker {
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    fn new(recipe: Recipe, backend: &'static str, path: &str) -> Self {
        Tracker {
            recipe,
            path: path.to_owned(),
            since: Instant::now(),
            ended: AtomicBool::new(false),
            #[cfg(feature = "metrics")]
            meters: recipe
                .metered()
                .then(|| meters::Holding::new(backend, path, recipe)),
        }
    }

    /// `true` the first time only.
    fn end(&self) -> bool {
        let first = !self.ended.swap(true, Ordering::AcqRel);
        #[cfg(feature = "metrics")]
        if first {
            if let Some(m) = &self.meters {
                m.ended();
            }
        }
        first
    }

    /// The hold was given up (`in_background`: its guard was dropped).
    pub(crate) fn released(&self, session: &Session, in_background: bool) {
        if self.end() {
            tracing::info!(
                name: "coord.released",
                target: TARGET,
                recipe = self.recipe.name(),
                backend = session.backend(),
                session = %session.id(),
                path = self.path.as_str(),
                held_seconds = self.since.elapsed().as_secs_f64(),
                in_background,
                "released"
            );
        }
    }

    /// The hold was found lost, for `why`.
    pub(crate) fn lost(&self, session: &Session, why: &Error) {
        if self.end() {
            #[cfg(feature = "metrics")]
            if let Some(m) = &self.meters {
                m.lost();
            }
            tracing::warn!(
                name: "coord.lost",
                target: TARGET,
                recipe = self.recipe.name(),
                backend = session.backend(),
                session = %session.id(),
                path = self.path.as_str(),
                held_seconds = self.since.elapsed().as_secs_f64(),
                error = %why,
                "hold lost"
            );
        }
    }
}

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

#[cfg(feature = "metrics")]
mod meters {
    //! The metrics themselves (feature `metrics`).

    use super::{path_prefix, path_prefix_depth, Recipe};

    fn prefix(path: &str) -> String {
        path_prefix(path, path_prefix_depth()).to_owned()
    }

    fn waiters(backend: &'static str, path: &str, recipe: Recipe) -> metrics::Gauge {
        metrics::gauge!(
            "coord_lock_waiters",
            "backend" => backend,
            "prefix" => prefix(path),
            "recipe" => recipe.name()
        )
    }

    /// An acquire in progress, counted in `coord_lock_waiters` while it
    /// lives.
    pub(super) struct Waiting(metrics::Gauge);

    impl Waiting {
        pub(super) fn new(backend: &'static str, path: &str, recipe: Recipe) -> Self {
            let g = waiters(backend, path, recipe);
            g.increment(1.0);
            Waiting(g)
        }
    }

    impl Drop for Waiting {
        fn drop(&mut self) {
            self.0.decrement(1.0);
        }
    }

    pub(super) fn waited(backend: &'static str, path: &str, recipe: Recipe, seconds: f64) {
        metrics::histogram!(
            "coord_lock_wait_seconds",
            "backend" => backend,
            "prefix" => prefix(path),
            "recipe" => recipe.name()
        )
        .record(seconds);
    }

    /// A hold counted in `coord_lock_holders` until [`Holding::ended`].
    pub(super) struct Holding {
        holders: metrics::Gauge,
        lost: metrics::Counter,
    }

    impl Holding {
        pub(super) fn new(backend: &'static str, path: &str, recipe: Recipe) -> Self {
            let prefix = prefix(path);
            let holders = metrics::gauge!(
                "coord_lock_holders",
                "backend" => backend,
                "prefix" => prefix.clone(),
                "recipe" => recipe.name()
            );
            let lost = metrics::counter!(
                "coord_lock_holds_lost_total",
                "backend" => backend,
                "prefix" => prefix,
                "recipe" => recipe.name()
            );
            holders.increment(1.0);
            Holding { holders, lost }
        }

        pub(super) fn ended(&self) {
            self.holders.decrement(1.0);
        }

        pub(super) fn lost(&self) {
            self.lost.increment(1);
        }
    }

    pub(super) fn session_state(backend: &'static str, state: &'static str, delta: f64) {
        metrics::gauge!("coord_session_state", "backend" => backend, "state" => state)
            .increment(delta);
    }

    pub(super) fn queue_depth(backend: &'static str, path: &str, depth: usize) {
        #[allow(clippy::cast_precision_loss)]
        metrics::gauge!("coord_queue_depth", "backend" => backend, "prefix" => prefix(path))
            .set(depth as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::path_prefix;

    #[test]
    fn prefixes_keep_only_leading_segments() {
        assert_eq!(path_prefix("/locks/report/x", 1), "/locks");
        assert_eq!(path_prefix("/locks/report/x", 2), "/locks/report");
        assert_eq!(path_prefix("/locks/report/x", 3), "/locks/report/x");
        assert_eq!(path_prefix("/locks/report/x", 9), "/locks/report/x");
        assert_eq!(path_prefix("/locks", 1), "/locks");
        assert_eq!(path_prefix("/locks/report", 0), "/");
        assert_eq!(path_prefix("/", 1), "/");
    }
}

//! The spans of recipe operations, and what they say when they end.

use std::future::Future;

use tokio::time::Instant;
use tracing::Instrument;

use crate::error::Result;
#[cfg(feature = "metrics")]
use crate::telemetry::meters;
use crate::telemetry::origin::Origin;
use crate::telemetry::prefix::TARGET;
use crate::telemetry::recipe::Recipe;
use crate::telemetry::tracker::Tracker;

/// The span of one operation of `recipe` on `path`.
fn span(recipe: Recipe, session: &dyn Origin, path: &str) -> tracing::Span {
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

/// A hold telemetry can follow to its end.
pub(crate) trait Follow {
    /// Have `tracker` follow this hold.
    fn follow(&mut self, tracker: Tracker);
}

/// What an operation got: whether anything (a `try`/`poll` may get
/// nothing), and the holds in it, to be followed.
pub(crate) trait Outcome {
    /// `false` when a `try`/`poll` found nothing.
    fn got(&self) -> bool {
        true
    }
    /// Call `f` on every hold the outcome carries.
    fn holds(&mut self, _f: &mut dyn FnMut(&mut dyn Follow)) {}
}

impl<T: Outcome> Outcome for Option<T> {
    fn got(&self) -> bool {
        self.as_ref().is_some_and(Outcome::got)
    }
    fn holds(&mut self, f: &mut dyn FnMut(&mut dyn Follow)) {
        if let Some(t) = self {
            t.holds(f);
        }
    }
}

impl<T: Outcome> Outcome for Vec<T> {
    fn holds(&mut self, f: &mut dyn FnMut(&mut dyn Follow)) {
        for t in self {
            t.holds(f);
        }
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
    session: &dyn Origin,
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
    session: &dyn Origin,
    path: &str,
    op: impl Future<Output = T>,
) -> T {
    op.instrument(span(recipe, session, path)).await
}

/// Run a periodic job's period in its span, and say how it ended.
pub(crate) async fn period<T>(
    session: &dyn Origin,
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
pub(crate) fn queue_depth(session: &dyn Origin, path: &str, depth: usize) {
    #[cfg(feature = "metrics")]
    meters::queue_depth(session.backend(), path, depth);
}

//! The metrics themselves (feature `metrics`).

use crate::telemetry::prefix::{path_prefix, path_prefix_depth};
use crate::telemetry::recipe::Recipe;

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
pub(crate) struct Waiting(metrics::Gauge);

impl Waiting {
    pub(crate) fn new(backend: &'static str, path: &str, recipe: Recipe) -> Self {
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

pub(crate) fn waited(backend: &'static str, path: &str, recipe: Recipe, seconds: f64) {
    metrics::histogram!(
        "coord_lock_wait_seconds",
        "backend" => backend,
        "prefix" => prefix(path),
        "recipe" => recipe.name()
    )
    .record(seconds);
}

/// A hold counted in `coord_lock_holders` until [`Holding::ended`].
pub(crate) struct Holding {
    holders: metrics::Gauge,
    lost: metrics::Counter,
}

impl Holding {
    pub(crate) fn new(backend: &'static str, path: &str, recipe: Recipe) -> Self {
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

    pub(crate) fn ended(&self) {
        self.holders.decrement(1.0);
    }

    pub(crate) fn lost(&self) {
        self.lost.increment(1);
    }
}

pub(crate) fn session_state(backend: &'static str, state: &'static str, delta: f64) {
    metrics::gauge!("coord_session_state", "backend" => backend, "state" => state).increment(delta);
}

pub(crate) fn queue_depth(backend: &'static str, path: &str, depth: usize) {
    #[allow(clippy::cast_precision_loss)]
    metrics::gauge!("coord_queue_depth", "backend" => backend, "prefix" => prefix(path))
        .set(depth as f64);
}

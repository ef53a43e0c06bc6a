//! Following one hold from its grant to its end.

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::time::Instant;

use crate::error::Error;
#[cfg(feature = "metrics")]
use crate::telemetry::meters;
use crate::telemetry::origin::Origin;
use crate::telemetry::prefix::TARGET;
use crate::telemetry::recipe::Recipe;

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
    pub(crate) fn new(recipe: Recipe, backend: &'static str, path: &str) -> Self {
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
    pub(crate) fn released(&self, session: &dyn Origin, in_background: bool) {
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
    pub(crate) fn lost(&self, session: &dyn Origin, why: &Error) {
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

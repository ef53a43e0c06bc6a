//! What the caches share: the events they report, the map they keep and
//! its shape.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::backend::node::Node;

/// One change reported by a cache.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheEvent {
    /// A node appeared (or was present at the initial load).
    Added {
        /// Its path.
        path: String,
        /// Its data.
        data: Vec<u8>,
    },
    /// A node's data changed (or it was deleted and made again).
    Updated {
        /// Its path.
        path: String,
        /// Its new data.
        data: Vec<u8>,
    },
    /// A node went.
    Removed {
        /// Its path.
        path: String,
    },
    /// The initial load (or a reload after a `Reset`) is
    /// complete: [`TreeCache::current`](crate::recipes::TreeCache::current) is the server's state as of then.
    Initialized,
    /// The view is stale and a reload follows: a
    /// [`TreeCache::restart`](crate::recipes::TreeCache::restart) began, or
    /// the session of a cache made by `follow` ended (it reloads on the
    /// client's next session). The events up to the next `Initialized` are
    /// the difference from the view before it.
    Reset,
}

pub(crate) type Shared = Arc<Mutex<HashMap<String, Node>>>;

#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    /// Levels below the root that are cached.
    pub(crate) max_depth: usize,
    /// Whether the root itself is reported.
    pub(crate) include_root: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Data,
    Children,
    /// The root is missing: wait for a change of an ancestor's children.
    Ancestor,
}

//! The public paths of coord-core before its layering, kept so that code
//! written against them still compiles. Nothing inside the crate uses this
//! module; it goes once every caller uses the new paths.
#![allow(unused_imports)]

/// Old modules under `coord_core::recipes`.
pub mod recipes {
    /// Old path: `coord_core::recipes::names`.
    #[doc(hidden)]
    pub mod names {
        pub use crate::layout::{protected, KAZOO_READ, LATCH, LEASE, LOCK, READ, WRITE};
    }
}

/// Old items of `coord_core::recipes::election`.
pub mod election {
    /// Old path: `coord_core::recipes::election::OFFER_MARKER`.
    #[doc(hidden)]
    pub use crate::layout::LATCH as OFFER_MARKER;
}

/// Old items of `coord_core::recipes::queue`.
pub mod queue {
    /// Old path: `coord_core::recipes::queue::ITEM_MARKER`.
    #[doc(hidden)]
    pub use crate::layout::ITEM as ITEM_MARKER;
    /// Old path: `coord_core::recipes::queue::MAX_DELAY`.
    #[doc(hidden)]
    pub use crate::limits::MAX_DELAY;
}

/// Old items of `coord_core::recipes::group`.
pub mod group {
    /// Old path: `coord_core::recipes::group::MEMBER_MARKER`.
    #[doc(hidden)]
    pub use crate::layout::MEMBER as MEMBER_MARKER;
}

/// Old items of `coord_core::recipes::partitioner`.
pub mod partitioner {
    /// Old path: `coord_core::recipes::partitioner::LOCKS_DIR`.
    #[doc(hidden)]
    pub use crate::layout::PARTITIONER_LOCKS as LOCKS_DIR;
    /// Old path: `coord_core::recipes::partitioner::PARTY_DIR`.
    #[doc(hidden)]
    pub use crate::layout::PARTITIONER_PARTY as PARTY_DIR;
}

/// Old items of `coord_core::inspect`.
pub mod inspect {
    #[doc(hidden)]
    pub use crate::layout::{
        JOB_LAST, JOB_LOCK, JOB_STARTED, QUEUE_CLAIMS, QUEUE_ITEMS, SEMAPHORE_LEASES,
        SEMAPHORE_LOCKS, SIMPLE_LOCK_NODE,
    };
}

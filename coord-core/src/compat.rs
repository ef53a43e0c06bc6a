//! The public paths of coord-core before its layering, kept so that code
//! written against them still compiles. Nothing inside the crate uses this
//! module; it goes once every caller uses the new paths.
#![allow(unused_imports)]

/// Old modules and items at the crate root.
pub mod root {
    /// Old path: `coord_core::backoff`.
    #[doc(hidden)]
    pub mod backoff {
        pub use crate::backend::backoff::*;
    }
    /// Old path: `coord_core::lease`.
    #[doc(hidden)]
    pub mod lease {
        pub use crate::backend::lease::*;
    }
    /// Old path: `coord_core::redact`.
    #[doc(hidden)]
    pub mod redact {
        pub use crate::backend::redact::*;
    }
    /// Old path: `coord_core::tls`.
    #[doc(hidden)]
    pub mod tls {
        pub use crate::backend::tls::*;
    }
    /// Old path: `coord_core::primitive`.
    #[doc(hidden)]
    pub mod primitive {
        pub use crate::backend::node::*;
        pub use crate::backend::primitive::*;
        pub use crate::backend::watch::*;
    }
    /// Old path: `coord_core::traits`.
    #[doc(hidden)]
    pub mod traits {
        pub use crate::hold::{while_held, Hold, HoldContext};
        pub use crate::recipes::election::{LeaderElection, LeaderElectionExt};
        pub use crate::recipes::lock::{Lockable, LockableExt};
        pub use crate::recipes::queue::WorkQueue;
    }
    #[doc(hidden)]
    pub use crate::backend::lease::LeaseClock;
    #[doc(hidden)]
    pub use crate::backend::primitive::PrimitiveSession;
    #[doc(hidden)]
    pub use crate::backend::redact::redact_url;
    #[doc(hidden)]
    pub use crate::backend::tls::TlsMaterial;
}

impl crate::backend::tls::TlsOptions {
    /// Old name of [`validate`](Self::validate).
    ///
    /// # Errors
    /// As [`validate`](Self::validate).
    #[doc(hidden)]
    pub fn check(&self) -> crate::Result<()> {
        self.validate()
    }
}

/// Old modules under `coord_core::recipes`.
pub mod recipes {
    /// Old path: `coord_core::recipes::participants`.
    #[doc(hidden)]
    pub mod participants {
        pub use crate::hold::{Contender, ContenderState};
    }
    /// Old path: `coord_core::recipes::multi_lock`.
    #[doc(hidden)]
    pub mod multi_lock {
        pub use crate::recipes::lock::{MultiLock, MultiLockGuard};
    }
    /// Old path: `coord_core::recipes::reentrant`.
    #[doc(hidden)]
    pub mod reentrant {
        pub use crate::recipes::lock::ReentrantLock;
    }
    /// Old path: `coord_core::recipes::rwlock`.
    #[doc(hidden)]
    pub mod rwlock {
        pub use crate::recipes::lock::{ReadLock, RwLock, WriteLock};
    }
    /// Old path: `coord_core::recipes::semaphore`.
    #[doc(hidden)]
    pub mod semaphore {
        pub use crate::recipes::lock::{Lease, Semaphore, SemaphoreMutex};
    }
    /// Old path: `coord_core::recipes::simple_lock`.
    #[doc(hidden)]
    pub mod simple_lock {
        pub use crate::recipes::lock::SimpleLock;
    }
    /// Old path: `coord_core::recipes::HeldNode`.
    #[doc(hidden)]
    pub use crate::hold::HeldNode;
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

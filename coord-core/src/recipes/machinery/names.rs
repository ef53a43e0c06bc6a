//! Node names recipes make: Curator's protected form `_c_<uuid>-<kind>`, so
//! a node is recognisable as ours after a lost answer, and ZooKeeper peers
//! (Curator, kazoo) see the same names they make.

/// A fresh protected name prefix: `_c_<uuid>-<kind>`; a sequential create
/// appends the backend's suffix to it.
pub fn protected(kind: &str) -> String {
    format!("_c_{}-{kind}", uuid::Uuid::new_v4())
}

/// The marker of an exclusive lock's node (Curator `InterProcessMutex`).
pub const LOCK: &str = "lock-";
/// The marker of a read lock's node (Curator `InterProcessReadWriteLock`).
pub const READ: &str = "__READ__";
/// The marker of a write lock's node (Curator `InterProcessReadWriteLock`).
pub const WRITE: &str = "__WRIT__";
/// The marker of a semaphore lease's node (Curator `InterProcessSemaphoreV2`).
pub const LEASE: &str = "lease-";
/// The marker of an election offer's node (Curator `LeaderLatch`).
pub const LATCH: &str = "latch-";
/// The marker of kazoo's `ReadLock` nodes (`<hex>__rlock__<seq>`): readers
/// too, so a coord reader shares with them.
pub const KAZOO_READ: &str = "__rlock__";

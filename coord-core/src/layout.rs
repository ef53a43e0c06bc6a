//! Where the recipes put things on the server: every node-name marker,
//! every fixed child name, and the protected name form `_c_<uuid>-<kind>`
//! (Curator's), so a node is recognisable as ours after a lost answer and
//! ZooKeeper peers (Curator, kazoo) see the names they make. The recipes and
//! [`crate::inspect`] both read it from here.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// What every protected name begins with, before its uuid.
pub const PROTECTED: &str = "_c_";

/// A fresh protected name prefix: `_c_<uuid>-<kind>`; a sequential create
/// appends the backend's suffix to it.
pub fn protected(kind: &str) -> String {
    protected_with(fresh_uuid(), kind)
}

/// A fresh protection id (what [`protected`] puts in a name).
pub(crate) fn fresh_id() -> uuid::Uuid {
    fresh_uuid()
}

/// [`protected`] with a given id: `_c_<id>-<kind>`.
pub(crate) fn protected_with(id: uuid::Uuid, kind: &str) -> String {
    format!("{PROTECTED}{id}-{kind}")
}

/// Protection ids a recipe handle lends again: the id of a node whose
/// delete this handle saw answered. A backend that names a session's
/// sequential nodes itself (etcd: lease and counter) can then give the next
/// node the same name, so its index does not grow by a deleted key per
/// acquisition (see coord-etcd's `slots`). Safe for the lost-answer search
/// by id (ZooKeeper): an id is lent only once no node bearing it is left,
/// so the only node found with it is the new one.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ids(std::sync::Arc<std::sync::Mutex<Vec<uuid::Uuid>>>);

/// At most this many ids wait to be lent per handle.
const MAX_IDS: usize = 4;

impl Ids {
    /// An id to name a new node with: one given back, else a fresh one.
    pub(crate) fn take(&self) -> uuid::Uuid {
        self.0
            .lock()
            .ok()
            .and_then(|mut ids| ids.pop())
            .unwrap_or_else(fresh_uuid)
    }

    /// The node named with `id` is deleted (its delete was answered).
    pub(crate) fn give(&self, id: uuid::Uuid) {
        if let Ok(mut ids) = self.0.lock() {
            if ids.len() < MAX_IDS {
                ids.push(id);
            }
        }
    }
}

/// A version-4 UUID, unique in this process and random across processes,
/// without a `getrandom` system call each time.
// One `getrandom` per acquire was a twelfth of an in-memory lock cycle. A
// per-process random seed, taken once from the OS, is mixed with a counter
// through SplitMix64, whose finaliser is a bijection on `u64`, so two counts
// never give the same high half before the version bits are set; a
// collision needs both halves to meet as well, 2^-122 at worst.
fn fresh_uuid() -> uuid::Uuid {
    static SEED: OnceLock<(u64, u64)> = OnceLock::new();
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let (a, b) = *SEED.get_or_init(|| uuid::Uuid::new_v4().as_u64_pair());
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    let hi = splitmix64(a ^ n);
    let lo = splitmix64(b.wrapping_add(n));
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&hi.to_be_bytes());
    bytes[8..].copy_from_slice(&lo.to_be_bytes());
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

/// A random number (not for secrets): the same per-process seed and
/// counter as the names, so it costs no system call. Recipes use it to
/// spread contenders apart.
pub(crate) fn random_u64() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let seed = *SEED.get_or_init(|| uuid::Uuid::new_v4().as_u64_pair().0);
    splitmix64(seed ^ splitmix64(COUNT.fetch_add(1, Ordering::Relaxed)))
}

/// SplitMix64's finaliser (Steele, Lea, Flood 2014): a bijection on `u64`
/// that scatters consecutive inputs.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
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
/// The marker of a [`Group`](crate::recipes::Group) member's node.
pub const MEMBER: &str = "member-";
/// The marker of a [`Barrier`](crate::recipes::Barrier) participant's node
/// (the same text as [`MEMBER`]).
pub const BARRIER_MEMBER: &str = "member-";
/// The marker of a queue item's node (every queue of
/// [`crate::recipes`]), before its ordering key.
pub const ITEM: &str = "item-";

/// A [`Semaphore`](crate::recipes::Semaphore)'s lease nodes, under its path.
pub const SEMAPHORE_LEASES: &str = "leases";
/// A [`Semaphore`](crate::recipes::Semaphore)'s internal lock, under its path.
pub const SEMAPHORE_LOCKS: &str = "locks";
/// A [`Queue`](crate::recipes::Queue)'s items, under its path.
pub const QUEUE_ITEMS: &str = "items";
/// A [`ReliableQueue`](crate::recipes::ReliableQueue)'s claims (leases of
/// items), under its path.
pub const QUEUE_CLAIMS: &str = "claims";
/// A [`PeriodicJob`](crate::recipes::PeriodicJob)'s run lock, under its path.
pub const JOB_LOCK: &str = "lock";
/// A [`PeriodicJob`](crate::recipes::PeriodicJob)'s last recorded period.
pub const JOB_LAST: &str = "last";
/// A [`PeriodicJob`](crate::recipes::PeriodicJob)'s last started period
/// (`OnCrash::Skip`).
pub const JOB_STARTED: &str = "started";
/// A [`SimpleLock`](crate::recipes::SimpleLock)'s one node, under its path.
pub const SIMPLE_LOCK_NODE: &str = "lock";
/// A [`DoubleBarrier`](crate::recipes::DoubleBarrier)'s node that says
/// everyone is in, under its path.
pub const BARRIER_READY: &str = "ready";
/// A [`SetPartitioner`](crate::recipes::SetPartitioner)'s group of members,
/// under its path.
pub const PARTITIONER_PARTY: &str = "party";
/// A [`SetPartitioner`](crate::recipes::SetPartitioner)'s per-item locks,
/// under its path.
pub const PARTITIONER_LOCKS: &str = "locks";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_names_are_curators_form_and_never_repeat() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..100_000 {
            let name = protected(LOCK);
            let uuid = name
                .strip_prefix("_c_")
                .and_then(|r| r.strip_suffix("-lock-"))
                .expect("_c_<uuid>-lock-");
            let parsed = uuid::Uuid::parse_str(uuid).expect("a hyphenated UUID");
            assert_eq!(parsed.get_version_num(), 4);
            assert_eq!(parsed.hyphenated().to_string(), uuid);
            assert!(seen.insert(name), "a protected name repeated");
        }
    }
}

//! Locks: the [`Lockable`] trait every lock implements and the
//! [`LockGuard`] they return, beside the recipes — [`Lock`],
//! [`SimpleLock`], [`RwLock`], [`ReentrantLock`], [`MultiLock`],
//! [`Semaphore`] and [`SemaphoreMutex`].

pub(crate) mod exclusive;
pub(crate) mod guard;
pub(crate) mod lockable;
pub(crate) mod multi_lock;
pub(crate) mod reentrant;
pub(crate) mod rwlock;
pub(crate) mod semaphore;
pub(crate) mod simple_lock;

pub use exclusive::Lock;
pub use guard::LockGuard;
pub use lockable::{Lockable, LockableExt};
pub use multi_lock::{MultiLock, MultiLockGuard};
pub use reentrant::ReentrantLock;
pub use rwlock::{ReadLock, RwLock, WriteLock};
pub use semaphore::{Lease, Semaphore, SemaphoreMutex};
pub use simple_lock::SimpleLock;

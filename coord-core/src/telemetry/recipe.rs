//! Which recipe an operation belongs to.

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
    pub(crate) fn metered(self) -> bool {
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

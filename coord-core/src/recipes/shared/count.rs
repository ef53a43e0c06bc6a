//! [`SharedCount`]: Curator's `SharedCount`, an `i32` stored as 4
//! big-endian bytes, with an add retried on conflicts.

use super::codec::BigEndianI32;
use super::typed::{TypedSharedValue, Update};
use super::value::Versioned;
use super::watcher::SharedValueWatcher;
use crate::error::{Error, Result};
use crate::session::Session;

/// The watcher of a [`SharedCount`]: a [`SharedValueWatcher`] of `i32`s.
pub type SharedCountWatcher = SharedValueWatcher<i32, BigEndianI32>;

/// A shared `i32` in Curator `SharedCount`'s format, made by
/// [`SharedCount::new`]`(session, path)`: the node holds exactly 4 bytes,
/// the value big-endian (Java's `ByteBuffer.putInt`), so a Curator
/// `SharedCount` and coord share a count on ZooKeeper, each seeing the
/// other's writes and versions. Read it with [`SharedCount::get`] (Curator's
/// `getVersionedValue`), write it with [`SharedCount::set`] or
/// [`SharedCount::try_set`] (`trySetCount(VersionedValue, int)`), add to it
/// with [`SharedCount::add`] (retried on conflicts), follow it with
/// [`SharedCount::watch`].
///
/// A node holding anything but 4 bytes (kazoo's or coord's
/// [`Counter`](crate::recipes::Counter) decimal text, Curator's 8-byte
/// `DistributedAtomicLong`) is [`Error::InvalidArgument`], never a panic;
/// a `set` repairs it. For a decimal-text counter shared with kazoo, see
/// [`Counter`](crate::recipes::Counter).
///
/// ```
/// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
/// use coord_core::recipes::SharedCount;
/// let workers = SharedCount::new(&session, "/jobs/workers")?;
/// let added = workers.add(1).await?; // retried on conflicts, never lost
/// assert_eq!(added.post, added.pre + 1);
/// let now = workers.get().await?;
/// // Written only if nobody wrote since that read.
/// let swapped = workers.try_set(now.version, now.value * 2).await?;
/// # let _ = swapped;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SharedCount(TypedSharedValue<i32, BigEndianI32>);

impl SharedCount {
    /// The count at `path`, 0 in a node a read makes (see
    /// [`SharedCount::with_initial`]).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or `/`.
    pub fn new(session: &Session, path: &str) -> Result<Self> {
        Ok(SharedCount(TypedSharedValue::with_codec(
            session,
            path,
            &0,
            BigEndianI32,
        )?))
    }

    /// Make `initial` what a read writes into a missing node (Curator's
    /// `seedValue`). Every session should agree on it.
    pub fn with_initial(self, initial: i32) -> Self {
        let raw = self.0.raw().clone().with_initial(initial.to_be_bytes());
        // The same node and closed state, another initial value.
        SharedCount(TypedSharedValue::from_raw(raw, BigEndianI32))
    }

    /// The count's node.
    pub fn path(&self) -> &str {
        self.0.path()
    }

    /// See [`SharedValue::close`](super::SharedValue::close).
    pub fn close(&self) {
        self.0.close();
    }

    /// The count and its version; a missing node is made with the initial
    /// value.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the node does not hold exactly 4
    /// bytes, or after `close`; the session's end; backend errors. A lost
    /// connection is retried until the session ends.
    ///
    /// # Cancel safety
    /// Cancel safe: at most it made the node with the initial value.
    pub async fn get(&self) -> Result<Versioned<i32>> {
        self.0.get().await
    }

    /// Set the count, whatever it was (Curator's `setCount`; also over a
    /// node that does not hold 4 bytes); a missing node is made. Returns
    /// the new version.
    ///
    /// # Errors
    /// As [`SharedValue::set`](super::SharedValue::set).
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the count may or may not have been set.
    pub async fn set(&self, value: i32) -> Result<u64> {
        self.0.set(&value).await
    }

    /// Set the count only if the node is still at `version` (Curator's
    /// `trySetCount(previous, newCount)` with `previous.getVersion()`):
    /// `Ok(false)` when someone wrote since.
    ///
    /// # Errors
    /// As [`SharedValue::try_set`](super::SharedValue::try_set).
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the count may or may not have been set.
    pub async fn try_set(&self, version: u64, value: i32) -> Result<bool> {
        self.0.try_set(version, &value).await
    }

    /// Add `delta` (negative to subtract): read, write `pre + delta` if
    /// nobody wrote meanwhile, and on a conflict read again, until it
    /// lands ([`TypedSharedValue::update`]). Concurrent adds from any
    /// number of sessions (Curator's included: it writes with the version
    /// it read) all count, each once.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `pre + delta` overflows an `i32`
    /// (nothing is written; the count never wraps) or the node does not
    /// hold 4 bytes; otherwise as [`TypedSharedValue::update`].
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the delta may or may not have been added
    /// (once at most).
    pub async fn add(&self, delta: i32) -> Result<Update<i32>> {
        let node = self.path().to_owned();
        self.0
            .update(|pre| {
                pre.checked_add(delta).ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "adding {delta} to the shared count {node} ({pre}) overflows an i32"
                    ))
                })
            })
            .await
    }

    /// Follow the count; see [`SharedValueWatcher`].
    pub fn watch(&self) -> SharedCountWatcher {
        self.0.watch()
    }
}

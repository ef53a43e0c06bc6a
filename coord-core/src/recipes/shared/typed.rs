//! [`TypedSharedValue`]: a [`SharedValue`] holding a `T` through a
//! [`Codec`], with a read-modify-write retried on conflicts
//! ([`TypedSharedValue::update`]).

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use super::codec::{decode_at, encode_for, Codec};
use super::value::{SharedValue, Versioned};
use super::watcher::SharedValueWatcher;
use crate::backend::backoff::Backoff;
use crate::error::Result;
use crate::session::Session;

/// A shared value holding a `T`, stored as its codec's bytes (Curator's
/// `SharedValue` with a serializer; an etcd STM key holding JSON). Made by
/// `TypedSharedValue::new` (JSON through serde, with the `serde`
/// feature) or [`TypedSharedValue::with_codec`] (any [`Codec`]). The same
/// calls as [`SharedValue`], typed, plus [`TypedSharedValue::update`]:
/// read, compute, compare-and-set, retried until it lands.
///
/// Data the codec cannot decode (written by another client, say) is
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument), never a panic; a
/// `set` repairs it.
///
/// ```
/// # #[cfg(feature = "serde")]
/// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
/// use std::collections::BTreeMap;
/// use coord_core::recipes::TypedSharedValue;
/// let limits = TypedSharedValue::new(&session, "/config/limits", &BTreeMap::<String, u32>::new())?;
/// // Read, change, write back if nobody wrote meanwhile; retried until it lands.
/// let done = limits
///     .update(|now| {
///         let mut next = now.clone();
///         next.insert("rps".into(), 100);
///         Ok(next)
///     })
///     .await?;
/// assert_eq!(done.post["rps"], 100);
/// # Ok(()) }
/// ```
pub struct TypedSharedValue<T, C> {
    raw: SharedValue,
    codec: Arc<C>,
    value: PhantomData<fn() -> T>,
}

impl<T, C> Clone for TypedSharedValue<T, C> {
    fn clone(&self) -> Self {
        TypedSharedValue {
            raw: self.raw.clone(),
            codec: Arc::clone(&self.codec),
            value: PhantomData,
        }
    }
}

impl<T, C> fmt::Debug for TypedSharedValue<T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedSharedValue")
            .field("raw", &self.raw)
            .field("codec", &std::any::type_name::<C>())
            .finish()
    }
}

/// What a [`TypedSharedValue::update`] (or [`SharedCount::add`](super::SharedCount::add)) did: the
/// value it replaced and the value it wrote, by one compare-and-set.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Update<T> {
    /// The value just before the update.
    pub pre: T,
    /// The value the update wrote.
    pub post: T,
    /// The node's version after the update.
    pub version: u64,
}

impl<T, C: Codec<T>> TypedSharedValue<T, C> {
    /// The shared value at `path`, stored with `codec`; `initial` is what
    /// a read writes into a missing node (Curator's `seedValue`).
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a bad path or
    /// `/`; [`Error::InvalidArgument`](crate::Error::InvalidArgument) when
    /// the codec cannot encode `initial`.
    pub fn with_codec(session: &Session, path: &str, initial: &T, codec: C) -> Result<Self> {
        let raw = SharedValue::new(session, path)?;
        let initial = encode_for(&codec, path, initial)?;
        Ok(TypedSharedValue::from_raw(raw.with_initial(initial), codec))
    }

    /// `raw`'s node, stored with `codec` (its initial bytes already
    /// encoded).
    pub(super) fn from_raw(raw: SharedValue, codec: C) -> Self {
        TypedSharedValue {
            raw,
            codec: Arc::new(codec),
            value: PhantomData,
        }
    }

    /// The untyped value over the same node (same session, same closed
    /// state).
    pub fn raw(&self) -> &SharedValue {
        &self.raw
    }

    /// The value's node.
    pub fn path(&self) -> &str {
        self.raw.path()
    }

    /// See [`SharedValue::close`].
    pub fn close(&self) {
        self.raw.close();
    }

    fn decode(&self, v: Versioned<Vec<u8>>) -> Result<Versioned<T>> {
        Ok(Versioned {
            value: decode_at(&*self.codec, self.raw.path(), &v.value)?,
            version: v.version,
        })
    }

    fn encode(&self, value: &T) -> Result<Vec<u8>> {
        encode_for(&*self.codec, self.raw.path(), value)
    }

    /// The value and its version; a missing node is made with the initial
    /// value. See [`SharedValue::get`].
    ///
    /// # Errors
    /// As [`SharedValue::get`], and [`Error::InvalidArgument`](crate::Error::InvalidArgument)
    /// when the node holds data the codec cannot decode.
    ///
    /// # Cancel safety
    /// Cancel safe: at most it made the node with the initial value.
    pub async fn get(&self) -> Result<Versioned<T>> {
        let v = self.raw.get().await?;
        self.decode(v)
    }

    /// Set the value, whatever it was (also over data the codec cannot
    /// decode); a missing node is made. Returns the new version. See
    /// [`SharedValue::set`].
    ///
    /// # Errors
    /// As [`SharedValue::set`], and [`Error::InvalidArgument`](crate::Error::InvalidArgument)
    /// when the codec cannot encode `value` (nothing is written).
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the value may or may not have been set.
    pub async fn set(&self, value: &T) -> Result<u64> {
        let data = self.encode(value)?;
        self.raw.set(data).await
    }

    /// Set the value only if the node is still at `version`; `Ok(false)`
    /// when someone wrote since. See [`SharedValue::try_set`].
    ///
    /// # Errors
    /// As [`SharedValue::try_set`], and [`Error::InvalidArgument`](crate::Error::InvalidArgument)
    /// when the codec cannot encode `value` (nothing is written).
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the value may or may not have been set.
    pub async fn try_set(&self, version: u64, value: &T) -> Result<bool> {
        let data = self.encode(value)?;
        self.raw.try_set(version, data).await
    }

    /// Read the value, compute the next one with `f`, and write it only if
    /// nobody wrote meanwhile; on a conflict read again (with
    /// [`Backoff::RECIPES`]) and call `f` again, until it lands. Concurrent
    /// updates from any number of sessions are each applied exactly once,
    /// in some order: every outcome's `pre` is the `post` of the update
    /// before it. A missing node is made with the initial value first.
    ///
    /// # Errors
    /// Whatever `f` returns (nothing is written); those of
    /// [`TypedSharedValue::get`] and [`TypedSharedValue::set`]. A lost
    /// connection is retried while a read shows the write did not land;
    /// when the node moved meanwhile, [`Error::OutcomeUnknown`](crate::Error::OutcomeUnknown)
    /// rather than risk applying it twice.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the update may or may not have been
    /// applied (once at most).
    pub async fn update<F>(&self, mut f: F) -> Result<Update<T>>
    where
        F: FnMut(&T) -> Result<T>,
    {
        let mut attempt = 0;
        loop {
            let now = self.get().await?;
            let post = f(&now.value)?;
            let data = self.encode(&post)?;
            if let Some(version) = self.raw.try_write(now.version, &data).await? {
                return Ok(Update {
                    pre: now.value,
                    post,
                    version,
                });
            }
            Backoff::RECIPES.sleep(&mut attempt).await;
        }
    }

    /// Follow the value; see [`SharedValueWatcher`].
    pub fn watch(&self) -> SharedValueWatcher<T, C> {
        SharedValueWatcher::new(self.raw.clone(), Arc::clone(&self.codec))
    }
}

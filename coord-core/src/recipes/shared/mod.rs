//! A value many sessions share, with a version (Curator `SharedValue`,
//! `SharedCount`; etcd STM): [`SharedValue`] holds bytes,
//! [`TypedSharedValue`] a value through a [`Codec`] (JSON with the
//! `serde` feature), [`SharedCount`] Curator's 4-byte big-endian `i32`;
//! each follows its node with a [`SharedValueWatcher`].

mod codec;
mod count;
#[cfg(feature = "serde")]
mod json;
mod typed;
mod value;
mod watcher;

pub use codec::{BigEndianI32, Codec, CodecError, RawBytes};
pub use count::{SharedCount, SharedCountWatcher};
#[cfg(feature = "serde")]
pub use json::Json;
pub use typed::{TypedSharedValue, Update};
pub use value::{SharedValue, Versioned};
pub use watcher::SharedValueWatcher;

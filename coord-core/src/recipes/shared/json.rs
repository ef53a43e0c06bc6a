//! [`Json`]: the default codec of a [`TypedSharedValue`], serde_json
//! (feature `serde`).

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::codec::{Codec, CodecError};
use super::typed::TypedSharedValue;
use crate::session::Session;

/// JSON through serde_json: the value's `Serialize` output, compact, UTF-8
/// (what Jackson, Python's `json` or `etcdctl get` read as they are).
/// Feature `serde`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Json;

impl<T: Serialize + DeserializeOwned> Codec<T> for Json {
    fn encode(&self, value: &T) -> Result<Vec<u8>, CodecError> {
        Ok(serde_json::to_vec(value)?)
    }

    fn decode(&self, data: &[u8]) -> Result<T, CodecError> {
        Ok(serde_json::from_slice(data)?)
    }
}

impl<T: Serialize + DeserializeOwned> TypedSharedValue<T, Json> {
    /// The shared value at `path`, stored as JSON; `initial` is what a
    /// read writes into a missing node. Feature `serde`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a bad path or
    /// `/`; [`Error::InvalidArgument`](crate::Error::InvalidArgument) when
    /// `initial` cannot be encoded.
    pub fn new(session: &Session, path: &str, initial: &T) -> crate::error::Result<Self> {
        TypedSharedValue::with_codec(session, path, initial, Json)
    }
}

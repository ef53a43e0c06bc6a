//! How a typed shared value becomes the bytes of its node and back
//! ([`Codec`]), and the codecs every build has: [`RawBytes`] and Curator
//! `SharedCount`'s [`BigEndianI32`].

use crate::error::{Error, Result};

/// Why a [`Codec`] could not encode or decode a value; the recipes turn
/// it into [`Error::InvalidArgument`](crate::Error::InvalidArgument),
/// naming the node.
pub type CodecError = Box<dyn std::error::Error + Send + Sync>;

/// Turns a `T` into the bytes of a shared value's node and back, for
/// [`TypedSharedValue`](super::TypedSharedValue). Every session sharing a
/// node must use the same codec. Decoding must not panic on any bytes
/// (another client may have written anything there).
pub trait Codec<T>: Send + Sync + 'static {
    /// The bytes to store for `value`.
    ///
    /// # Errors
    /// When the value cannot be encoded (for JSON, say, a map whose keys
    /// are not strings).
    fn encode(&self, value: &T) -> Result<Vec<u8>, CodecError>;

    /// The value stored as `data`.
    ///
    /// # Errors
    /// When `data` is not a value of this codec.
    fn decode(&self, data: &[u8]) -> Result<T, CodecError>;
}

/// `codec`'s value in the data of the node at `node`, a typed error when
/// it is not one.
pub(super) fn decode_at<T, C: Codec<T> + ?Sized>(codec: &C, node: &str, data: &[u8]) -> Result<T> {
    codec.decode(data).map_err(|e| {
        Error::InvalidArgument(format!(
            "the shared value node {node} does not hold a value of its codec: {e}"
        ))
    })
}

/// `codec`'s bytes for `value`, to be written to the node at `node`, a
/// typed error when it has none.
pub(super) fn encode_for<T, C: Codec<T> + ?Sized>(
    codec: &C,
    node: &str,
    value: &T,
) -> Result<Vec<u8>> {
    codec.encode(value).map_err(|e| {
        Error::InvalidArgument(format!(
            "a value for the shared value node {node} cannot be encoded: {e}"
        ))
    })
}

/// The identity codec: the node's bytes as they are, the codec of
/// [`SharedValue`](super::SharedValue)'s watcher.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RawBytes;

impl Codec<Vec<u8>> for RawBytes {
    fn encode(&self, value: &Vec<u8>) -> Result<Vec<u8>, CodecError> {
        Ok(value.clone())
    }

    fn decode(&self, data: &[u8]) -> Result<Vec<u8>, CodecError> {
        Ok(data.to_vec())
    }
}

/// Curator `SharedCount`'s format: an `i32` as exactly 4 bytes, big-endian
/// (Java's `ByteBuffer.putInt`), so coord and Curator share a count node on
/// ZooKeeper. Any other length is refused (Curator would read the first 4
/// bytes of a longer node and fail on a shorter one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BigEndianI32;

impl Codec<i32> for BigEndianI32 {
    fn encode(&self, value: &i32) -> Result<Vec<u8>, CodecError> {
        Ok(value.to_be_bytes().to_vec())
    }

    fn decode(&self, data: &[u8]) -> Result<i32, CodecError> {
        let bytes: [u8; 4] = data.try_into().map_err(|_| {
            format!(
                "{} bytes, not the 4 of a big-endian i32 (Curator SharedCount)",
                data.len()
            )
        })?;
        Ok(i32::from_be_bytes(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_endian_i32_is_curators_format() {
        // Curator's SharedCount.toBytes: ByteBuffer.putInt, big-endian.
        assert_eq!(BigEndianI32.encode(&1).ok(), Some(vec![0, 0, 0, 1]));
        assert_eq!(
            BigEndianI32.encode(&-2).ok(),
            Some(vec![0xff, 0xff, 0xff, 0xfe])
        );
        assert_eq!(
            BigEndianI32.encode(&0x0102_0304).ok(),
            Some(vec![1, 2, 3, 4])
        );
        for v in [0, 1, -1, i32::MAX, i32::MIN, 123_456_789] {
            let bytes = BigEndianI32.encode(&v).expect("encode");
            assert_eq!(BigEndianI32.decode(&bytes).ok(), Some(v));
        }
        for bad in [&b""[..], b"\x00\x00\x01", b"\x00\x00\x00\x00\x01", b"12"] {
            assert!(BigEndianI32.decode(bad).is_err(), "{bad:?}");
        }
    }
}

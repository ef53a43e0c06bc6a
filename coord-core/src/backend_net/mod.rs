//! Network pieces every backend shares: one host parser ([`host`]) and,
//! behind the `tls-probe` feature, one TLS handshake probe ([`tls_probe`]).
//!
//! For backend authors, not for applications: the paths here may move.

pub mod host;
#[cfg(feature = "tls-probe")]
pub mod tls_probe;

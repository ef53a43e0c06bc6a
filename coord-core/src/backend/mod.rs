//! What only backend authors need (as opendal's `raw`): the primitive
//! contract a backend implements ([`PrimitiveSession`]), the lease clock a
//! backend keeps ([`lease`]), the retry pacing ([`Backoff`]), URL
//! redaction for logs ([`redact_url`]) and loaded TLS material
//! ([`TlsMaterial`]), one host parser ([`host`]) and, behind the `tls-probe`
//! feature, one TLS handshake probe (`tls_probe`) and one sniff of what
//! listens at an address after a failed connect (`sniff`) for every
//! backend.
//!
//! The node types of the contract ([`Stat`](crate::Stat),
//! [`CreateMode`](crate::CreateMode), [`Op`](crate::Op), …) are the users'
//! vocabulary too: they are public at the crate root.

pub(crate) mod backoff;
pub(crate) mod delete;
pub mod host;
pub mod lease;
pub(crate) mod node;
pub mod order;
pub(crate) mod primitive;
pub(crate) mod redact;
#[cfg(feature = "tls-probe")]
pub mod sniff;
pub(crate) mod tls;
#[cfg(feature = "tls-probe")]
pub mod tls_probe;
pub mod txn;
pub(crate) mod watch;

pub use backoff::Backoff;
pub use primitive::{read_then_delete, PrimitiveSession, SessionEnder};
pub use redact::redact_url;
pub use tls::TlsMaterial;

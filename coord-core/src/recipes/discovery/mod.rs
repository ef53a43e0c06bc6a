//! Service discovery as Curator x-discovery lays it out: an instance is
//! the ephemeral node `BASE/NAME/ID` holding its JSON, so Curator's
//! `ServiceDiscovery`, `ServiceCache` and `ServiceProvider` and coord's
//! see each other's instances.
//!
//! Files: `instance.rs` ([`ServiceInstance`], [`ServiceType`], the JSON),
//! `registration.rs` ([`ServiceRegistration`], registered on every session
//! of a [`Client`](crate::Client)), `query.rs` ([`ServiceDiscovery`], reads
//! on a session), `cache.rs` ([`ServiceCache`], [`ServiceCacheEvent`]),
//! `provider.rs` ([`ServiceProvider`], [`ProviderStrategy`],
//! [`DownInstancePolicy`]).

mod cache;
mod instance;
mod provider;
mod query;
mod registration;

pub use cache::{ServiceCache, ServiceCacheEvent};
pub use instance::{ServiceInstance, ServiceType};
pub use provider::{DownInstancePolicy, ProviderStrategy, ServiceProvider};
pub use query::ServiceDiscovery;
pub use registration::ServiceRegistration;

//! [`ServiceDiscovery`]: what is registered under a base path, read on a
//! [`Session`] (Curator's `queryForNames`, `queryForInstances`,
//! `queryForInstance`).

use std::collections::BTreeMap;

use super::instance::ServiceInstance;
use super::registration::instance_path;
use crate::error::Result;
use crate::machinery::retry::{backoff, get_many_retrying, list_retrying};
use crate::path;
use crate::session::Session;

/// The services registered under a base path, as Curator x-discovery lays
/// them out (`BASE/NAME/ID`, each instance's JSON in its node; see
/// [`ServiceRegistration`](super::ServiceRegistration)), read on one
/// [`Session`]: instances registered by coord or by Curator alike.
///
/// Reads retry through lost connections; the session's end is an error.
/// A node under a service that does not hold an instance's JSON is left
/// out (and logged), as something that is not an instance.
#[derive(Debug, Clone)]
pub struct ServiceDiscovery {
    session: Session,
    base: String,
}

impl ServiceDiscovery {
    /// The services under `base` (e.g. `/services`), read on `session`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a bad base
    /// path, before any I/O.
    pub fn new(session: &Session, base: &str) -> Result<ServiceDiscovery> {
        path::validate(base)?;
        Ok(ServiceDiscovery {
            session: session.clone(),
            base: base.to_owned(),
        })
    }

    /// The base path.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The session it reads on.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The names of the services under the base path (the base's
    /// children, in the backend's order), with or without instances now;
    /// none if the base path does not exist.
    ///
    /// # Errors
    /// The session's end; a backend error no retry mends.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn names(&self) -> Result<Vec<String>> {
        let children = list_retrying(&self.session, &self.base).await?;
        Ok(children.into_iter().map(|c| c.name).collect())
    }

    /// The instances of service `name` now, by id; none if it has none.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a name that is
    /// not one path segment, before any I/O; the session's end; a backend
    /// error no retry mends.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn instances(&self, name: &str) -> Result<Vec<ServiceInstance>> {
        let dir = path::join_segment(&self.base, name)?;
        let children = list_retrying(&self.session, &dir).await?;
        let paths: Vec<String> = children.iter().map(|c| path::join(&dir, &c.name)).collect();
        let nodes = get_many_retrying(&self.session, &paths).await?;
        // By id: the order of a listing is by sequence first.
        let mut found = BTreeMap::new();
        for ((child, node), at) in children.into_iter().zip(nodes).zip(&paths) {
            if let Some(instance) = node.and_then(|n| parse(at, &n.data)) {
                found.insert(child.name, instance);
            }
        }
        Ok(found.into_values().collect())
    }

    /// The instance `id` of service `name`, if registered now (and its
    /// node holds an instance).
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a name or id
    /// that is not one path segment, before any I/O; the session's end; a
    /// backend error no retry mends.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn instance(&self, name: &str, id: &str) -> Result<Option<ServiceInstance>> {
        let node = instance_path(&self.base, name, id)?;
        read_retrying(&self.session, &node).await
    }
}

/// The instance at `node`, retrying through lost connections: `None` when
/// there is no node, or it holds no instance (logged).
async fn read_retrying(session: &Session, node: &str) -> Result<Option<ServiceInstance>> {
    let mut attempt = 0;
    let data = loop {
        match session.get(node).await {
            Ok(Some(n)) => break n.data,
            Ok(None) => return Ok(None),
            Err(e) if e.is_retryable() => backoff(&mut attempt).await,
            Err(e) => return Err(e),
        }
    };
    Ok(parse(node, &data))
}

/// The instance in `data` (the node at `node`); `None`, logged, if it is
/// not one.
pub(super) fn parse(node: &str, data: &[u8]) -> Option<ServiceInstance> {
    match ServiceInstance::from_json(data) {
        Ok(i) => Some(i),
        Err(e) => {
            tracing::warn!(target: crate::telemetry::TARGET, path = node, error = %e, "not a service instance; left out");
            None
        }
    }
}

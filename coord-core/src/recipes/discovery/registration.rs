//! [`ServiceRegistration`]: an instance registered at `BASE/NAME/ID` on
//! every session of a [`Client`], built on
//! [`PersistentNode`](crate::recipes::PersistentNode).

use std::sync::Mutex;
use std::time::Duration;

use super::instance::{ServiceInstance, ServiceType};
use crate::client::Client;
use crate::error::{Error, Result};
use crate::path;
use crate::recipes::persistent::{PersistentMode, PersistentNode, Presence, PresenceWatcher};

/// The node of `instance` under `base`: `base/<name>/<id>`, both one
/// segment.
pub(super) fn instance_path(base: &str, name: &str, id: &str) -> Result<String> {
    path::validate(base)?;
    let dir = path::join_segment(base, name)?;
    path::join_segment(&dir, id)
}

/// One service instance registered as Curator x-discovery registers it
/// (`ServiceDiscovery.registerService`), kept on every session of a
/// [`Client`]: made by [`ServiceRegistration::register`].
///
/// # What it writes
/// The ephemeral node `BASE/NAME/ID` holding the instance's JSON
/// ([`ServiceInstance::to_json`], Curator 5.4's bytes), so Curator's
/// `ServiceDiscovery`, `ServiceCache` and `ServiceProvider` on the same
/// base path see it, and it sees theirs. Missing parents are made as the
/// backend makes them (on ZooKeeper container nodes, as Curator's
/// `creatingParentContainersIfNeeded`).
///
/// # Re-registration
/// It is a [`PersistentNode`] in
/// [`PersistentMode::Ephemeral`]: when its session ends (expired on the
/// server, given up at its lease deadline) the client opens the next
/// session and the instance is registered again there, with the same JSON
/// (its registration time unchanged, as Curator's re-registration); if
/// the last session's node is still on the server it waits for it to go,
/// so the id is never registered twice; a node deleted by someone while
/// the session lives is made again at once.
/// [`ServiceRegistration::watch`] reports [`Presence::Absent`] as soon as
/// the registration is lost, always before it is back.
///
/// # Ending
/// [`ServiceRegistration::unregister`] deletes the node and stops; a drop
/// does the same in the background; closing the client takes the node
/// with its session.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> coord_core::Result<()> {
/// use std::time::Duration;
/// use coord_core::client::ClientOptions;
/// use coord_core::recipes::{ServiceDiscovery, ServiceInstance, ServiceRegistration};
/// let store = coord_mem::MemStore::new();
/// let client = store.client(Duration::from_secs(10), ClientOptions::default());
/// let me = ServiceInstance::new("api", "10.0.0.7", 8080);
/// let reg = ServiceRegistration::register(&client, "/services", me.clone())?;
/// reg.wait_registered(Duration::from_secs(5)).await?;
/// let discovery = ServiceDiscovery::new(&store.open(), "/services")?;
/// assert_eq!(discovery.instances("api").await?, [me]);
/// reg.unregister().await?;
/// client.close().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping a registration unregisters the instance"]
#[derive(Debug)]
pub struct ServiceRegistration {
    node: PersistentNode,
    instance: Mutex<ServiceInstance>,
    path: String,
}

impl ServiceRegistration {
    /// Register `instance` under `base` (Curator's base path, e.g.
    /// `/services`) on every session of `client`. It returns at once; the
    /// node is made in the background
    /// ([`ServiceRegistration::wait_registered`] waits for it).
    ///
    /// # Errors
    /// Before any I/O: [`Error::InvalidPath`] for a bad base path, or a
    /// name or id that is not one path segment; [`Error::InvalidArgument`]
    /// for an instance whose service type is not
    /// [`ServiceType::Dynamic`] (coord registers ephemeral instances only),
    /// whose payload is a JSON array (Curator cannot read it, see
    /// [`ServiceInstance::payload`]) or whose JSON is over the data limit; [`Error::SessionClosed`] if
    /// the client is closed.
    ///
    /// # Panics
    /// Outside a tokio runtime: the registration is kept by a task on it.
    pub fn register(
        client: &Client,
        base: &str,
        instance: ServiceInstance,
    ) -> Result<ServiceRegistration> {
        if instance.service_type != ServiceType::Dynamic {
            return Err(Error::InvalidArgument(format!(
                "coord registers DYNAMIC (ephemeral) service instances only, not {}",
                instance.service_type.as_str()
            )));
        }
        instance.check_writable()?;
        let path = instance_path(base, &instance.name, &instance.id)?;
        let node =
            PersistentNode::start(client, &path, instance.to_json(), PersistentMode::Ephemeral)?;
        Ok(ServiceRegistration {
            node,
            instance: Mutex::new(instance),
            path,
        })
    }

    /// The instance as registered now (the last
    /// [`update`](ServiceRegistration::update)'s).
    pub fn instance(&self) -> ServiceInstance {
        self.instance
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The instance's node, `BASE/NAME/ID`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether the instance is registered now.
    pub fn is_registered(&self) -> bool {
        self.node.is_present()
    }

    /// Follow the registration: [`Presence::Present`] while registered,
    /// [`Presence::Absent`] while not; see [`PresenceWatcher`].
    pub fn watch(&self) -> PresenceWatcher {
        self.node.watch()
    }

    /// The registration now.
    pub fn presence(&self) -> Presence {
        self.node.presence()
    }

    /// Wait until registered, at most `timeout`.
    ///
    /// # Errors
    /// As [`PersistentNode::wait_present`]: [`Error::Timeout`] when not
    /// registered in time (it goes on trying), the failure that ended it,
    /// [`Error::SessionClosed`] once it is over.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn wait_registered(&self, timeout: Duration) -> Result<()> {
        self.node.wait_present(timeout).await.map(drop)
    }

    /// Change the registered instance (Curator's `updateService`): its
    /// JSON is written now if registered, and kept for every later
    /// re-registration. The name and id cannot change (register another
    /// instance for that).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another name, id or service type,
    /// an array payload, or JSON over the data limit, before anything
    /// changes; otherwise as
    /// [`PersistentNode::set_data`].
    ///
    /// # Cancel safety
    /// Cancel safe in effect: once polled, the instance is kept and the
    /// write goes on in the registration's task.
    pub async fn update(&self, instance: ServiceInstance) -> Result<()> {
        {
            let now = self.instance.lock().unwrap_or_else(|e| e.into_inner());
            if instance.name != now.name
                || instance.id != now.id
                || instance.service_type != now.service_type
            {
                return Err(Error::InvalidArgument(format!(
                    "an update of service instance {}/{} must keep its name, id and type",
                    now.name, now.id
                )));
            }
        }
        instance.check_writable()?;
        let json = instance.to_json();
        path::validate_data(&json)?;
        *self.instance.lock().unwrap_or_else(|e| e.into_inner()) = instance;
        self.node.set_data(json).await
    }

    /// Unregister: delete the node and stop re-registering (see
    /// [`PersistentNode::close`]).
    ///
    /// # Errors
    /// As [`PersistentNode::close`].
    ///
    /// # Cancel safety
    /// Cancel safe in effect: once called, the delete goes on in the task.
    pub async fn unregister(self) -> Result<()> {
        self.node.close().await
    }
}

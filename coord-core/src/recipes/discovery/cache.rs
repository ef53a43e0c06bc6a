//! [`ServiceCache`]: the instances of one service, kept current over a
//! [`ChildrenCache`], with events (Curator's `ServiceCache`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{ready, Context, Poll};

use futures_core::Stream;

use super::instance::ServiceInstance;
use super::query::parse;
use crate::client::Client;
use crate::error::Result;
use crate::path;
use crate::recipes::cache::{CacheEvent, ChildrenCache};
use crate::session::Session;

/// One change of a [`ServiceCache`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServiceCacheEvent {
    /// An instance was registered (or was there at the initial load).
    Added(ServiceInstance),
    /// A registered instance's JSON changed (or it was registered again).
    Updated(ServiceInstance),
    /// An instance went: unregistered, or gone with its session.
    Removed {
        /// Its id (its node's name).
        id: String,
    },
    /// The initial load (or a reload after a `Reset`) is complete.
    Initialized,
    /// The view is stale and a reload follows (a cache made by
    /// [`ServiceCache::follow`] whose session ended); the events up to the
    /// next `Initialized` are the difference from the view before.
    Reset,
}

/// The instances of one service, kept current, with an event stream
/// (Curator's `ServiceCache`): made by [`ServiceCache::start`] (on one
/// session) or [`ServiceCache::follow`] (on every session of a client).
///
/// It is a [`ChildrenCache`] of `BASE/NAME` whose nodes are read as
/// instances ([`ServiceInstance::from_json`]): every guarantee of the
/// caches holds (a change is never missed, a session's end of a following
/// cache is a [`ServiceCacheEvent::Reset`] then the difference). A node
/// that holds no instance is left out and logged: never reported, and an
/// instance whose node stops holding one is reported removed.
///
/// An [event stream](crate#event-streams) of `Result<ServiceCacheEvent>`,
/// with the caches' errors: the error that ends it is its last item.
/// [`instances`](ServiceCache::instances) reads the view the task keeps,
/// whether the events are read or not.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> coord_core::Result<()> {
/// use std::time::Duration;
/// use coord_core::client::ClientOptions;
/// use coord_core::recipes::{ServiceCache, ServiceCacheEvent, ServiceInstance, ServiceRegistration};
/// let store = coord_mem::MemStore::new();
/// let client = store.client(Duration::from_secs(10), ClientOptions::default());
/// let mut cache = ServiceCache::start(&store.open(), "/services", "api")?;
/// assert_eq!(cache.next().await.transpose()?, Some(ServiceCacheEvent::Initialized));
/// let me = ServiceInstance::new("api", "10.0.0.7", 8080);
/// let reg = ServiceRegistration::register(&client, "/services", me.clone())?;
/// assert_eq!(cache.next().await.transpose()?, Some(ServiceCacheEvent::Added(me.clone())));
/// assert_eq!(cache.instances(), [me]);
/// reg.unregister().await?;
/// client.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ServiceCache {
    children: ChildrenCache,
    dir: String,
    /// The ids reported present (last `Added`/`Updated`, no `Removed`).
    shown: BTreeSet<String>,
    /// Whether `Initialized` was returned.
    initialized: bool,
    /// The instances read so far, by node path, with the `(stamp,
    /// version)` of the node they were read from: a node that did not
    /// change is not parsed again (a provider reads the view every pick).
    parsed: Mutex<HashMap<String, Parsed>>,
}

/// A node's `(stamp, version)` and what it holds (`None`: no instance).
type Parsed = ((u64, u64), Option<ServiceInstance>);

impl ServiceCache {
    /// Start caching the instances of service `name` under `base` on
    /// `session`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a bad base or
    /// a name that is not one path segment, before any I/O.
    pub fn start(session: &Session, base: &str, name: &str) -> Result<ServiceCache> {
        let dir = service_dir(base, name)?;
        Ok(ServiceCache::over(
            ChildrenCache::start(session, &dir)?,
            dir,
        ))
    }

    /// Cache the instances of service `name` under `base` on every session
    /// of `client`, one after another (see
    /// [`TreeCache`](crate::recipes::TreeCache), "Following a client").
    /// Needs a tokio runtime.
    ///
    /// # Errors
    /// As [`ServiceCache::start`].
    pub fn follow(client: &Client, base: &str, name: &str) -> Result<ServiceCache> {
        let dir = service_dir(base, name)?;
        Ok(ServiceCache::over(
            ChildrenCache::follow(client, &dir)?,
            dir,
        ))
    }

    fn over(children: ChildrenCache, dir: String) -> ServiceCache {
        ServiceCache {
            children,
            dir,
            shown: BTreeSet::new(),
            initialized: false,
            parsed: Mutex::new(HashMap::new()),
        }
    }

    /// Whether [`next`](ServiceCache::next) has returned
    /// [`ServiceCacheEvent::Initialized`]: the view was loaded once.
    pub fn is_initialized(&self) -> bool {
        self.initialized
    }

    /// The service's node, `BASE/NAME`.
    pub fn path(&self) -> &str {
        &self.dir
    }

    /// The instances as last seen, by id.
    pub fn instances(&self) -> Vec<ServiceInstance> {
        self.by_id().into_values().collect()
    }

    /// The instances as last seen, keyed by id (their node's name).
    pub fn by_id(&self) -> BTreeMap<String, ServiceInstance> {
        let current = self.children.current();
        let mut parsed = self.parsed.lock().unwrap_or_else(|e| e.into_inner());
        parsed.retain(|p, _| current.contains_key(p));
        let mut out = BTreeMap::new();
        for (p, node) in current {
            let key = (node.stat.stamp, node.stat.version);
            let fresh = parsed.get(&p).is_none_or(|(seen, _)| *seen != key);
            if fresh {
                parsed.insert(p.clone(), (key, parse(&p, &node.data)));
            }
            if let Some((_, Some(i))) = parsed.get(&p) {
                out.insert(path::name(&p).to_owned(), i.clone());
            }
        }
        out
    }

    /// The next event; see [`ServiceCacheEvent`]. The same as
    /// [`StreamExt::next`](https://docs.rs/futures/latest/futures/stream/trait.StreamExt.html#method.next).
    ///
    /// # Errors
    /// As [`ChildrenCache::next`]: `Some(Err)` once, the error that ended
    /// the cache (the session's end for one made by `start`; the client's
    /// close for one made by `follow`; `SessionClosed` after
    /// [`close`](ServiceCache::close)).
    ///
    /// # Cancel safety
    /// Cancel safe: an event is only taken when it is returned.
    pub async fn next(&mut self) -> Option<Result<ServiceCacheEvent>> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }

    /// Stop the background task (see [`ChildrenCache::close`]); dropping
    /// the cache stops it too.
    pub fn close(&mut self) {
        self.children.close()
    }

    /// What a cache event means for the instances: `None` when nothing
    /// shown changes (a node that holds no instance).
    fn map(&mut self, ev: CacheEvent) -> Option<ServiceCacheEvent> {
        match ev {
            CacheEvent::Added { path, data } | CacheEvent::Updated { path, data } => {
                let id = path::name(&path).to_owned();
                match parse(&path, &data) {
                    Some(i) if self.shown.insert(id.clone()) => Some(ServiceCacheEvent::Added(i)),
                    Some(i) => Some(ServiceCacheEvent::Updated(i)),
                    None => self.removed(id),
                }
            }
            CacheEvent::Removed { path } => self.removed(path::name(&path).to_owned()),
            CacheEvent::Initialized => {
                self.initialized = true;
                Some(ServiceCacheEvent::Initialized)
            }
            CacheEvent::Reset => Some(ServiceCacheEvent::Reset),
        }
    }

    fn removed(&mut self, id: String) -> Option<ServiceCacheEvent> {
        self.shown
            .remove(&id)
            .then_some(ServiceCacheEvent::Removed { id })
    }
}

impl Stream for ServiceCache {
    type Item = Result<ServiceCacheEvent>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            match ready!(Pin::new(&mut this.children).poll_next(cx)) {
                None => return Poll::Ready(None),
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                Some(Ok(ev)) => {
                    if let Some(ev) = this.map(ev) {
                        return Poll::Ready(Some(Ok(ev)));
                    }
                }
            }
        }
    }
}

/// `base/name`, checked.
fn service_dir(base: &str, name: &str) -> Result<String> {
    path::validate(base)?;
    path::join_segment(base, name)
}

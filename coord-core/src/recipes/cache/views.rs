//! The three caches: [`NodeCache`], [`ChildrenCache`], [`TreeCache`].

use std::collections::BTreeMap;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;

use crate::backend::node::Node;
use crate::client::Client;
use crate::error::Result;
use crate::recipes::cache::event::{CacheEvent, Shape};
use crate::recipes::cache::mirror::{Mirror, Source};
use crate::session::Session;

macro_rules! cache_api {
    ($t:ident) => {
        impl $t {
            /// The next event; see [`CacheEvent`] and the
            /// [`TreeCache`] docs. `None` once the error that ended the
            /// cache was returned, until [`restart`](Self::restart). The
            /// same as
            /// [`StreamExt::next`](https://docs.rs/futures/latest/futures/stream/trait.StreamExt.html#method.next).
            ///
            /// # Errors
            /// `Some(Err)`, once: the error that ended the cache: the
            /// session's end
            /// ([`Error::SessionExpired`](crate::Error::SessionExpired), [`Error::SessionClosed`](crate::Error::SessionClosed)) or a
            /// backend error; `SessionClosed` after [`close`](Self::close).
            /// A cache made by `follow` does not end with a session: it
            /// reports [`CacheEvent::Reset`] and goes on on the client's
            /// next session; it ends with `SessionClosed` once the client
            /// is closed, or with an error that is not a session's end (an
            /// ACL refusing a read).
            ///
            /// # Cancel safety
            /// Cancel safe: an event is only taken when it is returned.
            pub async fn next(&mut self) -> Option<Result<CacheEvent>> {
                std::future::poll_fn(|cx| self.0.poll_next(cx)).await
            }

            /// Reload on `session` (a new one, after the old session
            /// ended): emits [`CacheEvent::Reset`], the difference from the
            /// last view, then [`CacheEvent::Initialized`]. Undelivered
            /// events of the old run are dropped. A cache made by `follow`
            /// stops following its client and runs on `session` from then
            /// on, as one made by `start`.
            pub fn restart(&mut self, session: &Session) {
                self.0.restart(session)
            }

            /// Stop the background task; [`next`](Self::next) then
            /// returns [`Error::SessionClosed`](crate::Error::SessionClosed) (or the session's end
            /// error), then `None`. Dropping the cache stops it too.
            pub fn close(&mut self) {
                self.0.close()
            }
        }

        impl Stream for $t {
            type Item = Result<CacheEvent>;

            fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
                self.get_mut().0.poll_next(cx)
            }
        }
    };
}

/// A [`NodeCache`]: the node only.
const NODE: Shape = Shape {
    max_depth: 0,
    include_root: true,
};

/// A [`ChildrenCache`]: one level, without the directory itself.
const CHILDREN: Shape = Shape {
    max_depth: 1,
    include_root: false,
};

/// A [`TreeCache`] down to `max_depth`.
fn tree(max_depth: usize) -> Shape {
    Shape {
        max_depth,
        include_root: true,
    }
}

/// One node's data, kept current; see [`TreeCache`].
///
/// An [event stream](crate#event-streams) of `Result<CacheEvent>`: an
/// error ends it, until [`restart`](Self::restart); made by
/// [`follow`](Self::follow), it follows a client's sessions instead.
///
/// ```
/// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
/// use coord_core::recipes::{CacheEvent, NodeCache};
/// let mut cache = NodeCache::start(&session, "/config/flags")?;
/// while let Some(ev) = cache.next().await {
///     if ev? == CacheEvent::Initialized { break; }
/// }
/// let now = cache.current(); // None when there is no node
/// # let _ = now; Ok(()) }
/// ```
#[derive(Debug)]
pub struct NodeCache(Mirror);

impl NodeCache {
    /// Start caching the node at `node` (which need not exist yet).
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a bad path, before any I/O.
    pub fn start(session: &Session, node: &str) -> Result<Self> {
        Ok(NodeCache(Mirror::start(
            Source::Session(session.clone()),
            node,
            NODE,
        )?))
    }

    /// Cache the node at `node` on every session of `client`, one after
    /// another: a session's end is reported as [`CacheEvent::Reset`], and
    /// the next session's reload reports only the difference (see
    /// [`TreeCache`], "Following a client"). Needs a tokio runtime.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a bad path, before any I/O.
    pub fn follow(client: &Client, node: &str) -> Result<Self> {
        Ok(NodeCache(Mirror::start(
            Source::Client(client.clone()),
            node,
            NODE,
        )?))
    }

    /// The node as last seen; `None` when it does not exist.
    pub fn current(&self) -> Option<Node> {
        self.0.current().remove(&self.0.root)
    }
}
cache_api!(NodeCache);

/// The children of a directory, with their data; see
/// [`TreeCache`].
///
/// An [event stream](crate#event-streams) of `Result<CacheEvent>`: an
/// error ends it, until [`restart`](Self::restart); made by
/// [`follow`](Self::follow), it follows a client's sessions instead.
#[derive(Debug)]
pub struct ChildrenCache(Mirror);

impl ChildrenCache {
    /// Start caching the children of `dir` (which need not exist yet).
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a bad path, before any I/O.
    pub fn start(session: &Session, dir: &str) -> Result<Self> {
        Ok(ChildrenCache(Mirror::start(
            Source::Session(session.clone()),
            dir,
            CHILDREN,
        )?))
    }

    /// Cache the children of `dir` on every session of `client`, one
    /// after another (see [`TreeCache`], "Following a client"). Needs a
    /// tokio runtime.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a bad path, before any I/O.
    pub fn follow(client: &Client, dir: &str) -> Result<Self> {
        Ok(ChildrenCache(Mirror::start(
            Source::Client(client.clone()),
            dir,
            CHILDREN,
        )?))
    }

    /// The children as last seen, by full path.
    pub fn current(&self) -> BTreeMap<String, Node> {
        self.0.current()
    }
}
cache_api!(ChildrenCache);

/// A node and its descendants down to `max_depth` levels below it, made by
/// [`TreeCache::start`]`(session, root, max_depth)` (on one session) or
/// [`TreeCache::follow`]`(client, root, max_depth)` (on every session of a
/// client, see "Following a client" below).
///
/// An [event stream](crate#event-streams) of `Result<CacheEvent>`: an
/// error ends it, until [`restart`](Self::restart); a session's end does
/// not end one made by `follow`.
///
/// How the three caches work (Curator's `CuratorCache`, `NodeCache`,
/// `PathChildrenCache`, `TreeCache`; kazoo's `DataWatch`, `ChildrenWatch`,
/// `TreeCache`), each started by its `start`:
///
/// * [`NodeCache`] — one node's data and version
///   ([`NodeCache::start`]`(session, node)`).
/// * [`ChildrenCache`] — the children of a directory, with their data
///   (`PathChildrenCache` with `cacheData`); the directory itself is not
///   reported ([`ChildrenCache::start`]`(session, dir)`).
/// * [`TreeCache`] — a node and its descendants down to `max_depth` levels
///   below it.
///
/// All three are one engine: a background task keeps a map path → [`Node`](crate::Node)
/// and re-arms a one-shot watch with every read ([`Session::get_watch`](crate::Session::get_watch) for
/// data, [`Session::children_watch`](crate::Session::children_watch) for children), so the read that arms
/// a watch returns the state the watch is relative to: a change that races
/// any read, the initial ones included, is never missed. A node whose
/// `(stamp, version)` did not change is not reported again. A node that
/// does not exist (the root of the cache) is waited for by watching the
/// children of its nearest existing ancestor — no polling anywhere.
///
/// Events ([`CacheEvent`]): `Added` for every node present at the initial
/// load, then `Initialized` once, then `Added` / `Updated` / `Removed` as the
/// server changes. Removing a node reports its cached descendants removed
/// too. A lost connection is retried until the session ends.
///
/// ## When the session ends
/// A coord [`Session`](crate::Session) never reconnects into a new session. When it ends
/// (or a watch fails with a non-retryable error) the task stops and
/// [`next`](TreeCache::next) returns that error once (after the
/// events already queued), then `None`; [`current`](TreeCache::current) keeps the last
/// view. [`restart`](TreeCache::restart) on a new session reloads and
/// emits the difference from that last view (`Added` / `Updated` /
/// `Removed`), then `Initialized` again; [`CacheEvent::Reset`] is emitted
/// first, so a consumer can tell a rebuild from ordinary changes.
///
/// ## Following a client
/// A cache made by `follow` ([`TreeCache::follow`]`(client, root,
/// max_depth)`, [`ChildrenCache::follow`], [`NodeCache::follow`]) runs on
/// every session of a [`Client`], one after another, and does that
/// `restart` itself: when the live session ends (expired on the server,
/// given up at its lease deadline), [`next`](TreeCache::next) yields
/// [`CacheEvent::Reset`] — the view is stale from then on, and
/// [`current`](TreeCache::current) keeps the last one — and once the
/// client has opened its next session, the cache reloads there and emits
/// only the difference from that last view (`Added` / `Updated` /
/// `Removed`: what changed on the server meanwhile, nothing else), then
/// `Initialized`. So `next` never ends because a session did: the events
/// up to each `Initialized` take [`current`](TreeCache::current) to the
/// server's state, as of that reload. A session that ends during a reload
/// adds no second `Reset`: the next reload still reports the difference
/// from the last view shown. The stream ends (`SessionClosed`, then
/// `None`) only when the client is closed ([`Client::close`]) or the
/// cache is ([`close`](TreeCache::close), or dropped), or with an error
/// that is not a session's end (an ACL refusing a read). The cache holds
/// a handle on the client, so the client stays open while the cache runs.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> coord_core::Result<()> {
/// use std::time::Duration;
/// use coord_core::recipes::{CacheEvent, ChildrenCache};
/// use coord_core::{ClientOptions, CreateMode};
/// let store = coord_mem::MemStore::new();
/// let client = store.client(Duration::from_secs(10), ClientOptions::default());
/// let writer = store.open();
/// writer.create("/svc/a", b"1", CreateMode::Persistent).await?;
/// let mut cache = ChildrenCache::follow(&client, "/svc")?;
/// while cache.next().await.transpose()? != Some(CacheEvent::Initialized) {}
/// store.expire(&client.session().await?.id()); // the server ends the session
/// assert_eq!(cache.next().await.transpose()?, Some(CacheEvent::Reset));
/// // Reloaded on the client's next session: nothing changed meanwhile, so
/// // no event but Initialized.
/// assert_eq!(cache.next().await.transpose()?, Some(CacheEvent::Initialized));
/// assert_eq!(cache.current()["/svc/a"].data, b"1");
/// writer.set("/svc/a", b"2", None).await?; // and it goes on
/// let a = CacheEvent::Updated { path: "/svc/a".into(), data: b"2".to_vec() };
/// assert_eq!(cache.next().await.transpose()?, Some(a));
/// client.close().await?;
/// assert!(matches!(cache.next().await, Some(Err(coord_core::Error::SessionClosed))));
/// # Ok(()) }
/// ```
///
/// ## Tree watches
/// Where the backend offers [`Session::watch_tree`](crate::Session::watch_tree) (ZooKeeper ≥ 3.6's
/// persistent recursive watches, etcd's prefix watches, mem), a
/// [`ChildrenCache`] or [`TreeCache`] uses one of those instead of a
/// one-shot watch per node: the watch is opened before the initial read (so
/// a change racing the read is reported), reads arm nothing, a changed path
/// is read again, and [`TreeChange::Resync`](crate::TreeChange::Resync) (changes may have been
/// missed: ZooKeeper after a lost connection) reloads the whole subtree and
/// reports the difference. Where it is `NotSupported` (Redis; ZooKeeper
/// before 3.6) the one-shot engine above runs, with the same events. A
/// [`NodeCache`] always uses its one data watch.
///
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> coord_core::Result<()> {
/// # let store = coord_mem::MemStore::new();
/// # let session = store.open();
/// use coord_core::recipes::{CacheEvent, TreeCache};
/// use coord_core::CreateMode;
/// session.create("/app/a/b", b"x", CreateMode::Persistent).await?;
/// let mut tree = TreeCache::start(&session, "/app", 8)?;
/// while let Some(ev) = tree.next().await {
///     if ev? == CacheEvent::Initialized { break; }
/// }
/// assert_eq!(tree.current()["/app/a/b"].data, b"x");
/// session.set("/app/a/b", b"y", None).await?;
/// assert_eq!(
///     tree.next().await.transpose()?,
///     Some(CacheEvent::Updated { path: "/app/a/b".into(), data: b"y".to_vec() })
/// );
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct TreeCache(Mirror);

impl TreeCache {
    /// Start caching `root` and its descendants down to `max_depth` levels
    /// below it (0: the root only).
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a bad path, before any I/O.
    pub fn start(session: &Session, root: &str, max_depth: usize) -> Result<Self> {
        Ok(TreeCache(Mirror::start(
            Source::Session(session.clone()),
            root,
            tree(max_depth),
        )?))
    }

    /// Cache `root` and its descendants down to `max_depth` levels below
    /// it on every session of `client`, one after another (see
    /// "Following a client" above). Needs a tokio runtime.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a bad path, before any I/O.
    pub fn follow(client: &Client, root: &str, max_depth: usize) -> Result<Self> {
        Ok(TreeCache(Mirror::start(
            Source::Client(client.clone()),
            root,
            tree(max_depth),
        )?))
    }

    /// Every cached node as last seen, by full path.
    pub fn current(&self) -> BTreeMap<String, Node> {
        self.0.current()
    }
}
cache_api!(TreeCache);

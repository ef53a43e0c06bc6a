//! The three caches: [`NodeCache`], [`ChildrenCache`], [`TreeCache`].

use std::collections::BTreeMap;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;

use crate::backend::node::Node;
use crate::error::Result;
use crate::recipes::cache::event::{CacheEvent, Shape};
use crate::recipes::cache::mirror::Mirror;
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
            ///
            /// # Cancel safety
            /// Cancel safe: an event is only taken when it is returned.
            pub async fn next(&mut self) -> Option<Result<CacheEvent>> {
                std::future::poll_fn(|cx| self.0.poll_next(cx)).await
            }

            /// Reload on `session` (a new one, after the old session
            /// ended): emits [`CacheEvent::Reset`], the difference from the
            /// last view, then [`CacheEvent::Initialized`]. Undelivered
            /// events of the old run are dropped.
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

/// One node's data, kept current; see [`TreeCache`].
///
/// An [event stream](crate#event-streams) of `Result<CacheEvent>`: an
/// error ends it, until [`restart`](Self::restart).
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
        let shape = Shape {
            max_depth: 0,
            include_root: true,
        };
        Ok(NodeCache(Mirror::start(session, node, shape)?))
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
/// error ends it, until [`restart`](Self::restart).
#[derive(Debug)]
pub struct ChildrenCache(Mirror);

impl ChildrenCache {
    /// Start caching the children of `dir` (which need not exist yet).
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a bad path, before any I/O.
    pub fn start(session: &Session, dir: &str) -> Result<Self> {
        let shape = Shape {
            max_depth: 1,
            include_root: false,
        };
        Ok(ChildrenCache(Mirror::start(session, dir, shape)?))
    }

    /// The children as last seen, by full path.
    pub fn current(&self) -> BTreeMap<String, Node> {
        self.0.current()
    }
}
cache_api!(ChildrenCache);

/// A node and its descendants down to `max_depth` levels below it, made by
/// [`TreeCache::start`]`(session, root, max_depth)`.
///
/// An [event stream](crate#event-streams) of `Result<CacheEvent>`: an
/// error ends it, until [`restart`](Self::restart).
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
        let shape = Shape {
            max_depth,
            include_root: true,
        };
        Ok(TreeCache(Mirror::start(session, root, shape)?))
    }

    /// Every cached node as last seen, by full path.
    pub fn current(&self) -> BTreeMap<String, Node> {
        self.0.current()
    }
}
cache_api!(TreeCache);

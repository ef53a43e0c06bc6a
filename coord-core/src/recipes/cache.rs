//! Local, always-converging views of a node, a directory or a subtree, with
//! an event stream (Curator's `CuratorCache` / `NodeCache` /
//! `PathChildrenCache` / `TreeCache`; kazoo's `DataWatch`, `ChildrenWatch`,
//! `TreeCache`).
//!
//! * [`NodeCache`] — one node's data and version.
//! * [`ChildrenCache`] — the children of a directory, with their data
//!   (`PathChildrenCache` with `cacheData`); the directory itself is not
//!   reported.
//! * [`TreeCache`] — a node and its descendants down to `max_depth` levels
//!   below it.
//!
//! All three are one engine: a background task keeps a map path → [`Node`]
//! and re-arms a one-shot watch with every read ([`Session::get_watch`] for
//! data, [`Session::children_watch`] for children), so the read that arms
//! a watch returns the state the watch is relative to: a change that races
//! any read, the initial ones included, is never missed. A node whose
//! `(stamp, version)` did not change is not reported again. A node that
//! does not exist (the root of the cache) is waited for by watching the
//! children of its nearest existing ancestor — no polling anywhere.
//!
//! Events ([`CacheEvent`]): `Added` for every node present at the initial
//! load, then `Initialized` once, then `Added` / `Updated` / `Removed` as the
//! server changes. Removing a node reports its cached descendants removed
//! too. A lost connection is retried until the session ends.
//!
//! ## When the session ends
//! A coord [`Session`] never reconnects into a new session. When it ends
//! (or a watch fails with a non-retryable error) the task stops and
//! [`next_event`](TreeCache::next_event) returns that error (after the
//! events already queued); [`current`](TreeCache::current) keeps the last
//! view. [`restart`](TreeCache::restart) on a new session reloads and
//! emits the difference from that last view (`Added` / `Updated` /
//! `Removed`), then `Initialized` again; [`CacheEvent::Reset`] is emitted
//! first, so a consumer can tell a rebuild from ordinary changes.
//!
//! ## Tree watches
//! Where the backend offers [`Session::watch_tree`] (ZooKeeper ≥ 3.6's
//! persistent recursive watches, etcd's prefix watches, mem), a
//! [`ChildrenCache`] or [`TreeCache`] uses one of those instead of a
//! one-shot watch per node: the watch is opened before the initial read (so
//! a change racing the read is reported), reads arm nothing, a changed path
//! is read again, and [`TreeChange::Resync`] (changes may have been
//! missed: ZooKeeper after a lost connection) reloads the whole subtree and
//! reports the difference. Where it is `NotSupported` (Redis; ZooKeeper
//! before 3.6) the one-shot engine above runs, with the same events. A
//! [`NodeCache`] always uses its one data watch.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::backend::node::Node;
use crate::backend::watch::{TreeChange, TreeWatch};
use crate::error::{Error, Result};
use crate::machinery::retry::pause;
use crate::path;
use crate::session::Session;

/// One change reported by a cache.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheEvent {
    /// A node appeared (or was present at the initial load).
    Added {
        /// Its path.
        path: String,
        /// Its data.
        data: Vec<u8>,
    },
    /// A node's data changed (or it was deleted and made again).
    Updated {
        /// Its path.
        path: String,
        /// Its new data.
        data: Vec<u8>,
    },
    /// A node went.
    Removed {
        /// Its path.
        path: String,
    },
    /// The initial load (or a reload after [`TreeCache::restart`]) is
    /// complete: [`TreeCache::current`] is the server's state as of then.
    Initialized,
    /// A [`TreeCache::restart`] began: the events up to the next
    /// `Initialized` are the difference from the view before it.
    Reset,
}

type Shared = Arc<Mutex<HashMap<String, Node>>>;

#[derive(Clone, Copy, Debug)]
struct Shape {
    /// Levels below the root that are cached.
    max_depth: usize,
    /// Whether the root itself is reported.
    include_root: bool,
}

/// The engine behind the three caches.
#[derive(Debug)]
struct Engine {
    root: String,
    shape: Shape,
    view: Shared,
    events: mpsc::UnboundedReceiver<Result<CacheEvent>>,
    session: Session,
    ended: bool,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Engine {
    fn start(session: &Session, root: &str, shape: Shape) -> Result<Engine> {
        path::validate(root)?;
        let view: Shared = Arc::default();
        let (tx, rx) = mpsc::unbounded_channel();
        let task = spawn(
            session.clone(),
            root.to_string(),
            shape,
            view.clone(),
            tx,
            false,
        );
        Ok(Engine {
            root: root.to_string(),
            shape,
            view,
            events: rx,
            session: session.clone(),
            ended: false,
            task: Some(task),
        })
    }

    fn restart(&mut self, session: &Session) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
        let (tx, rx) = mpsc::unbounded_channel();
        self.events = rx;
        self.ended = false;
        self.session = session.clone();
        self.task = Some(spawn(
            session.clone(),
            self.root.clone(),
            self.shape,
            self.view.clone(),
            tx,
            true,
        ));
    }

    async fn next_event(&mut self) -> Result<CacheEvent> {
        if self.ended {
            return Err(self.end_error());
        }
        match self.events.recv().await {
            Some(Ok(ev)) => Ok(ev),
            Some(Err(e)) => {
                self.ended = true;
                Err(e)
            }
            None => {
                self.ended = true;
                Err(self.end_error())
            }
        }
    }

    fn end_error(&self) -> Error {
        self.session
            .state()
            .end_error()
            .unwrap_or(Error::SessionClosed)
    }

    fn current(&self) -> BTreeMap<String, Node> {
        let view = self.view.lock().unwrap_or_else(|p| p.into_inner());
        view.iter()
            .filter(|(p, _)| self.shape.include_root || **p != self.root)
            .map(|(p, n)| (p.clone(), n.clone()))
            .collect()
    }

    fn close(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
        self.ended = true;
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Data,
    Children,
    /// The root is missing: wait for a change of an ancestor's children.
    Ancestor,
}

fn spawn(
    session: Session,
    root: String,
    shape: Shape,
    view: Shared,
    tx: mpsc::UnboundedSender<Result<CacheEvent>>,
    reset: bool,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut w = Worker {
            session,
            root,
            shape,
            map: HashMap::new(),
            watches: JoinSet::new(),
            tree: None,
            out: Vec::new(),
        };
        if let Err(e) = w.run(&view, &tx, reset).await {
            let _ = tx.send(Err(e));
        }
    })
}

struct Worker {
    session: Session,
    root: String,
    shape: Shape,
    map: HashMap<String, Node>,
    watches: JoinSet<(String, Kind, Result<()>)>,
    /// The tree watch over the root, where the backend has one: then reads
    /// arm no one-shot watches.
    tree: Option<TreeWatch>,
    /// Events of the current step, published with the view.
    out: Vec<CacheEvent>,
}

fn changed(a: &Node, b: &Node) -> bool {
    a.stat.stamp != b.stat.stamp || a.stat.version != b.stat.version || a.data != b.data
}

impl Worker {
    fn depth(&self, p: &str) -> usize {
        if p == self.root {
            return 0;
        }
        let rest = if self.root == "/" {
            &p[1..]
        } else {
            &p[self.root.len() + 1..]
        };
        rest.split('/').count()
    }

    fn reported(&self, p: &str) -> bool {
        self.shape.include_root || p != self.root
    }

    fn wanted(&self, p: &str) -> bool {
        p == self.root
            || (self.map.contains_key(path::parent(p)) && self.depth(p) <= self.shape.max_depth)
    }

    async fn run(
        &mut self,
        view: &Shared,
        tx: &mpsc::UnboundedSender<Result<CacheEvent>>,
        reset: bool,
    ) -> Result<()> {
        // A tree watch, where there is one, is armed before the initial
        // load reads anything.
        if self.shape.max_depth > 0 {
            self.tree = self.open_tree().await?;
        }
        // Initial load: arm every watch, then diff against the old view.
        self.refresh(self.root.clone(), Kind::Data).await?;
        let old = std::mem::take(&mut *view.lock().unwrap_or_else(|p| p.into_inner()));
        let mut events = Vec::new();
        if reset {
            events.push(CacheEvent::Reset);
        }
        events.extend(self.diff(&old));
        events.push(CacheEvent::Initialized);
        self.out.clear();
        self.publish(view, tx, events);
        if self.tree.is_some() {
            return self.follow_tree(view, tx).await;
        }
        loop {
            let Some(Ok((p, kind, fired))) = self.watches.join_next().await else {
                // Nothing watched can only mean the task has nothing to do;
                // wait for the session's end.
                return Err(self.session.ended().await);
            };
            match fired {
                Ok(()) => {}
                Err(e) if e.is_retryable() => {}
                Err(e) => return Err(e),
            }
            let kind = if kind == Kind::Ancestor {
                Kind::Data
            } else {
                kind
            };
            let p = if kind == Kind::Data && !self.map.contains_key(&self.root) && p != self.root {
                self.root.clone()
            } else {
                p
            };
            self.refresh(p, kind).await?;
            let events = std::mem::take(&mut self.out);
            self.publish(view, tx, events);
        }
    }

    /// The events that turn `old` into the current map: `Added` and
    /// `Updated` by path, then `Removed` deepest first.
    fn diff(&self, old: &HashMap<String, Node>) -> Vec<CacheEvent> {
        let mut events = Vec::new();
        let mut paths: Vec<&String> = self.map.keys().collect();
        paths.sort();
        for p in paths {
            if !self.reported(p) {
                continue;
            }
            let n = &self.map[p];
            match old.get(p) {
                None => events.push(CacheEvent::Added {
                    path: p.clone(),
                    data: n.data.clone(),
                }),
                Some(o) if changed(o, n) => events.push(CacheEvent::Updated {
                    path: p.clone(),
                    data: n.data.clone(),
                }),
                Some(_) => {}
            }
        }
        let mut gone: Vec<&String> = old.keys().filter(|p| !self.map.contains_key(*p)).collect();
        gone.sort();
        for p in gone.into_iter().rev() {
            if self.reported(p) {
                events.push(CacheEvent::Removed { path: p.clone() });
            }
        }
        events
    }

    /// Open the tree watch over the root, retrying a lost connection;
    /// `None` where the backend has none.
    async fn open_tree(&self) -> Result<Option<TreeWatch>> {
        match self
            .retry(&self.root, |s, p| async move { s.watch_tree(&p).await })
            .await
        {
            Ok(w) => Ok(Some(w)),
            Err(Error::NotSupported { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether a change at `p` reported by the tree watch is one this
    /// cache keeps.
    fn in_scope(&self, p: &str) -> bool {
        path::is_within(p, &self.root) && self.depth(p) <= self.shape.max_depth
    }

    /// Keep the view current from the tree watch until the session ends.
    async fn follow_tree(
        &mut self,
        view: &Shared,
        tx: &mpsc::UnboundedSender<Result<CacheEvent>>,
    ) -> Result<()> {
        loop {
            let Some(tree) = self.tree.as_mut() else {
                return Err(Error::SessionClosed);
            };
            match tree.next().await {
                Ok(TreeChange::Changed(p)) => {
                    if !self.in_scope(&p) {
                        continue;
                    }
                    self.refresh(p, Kind::Data).await?;
                }
                Ok(_) => self.reload().await?,
                // The watch is over but the session is not: open another
                // and read everything again, as a change may have come
                // between the two.
                Err(e) if e.is_retryable() => {
                    self.tree = None;
                    self.tree = self.open_tree().await?;
                    if self.tree.is_none() {
                        return Err(e);
                    }
                    self.reload().await?;
                }
                Err(e) => return Err(e),
            }
            let events = std::mem::take(&mut self.out);
            if !events.is_empty() {
                self.publish(view, tx, events);
            }
        }
    }

    /// Read the whole subtree again and queue the difference.
    async fn reload(&mut self) -> Result<()> {
        let old = std::mem::take(&mut self.map);
        self.refresh(self.root.clone(), Kind::Data).await?;
        self.out = self.diff(&old);
        Ok(())
    }

    fn publish(
        &self,
        view: &Shared,
        tx: &mpsc::UnboundedSender<Result<CacheEvent>>,
        events: Vec<CacheEvent>,
    ) {
        *view.lock().unwrap_or_else(|p| p.into_inner()) = self.map.clone();
        for e in events {
            let _ = tx.send(Ok(e));
        }
    }

    /// Re-read `start` (its data or its children) and everything that
    /// reveals, arming watches with every read.
    async fn refresh(&mut self, start: String, kind: Kind) -> Result<()> {
        let mut work = vec![(start, kind)];
        while let Some((p, kind)) = work.pop() {
            match kind {
                Kind::Data | Kind::Ancestor => {
                    if !self.wanted(&p) {
                        continue;
                    }
                    match self.read(&p).await? {
                        Some(node) => {
                            let report = self.reported(&p);
                            match self.map.get(&p) {
                                None => {
                                    if report {
                                        self.out.push(CacheEvent::Added {
                                            path: p.clone(),
                                            data: node.data.clone(),
                                        });
                                    }
                                    self.map.insert(p.clone(), node);
                                    if self.depth(&p) < self.shape.max_depth {
                                        work.push((p, Kind::Children));
                                    }
                                }
                                Some(old) if changed(old, &node) => {
                                    if report {
                                        self.out.push(CacheEvent::Updated {
                                            path: p.clone(),
                                            data: node.data.clone(),
                                        });
                                    }
                                    let recreated = old.stat.stamp != node.stat.stamp;
                                    self.map.insert(p.clone(), node);
                                    if recreated && self.depth(&p) < self.shape.max_depth {
                                        work.push((p, Kind::Children));
                                    }
                                }
                                Some(_) => {}
                            }
                        }
                        None => {
                            self.remove_subtree(&p);
                            if p == self.root && self.tree.is_none() {
                                self.watch_ancestor().await?;
                            }
                        }
                    }
                }
                Kind::Children => {
                    if !self.map.contains_key(&p) || self.depth(&p) >= self.shape.max_depth {
                        continue;
                    }
                    let kids = match self.list(&p).await {
                        Ok(x) => x,
                        // Gone: its data watch reports the removal.
                        Err(Error::NotFound { .. }) => continue,
                        Err(e) => return Err(e),
                    };
                    let names: Vec<String> = kids.iter().map(|c| path::join(&p, &c.name)).collect();
                    let stale: Vec<String> = self
                        .map
                        .keys()
                        .filter(|k| *k != &self.root && path::parent(k) == p && !names.contains(k))
                        .cloned()
                        .collect();
                    for k in stale {
                        self.remove_subtree(&k);
                    }
                    for k in names {
                        if !self.map.contains_key(&k) {
                            work.push((k, Kind::Data));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Read a node: plainly under a tree watch, otherwise arming a data
    /// watch with the read.
    async fn read(&mut self, p: &str) -> Result<Option<Node>> {
        if self.tree.is_some() {
            return self.retry(p, |s, p| async move { s.get(&p).await }).await;
        }
        let found = self
            .retry(p, |s, p| async move { s.get_watch(&p).await })
            .await?;
        Ok(found.map(|(node, w)| {
            let q = p.to_string();
            self.watches.spawn(async move { (q, Kind::Data, w.await) });
            node
        }))
    }

    /// List a directory's children: plainly under a tree watch, otherwise
    /// arming a children watch with the listing.
    async fn list(&mut self, p: &str) -> Result<Vec<crate::backend::node::Child>> {
        if self.tree.is_some() {
            return self
                .retry(p, |s, p| async move { s.children(&p).await })
                .await;
        }
        let (kids, w) = self
            .retry(p, |s, p| async move { s.children_watch(&p).await })
            .await?;
        let q = p.to_string();
        self.watches
            .spawn(async move { (q, Kind::Children, w.await) });
        Ok(kids)
    }

    fn remove_subtree(&mut self, p: &str) {
        let prefix = format!("{p}/");
        let mut gone: Vec<String> = self
            .map
            .keys()
            .filter(|k| *k == p || k.starts_with(&prefix) || (p == "/" && *k != "/"))
            .cloned()
            .collect();
        gone.sort();
        for k in gone.into_iter().rev() {
            self.map.remove(&k);
            if self.reported(&k) {
                self.out.push(CacheEvent::Removed { path: k });
            }
        }
    }

    /// The root is missing: watch the children of its nearest existing
    /// ancestor, so its creation (or an ancestor's) wakes the task.
    async fn watch_ancestor(&mut self) -> Result<()> {
        let mut dir = path::parent(&self.root).to_string();
        loop {
            match self
                .retry(&dir, |s, d| async move { s.children_watch(&d).await })
                .await
            {
                Ok((kids, w)) => {
                    let root = self.root.clone();
                    self.watches
                        .spawn(async move { (root, Kind::Ancestor, w.await) });
                    // Made between our read and the watch: read it now.
                    let next = if dir == "/" {
                        self.root[1..].split('/').next().unwrap_or("")
                    } else {
                        self.root[dir.len() + 1..].split('/').next().unwrap_or("")
                    };
                    if kids.iter().any(|c| c.name == next) {
                        let q = self.root.clone();
                        self.watches
                            .spawn(async move { (q, Kind::Ancestor, Ok(())) });
                    }
                    return Ok(());
                }
                Err(Error::NotFound { .. }) if dir != "/" => dir = path::parent(&dir).to_string(),
                Err(e) => return Err(e),
            }
        }
    }

    /// Run a read, retrying retryable errors until the session ends.
    async fn retry<T, F, Fut>(&self, p: &str, f: F) -> Result<T>
    where
        F: Fn(Session, String) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let mut attempt = 0;
        loop {
            match f(self.session.clone(), p.to_string()).await {
                Err(e) if e.is_retryable() => pause(&self.session, &mut attempt).await,
                other => return other,
            }
        }
    }
}

macro_rules! cache_api {
    ($t:ident) => {
        impl $t {
            /// The next event; see [`CacheEvent`] and the
            /// [module docs](self).
            ///
            /// # Errors
            /// The error that ended the cache: the session's end
            /// ([`Error::SessionExpired`], [`Error::SessionClosed`]) or a
            /// backend error; `SessionClosed` after [`close`](Self::close).
            /// Once ended, every call returns that error until
            /// [`restart`](Self::restart).
            ///
            /// # Cancel safety
            /// Cancel safe: an event is only taken when it is returned.
            pub async fn next_event(&mut self) -> Result<CacheEvent> {
                self.0.next_event().await
            }

            /// Reload on `session` (a new one, after the old session
            /// ended): emits [`CacheEvent::Reset`], the difference from the
            /// last view, then [`CacheEvent::Initialized`]. Undelivered
            /// events of the old run are dropped.
            pub fn restart(&mut self, session: &Session) {
                self.0.restart(session)
            }

            /// Stop the background task; [`next_event`](Self::next_event)
            /// then returns [`Error::SessionClosed`]. Dropping the cache
            /// stops it too.
            pub fn close(&mut self) {
                self.0.close()
            }
        }
    };
}

/// One node's data, kept current; see the [module docs](self).
///
/// ```
/// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
/// use coord_core::recipes::{CacheEvent, NodeCache};
/// let mut cache = NodeCache::start(&session, "/config/flags")?;
/// while let Ok(ev) = cache.next_event().await {
///     if ev == CacheEvent::Initialized { break; }
/// }
/// let now = cache.current(); // None when there is no node
/// # let _ = now; Ok(()) }
/// ```
#[derive(Debug)]
pub struct NodeCache(Engine);

impl NodeCache {
    /// Start caching the node at `node` (which need not exist yet).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path, before any I/O.
    pub fn start(session: &Session, node: &str) -> Result<Self> {
        let shape = Shape {
            max_depth: 0,
            include_root: true,
        };
        Ok(NodeCache(Engine::start(session, node, shape)?))
    }

    /// The node as last seen; `None` when it does not exist.
    pub fn current(&self) -> Option<Node> {
        self.0.current().remove(&self.0.root)
    }
}
cache_api!(NodeCache);

/// The children of a directory, with their data; see the
/// [module docs](self).
#[derive(Debug)]
pub struct ChildrenCache(Engine);

impl ChildrenCache {
    /// Start caching the children of `dir` (which need not exist yet).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path, before any I/O.
    pub fn start(session: &Session, dir: &str) -> Result<Self> {
        let shape = Shape {
            max_depth: 1,
            include_root: false,
        };
        Ok(ChildrenCache(Engine::start(session, dir, shape)?))
    }

    /// The children as last seen, by full path.
    pub fn current(&self) -> BTreeMap<String, Node> {
        self.0.current()
    }
}
cache_api!(ChildrenCache);

/// A node and its descendants down to `max_depth` levels below it; see the
/// [module docs](self).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> coord_core::Result<()> {
/// # let store = coord_mem::MemStore::new();
/// # let session = store.open();
/// use coord_core::recipes::{CacheEvent, TreeCache};
/// use coord_core::CreateMode;
/// session.create("/app/a/b", b"x", CreateMode::Persistent).await?;
/// let mut tree = TreeCache::start(&session, "/app", 8)?;
/// loop {
///     if tree.next_event().await? == CacheEvent::Initialized { break; }
/// }
/// assert_eq!(tree.current()["/app/a/b"].data, b"x");
/// session.set("/app/a/b", b"y", None).await?;
/// assert_eq!(
///     tree.next_event().await?,
///     CacheEvent::Updated { path: "/app/a/b".into(), data: b"y".to_vec() }
/// );
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct TreeCache(Engine);

impl TreeCache {
    /// Start caching `root` and its descendants down to `max_depth` levels
    /// below it (0: the root only).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path, before any I/O.
    pub fn start(session: &Session, root: &str, max_depth: usize) -> Result<Self> {
        let shape = Shape {
            max_depth,
            include_root: true,
        };
        Ok(TreeCache(Engine::start(session, root, shape)?))
    }

    /// Every cached node as last seen, by full path.
    pub fn current(&self) -> BTreeMap<String, Node> {
        self.0.current()
    }
}
cache_api!(TreeCache);

//! The task behind a cache: reads, re-arms watches, and reports what
//! changed.

use std::collections::HashMap;
use std::future::Future;

use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::backend::node::Node;
use crate::backend::watch::{TreeChange, TreeWatch};
use crate::error::{Error, Result};
use crate::machinery::retry::pause;
use crate::path;
use crate::recipes::cache::event::{CacheEvent, Kind, Shape, Shared};
use crate::session::Session;

pub(crate) fn spawn(
    session: Session,
    root: String,
    shape: Shape,
    view: Shared,
    tx: mpsc::UnboundedSender<Result<CacheEvent>>,
    reset: bool,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut loaded = false;
        let e = mirror(session, root, shape, &view, &tx, reset, &mut loaded).await;
        let _ = tx.send(Err(e));
    })
}

/// Load `root` on `session`, report the difference from `view` (after
/// [`CacheEvent::Reset`] with `reset`) and `Initialized`, then keep `view`
/// current until the session ends: returns the error that ended it.
/// `loaded` is set once the initial load was published.
pub(crate) async fn mirror(
    session: Session,
    root: String,
    shape: Shape,
    view: &Shared,
    tx: &mpsc::UnboundedSender<Result<CacheEvent>>,
    reset: bool,
    loaded: &mut bool,
) -> Error {
    let mut w = Worker {
        session,
        root,
        shape,
        map: HashMap::new(),
        watches: JoinSet::new(),
        tree: None,
        out: Vec::new(),
    };
    match w.run(view, tx, reset, loaded).await {
        Err(e) => e,
        // `run` only ends with an error.
        Ok(()) => Error::SessionClosed,
    }
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
        loaded: &mut bool,
    ) -> Result<()> {
        // A tree watch, where there is one, is armed before the initial
        // load reads anything.
        if self.shape.max_depth > 0 {
            self.tree = self.open_tree().await?;
        }
        // Initial load: arm every watch, then diff against the old view.
        self.refresh(self.root.clone(), Kind::Data).await?;
        // A copy, not a take: the view stays whole for readers until
        // `publish` replaces it (a load is rare: the first, and a reset).
        let old = view.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut events = Vec::new();
        if reset {
            events.push(CacheEvent::Reset);
        }
        events.extend(self.diff(&old));
        events.push(CacheEvent::Initialized);
        self.out.clear();
        self.publish(view, tx, events);
        *loaded = true;
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
            // The watch ends with an error, so `None` comes only after one.
            match tree.next().await.unwrap_or(Err(Error::SessionClosed)) {
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

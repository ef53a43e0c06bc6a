//! Keeping a session's one-shot data watches and its tree watches off the
//! same path on the server.
//!
//! ZooKeeper before 3.9 keeps one watch mode per path and connection
//! (ZOOKEEPER-4466): a `getData` watch set on the path of a persistent
//! recursive watch turns it into a one-shot watch, gone at its first event;
//! and zookeeper-client, dropping an unfired data watch there, removes the
//! persistent one with it. So, per session:
//!
//! * while a tree watch covers exactly `path`, a data watch on `path`
//!   (`get_watch`, `watch_gone`) sets nothing on the server: it listens to
//!   the tree watch's signal for that path (a change of the node, or a
//!   `Resync`) and reads again;
//! * while a data watch on `path` is set on the server, `watch_tree(path)`
//!   is refused with `NotSupported` (callers such as the caches then use
//!   one-shot watches).
//!
//! Paths below a tree watch's root are separate entries on the server and
//! need none of this.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

/// The session's registry; see the module docs.
#[derive(Debug, Default)]
pub(crate) struct PathWatches {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Tree watches by root: how many, and their signal.
    trees: HashMap<String, (usize, broadcast::Sender<bool>)>,
    /// Data watches set on the server and not yet done, by path.
    data: HashMap<String, usize>,
}

/// What a data watch on a path must do.
pub(crate) enum DataWatch {
    /// Listen to the tree watch on the path (subscribed before the read):
    /// `true` when the path changed, `false` when it may have; closed when
    /// the last tree watch on the path is gone.
    FromTree(broadcast::Receiver<bool>),
    /// Set one on the server; the guard keeps it counted.
    OnServer(DataGuard),
}

impl PathWatches {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Before a data watch on `path`: take the tree's signal, or count a
    /// server-side watch (until the guard is dropped).
    pub(crate) fn data_watch(self: &Arc<Self>, path: &str) -> DataWatch {
        let mut inner = self.lock();
        if let Some((_, signal)) = inner.trees.get(path) {
            return DataWatch::FromTree(signal.subscribe());
        }
        *inner.data.entry(path.to_owned()).or_default() += 1;
        DataWatch::OnServer(DataGuard {
            registry: Arc::clone(self),
            path: path.to_owned(),
        })
    }

    /// Before a tree watch on `root`: `None` while a data watch on `root`
    /// is set on the server; otherwise the tree's registration (until
    /// dropped).
    pub(crate) fn tree_watch(self: &Arc<Self>, root: &str) -> Option<TreeGuard> {
        let mut inner = self.lock();
        if inner.data.get(root).is_some_and(|n| *n > 0) {
            return None;
        }
        let entry = inner
            .trees
            .entry(root.to_owned())
            .or_insert_with(|| (0, broadcast::channel(16).0));
        entry.0 += 1;
        Some(TreeGuard {
            registry: Arc::clone(self),
            root: root.to_owned(),
            signal: entry.1.clone(),
        })
    }
}

/// A server-side data watch, counted until dropped.
pub(crate) struct DataGuard {
    registry: Arc<PathWatches>,
    path: String,
}

impl Drop for DataGuard {
    fn drop(&mut self) {
        let mut inner = self.registry.lock();
        if let Some(n) = inner.data.get_mut(&self.path) {
            *n -= 1;
            if *n == 0 {
                inner.data.remove(&self.path);
            }
        }
    }
}

/// A tree watch's registration: signals the data watches on its root.
pub(crate) struct TreeGuard {
    registry: Arc<PathWatches>,
    root: String,
    signal: broadcast::Sender<bool>,
}

impl TreeGuard {
    /// Wake the data watches listening on the root: `true` when the root
    /// changed, `false` when it may have (a `Resync`: read again).
    pub(crate) fn signal(&self, changed: bool) {
        let _ = self.signal.send(changed);
    }
}

impl Drop for TreeGuard {
    fn drop(&mut self) {
        let mut inner = self.registry.lock();
        if let Some(entry) = inner.trees.get_mut(&self.root) {
            entry.0 -= 1;
            if entry.0 == 0 {
                // Dropping the sender wakes the listeners (as a change:
                // they read again and set a watch of their own).
                inner.trees.remove(&self.root);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_data_watch_keeps_tree_watches_off_its_path_until_dropped() {
        let r = Arc::new(PathWatches::default());
        let DataWatch::OnServer(guard) = r.data_watch("/a") else {
            panic!("no tree on /a: a server-side watch");
        };
        assert!(r.tree_watch("/a").is_none());
        assert!(r.tree_watch("/a/b").is_some(), "another path is free");
        drop(guard);
        assert!(r.tree_watch("/a").is_some());
    }

    #[test]
    fn a_data_watch_on_a_tree_root_listens_to_the_tree() {
        let r = Arc::new(PathWatches::default());
        let tree = r.tree_watch("/a").expect("free");
        let DataWatch::FromTree(mut rx) = r.data_watch("/a") else {
            panic!("a tree on /a: served from it");
        };
        tree.signal(true);
        assert_eq!(rx.try_recv().ok(), Some(true));
        let second = r.tree_watch("/a").expect("two trees may share a root");
        drop(tree);
        assert!(matches!(r.data_watch("/a"), DataWatch::FromTree(_)));
        drop(second);
        assert!(matches!(
            rx.try_recv(),
            Err(broadcast::error::TryRecvError::Closed)
        ));
        assert!(matches!(r.data_watch("/a"), DataWatch::OnServer(_)));
    }
}

//! Watches on ZooKeeper: one-shot data and children watches, deletion
//! watches that re-arm themselves, and tree watches (persistent recursive,
//! added again after every reconnection).

use std::sync::Arc;
use std::time::Duration;

use coord_core::backend::Backoff;
use coord_core::{Child, Error, Node, Result, SessionState, TreeChange, TreeWatch, Watch};
use tokio::sync::{broadcast, mpsc};
use zookeeper_client as zk;

use crate::error::{is_connection_error, map_error, Target};
use crate::handle::{client_in, ClientSlot, Handle};
use crate::names;
use crate::paths::{DataGuard, DataWatch, TreeGuard};
use crate::shared::Shared;
use crate::stat::stat_of;
use crate::BACKEND;

/// Resolve a one-shot watch: `Ok` on any node event, the session's end
/// otherwise.
fn watch_of(shared: Arc<Shared>, watcher: zk::OneshotWatcher, guard: Option<DataGuard>) -> Watch {
    Watch::new(async move {
        let event = watcher.changed().await;
        drop(guard);
        session_event_result(&shared, &event)
    })
}

/// A data watch served by the session's tree watch on the same path (see
/// [`crate::paths`]): fires at the tree's signal (a change of the path, or
/// a `Resync`, or the last tree watch there gone: read again), or with the
/// session's end.
fn tree_signal_watch(shared: Arc<Shared>, mut signal: broadcast::Receiver<bool>) -> Watch {
    let mut state = shared.subscribe();
    Watch::new(async move {
        tokio::select! {
            biased;
            end = state.wait_for(|s| s.is_terminal()) => {
                let end = end.map_or(SessionState::Closed, |s| *s);
                Err(end.end_error().unwrap_or(Error::SessionClosed))
            }
            _ = signal.recv() => Ok(()),
        }
    })
}

/// How a deletion watch is armed.
enum Armed {
    /// Listening to the session's tree watch on the path.
    Tree(broadcast::Receiver<bool>),
    /// A `getData` watch on the server, counted by its guard.
    Server(zk::OneshotWatcher, DataGuard),
}

/// The czxid of the node at `path` now (`None`: no node), read plainly,
/// retrying connection losses while the session lives.
async fn czxid_now(shared: &Shared, slot: &ClientSlot, path: &str) -> Result<Option<i64>> {
    let retry = Backoff::new(Duration::from_millis(100), Duration::from_millis(100));
    let mut attempt = 0;
    loop {
        let client = client_in(slot).map_err(|_| shared.ended_error())?;
        match client.get_data(path).await {
            Ok((_, stat)) => return Ok(Some(stat.czxid)),
            Err(zk::Error::NoNode) => return Ok(None),
            Err(e) if is_connection_error(&e) && !shared.get().is_terminal() => {
                retry.sleep(&mut attempt).await;
            }
            Err(e) => return Err(map_error(e, Target::path(path))),
        }
    }
}

/// Arm a deletion watch on the node at `path` made with `stamp` again;
/// `None` once it is gone (or another node is there).
async fn arm_gone(
    shared: &Shared,
    slot: &ClientSlot,
    path: &str,
    stamp: i64,
) -> Result<Option<Armed>> {
    match shared.paths.data_watch(path) {
        DataWatch::FromTree(signal) => {
            // Subscribed first: a delete after this read is signalled.
            Ok(
                (czxid_now(shared, slot, path).await? == Some(stamp))
                    .then_some(Armed::Tree(signal)),
            )
        }
        DataWatch::OnServer(guard) => {
            // Through a connection loss, a fixed step (first = cap),
            // jittered: the client queues the request until it is back.
            let retry = Backoff::new(Duration::from_millis(100), Duration::from_millis(100));
            let mut attempt = 0;
            loop {
                let client = client_in(slot).map_err(|_| shared.ended_error())?;
                match client.get_and_watch_data(path).await {
                    Ok((_, stat, w)) if stat.czxid == stamp => {
                        return Ok(Some(Armed::Server(w, guard)))
                    }
                    Ok(_) | Err(zk::Error::NoNode) => return Ok(None),
                    Err(e) if is_connection_error(&e) && !shared.get().is_terminal() => {
                        retry.sleep(&mut attempt).await;
                    }
                    Err(e) => return Err(map_error(e, Target::path(path))),
                }
            }
        }
    }
}

/// Resolve once the node at `path` made with `stamp` is gone, from a watch
/// armed by [`arm_gone`].
async fn until_gone(
    shared: Arc<Shared>,
    slot: ClientSlot,
    path: String,
    stamp: i64,
    mut armed: Armed,
) -> Result<()> {
    let mut state = shared.subscribe();
    loop {
        let again = match armed {
            Armed::Server(watcher, guard) => {
                let event = watcher.changed().await;
                drop(guard);
                session_event_result(&shared, &event)?;
                if event.event_type == zk::EventType::NodeDeleted {
                    return Ok(());
                }
                // A data change: the node is still there; watch again.
                arm_gone(&shared, &slot, &path, stamp).await?
            }
            Armed::Tree(mut signal) => {
                let heard = tokio::select! {
                    biased;
                    end = state.wait_for(|s| s.is_terminal()) => {
                        let end = end.map_or(SessionState::Closed, |s| *s);
                        return Err(end.end_error().unwrap_or(Error::SessionClosed));
                    }
                    heard = signal.recv() => heard,
                };
                match heard {
                    // The last tree watch there is gone: arm another way.
                    Err(broadcast::error::RecvError::Closed) => {
                        arm_gone(&shared, &slot, &path, stamp).await?
                    }
                    // Changed, or may have: read again.
                    _ => (czxid_now(&shared, &slot, &path).await? == Some(stamp))
                        .then_some(Armed::Tree(signal)),
                }
            }
        };
        match again {
            Some(a) => armed = a,
            None => return Ok(()),
        }
    }
}

/// Feed a tree watch from `watcher` (see [`Handle::watch_tree`]) until
/// the session ends or the receiver is gone.
async fn feed_tree(
    shared: Arc<Shared>,
    slot: ClientSlot,
    root: String,
    (mut watcher, registration): (zk::PersistentWatcher, TreeGuard),
    tx: mpsc::UnboundedSender<Result<TreeChange>>,
) {
    let mut state = shared.subscribe();
    let ended = |state: SessionState| state.end_error().unwrap_or(Error::SessionClosed);
    let mut disconnected = false;
    loop {
        let event = tokio::select! {
            biased;
            end = state.wait_for(|s| s.is_terminal()) => {
                let end = end.map_or(SessionState::Closed, |s| *s);
                let _ = tx.send(Err(ended(end)));
                return;
            }
            event = watcher.changed() => event,
        };
        let change = if event.event_type == zk::EventType::Session {
            let s = event.session_state;
            if s.is_terminated() {
                // The watcher must not be read after a final state.
                let end = shared.map_state(s);
                shared.set(end);
                let _ = tx.send(Err(end.end_error().unwrap_or(Error::SessionExpired)));
                return;
            }
            match s {
                zk::SessionState::Disconnected => {
                    disconnected = true;
                    continue;
                }
                _ if disconnected => {
                    disconnected = false;
                    match rewatch(&shared, &slot, &root).await {
                        Ok(w) => watcher = w,
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            return;
                        }
                    }
                    TreeChange::Resync
                }
                _ => continue,
            }
        } else {
            TreeChange::Changed(event.path)
        };
        match &change {
            TreeChange::Changed(p) if *p == root => registration.signal(true),
            TreeChange::Changed(_) => {}
            _ => registration.signal(false),
        }
        if tx.send(Ok(change)).is_err() {
            return;
        }
    }
}

/// Add the persistent recursive watch on `root` again after a
/// reconnection, retrying connection losses until the session ends.
async fn rewatch(shared: &Shared, slot: &ClientSlot, root: &str) -> Result<zk::PersistentWatcher> {
    const AGAIN: Backoff = Backoff::new(Duration::from_millis(20), Duration::from_secs(1));
    let mut attempt = 0;
    loop {
        if let Some(end) = shared.get().end_error() {
            return Err(end);
        }
        let client = client_in(slot).map_err(|_| shared.ended_error())?;
        match client
            .watch(root, zk::AddWatchMode::PersistentRecursive)
            .await
        {
            Ok(w) => return Ok(w),
            Err(e) if is_connection_error(&e) => AGAIN.sleep(&mut attempt).await,
            Err(e) => return Err(map_error(e, Target::path(root))),
        }
    }
}

fn session_event_result(shared: &Shared, event: &zk::WatchedEvent) -> Result<()> {
    if event.event_type == zk::EventType::Session {
        let state = shared.map_state(event.session_state);
        shared.set(state);
        // Only a final state says which end; any other session event ends
        // the watch as `SessionExpired`.
        return Err(state.end_error().unwrap_or(Error::SessionExpired));
    }
    Ok(())
}

impl Handle {
    /// getData with a watch, retried through connection losses like every
    /// read: `None` for a missing node, on which getData fails with NoNode
    /// and leaves no watch set (`exists` would leave one).
    async fn get_and_watch(
        &self,
        path: &str,
    ) -> Result<Option<(Vec<u8>, zk::Stat, zk::OneshotWatcher)>> {
        match self
            .read(|c| async move { c.get_and_watch_data(path).await })
            .await
        {
            Ok(read) => Ok(Some(read)),
            Err(zk::Error::NoNode) => Ok(None),
            Err(e) => Err(self.map(e, Target::path(path))),
        }
    }

    /// getChildren with a watch: the server sets the watch with the read, so
    /// no change between them is missed.
    pub(crate) async fn children_watch(&self, dir: &str) -> Result<(Vec<Child>, Watch)> {
        let (names, watcher) = self
            .read(|c| async move {
                let (names, watcher) = c.list_and_watch_children(dir).await?;
                Ok((names, watcher))
            })
            .await
            .map_err(|e| self.map(e, Target::path(dir)))?;
        Ok((
            names::into_children(names),
            watch_of(self.shared.clone(), watcher, None),
        ))
    }

    /// getData with a watch, as Curator does: on a missing node getData
    /// fails with NoNode and leaves no watch (exists would leave one). The
    /// watch re-arms itself on a data change; a node found with another
    /// czxid means ours was deleted.
    pub(crate) async fn watch_gone(&self, path: &str) -> Result<Option<Watch>> {
        let armed = match self.shared.paths.data_watch(path) {
            DataWatch::FromTree(signal) => {
                // Subscribed first: a delete after this read is signalled.
                let found = self.read(|c| async move { c.get_data(path).await }).await;
                match found {
                    Ok((_, stat)) => Some((stat.czxid, Armed::Tree(signal))),
                    Err(zk::Error::NoNode) => None,
                    Err(e) => return Err(self.map(e, Target::path(path))),
                }
            }
            DataWatch::OnServer(guard) => self
                .get_and_watch(path)
                .await?
                .map(|(_, stat, w)| (stat.czxid, Armed::Server(w, guard))),
        };
        let Some((stamp, armed)) = armed else {
            return Ok(None);
        };
        let (shared, slot) = (self.shared.clone(), self.client_slot());
        Ok(Some(Watch::new(until_gone(
            shared,
            slot,
            path.to_owned(),
            stamp,
            armed,
        ))))
    }

    /// getData with a watch: the server sets the watch with the read, so
    /// no change after the read is missed. A data watch fires at the node's
    /// next set (`NodeDataChanged`, whatever the data) or its deletion
    /// (`NodeDeleted`, also at its session's end); a change to a child or
    /// a sibling does not reach it.
    ///
    /// Where this session's tree watch covers exactly `path`, no watch is
    /// set on the server: the tree watch's signal fires it (see
    /// `paths.rs`).
    pub(crate) async fn get_watch(&self, path: &str) -> Result<Option<(Node, Watch)>> {
        match self.shared.paths.data_watch(path) {
            DataWatch::FromTree(signal) => {
                // Subscribed first: a change after this read is signalled.
                let found = self.read(|c| async move { c.get_data(path).await }).await;
                match found {
                    Ok((data, stat)) => Ok(Some((
                        Node::new(data, stat_of(&stat)),
                        tree_signal_watch(self.shared.clone(), signal),
                    ))),
                    Err(zk::Error::NoNode) => Ok(None),
                    Err(e) => Err(self.map(e, Target::path(path))),
                }
            }
            DataWatch::OnServer(guard) => {
                let Some((data, stat, watcher)) = self.get_and_watch(path).await? else {
                    return Ok(None);
                };
                let node = Node::new(data, stat_of(&stat));
                Ok(Some((
                    node,
                    watch_of(self.shared.clone(), watcher, Some(guard)),
                )))
            }
        }
    }

    /// ZooKeeper 3.6's persistent recursive watch (`addWatch`), which
    /// fires for every create, set and delete at or under `path`. While the
    /// connection is down the server keeps nothing for it (ZOOKEEPER-4698:
    /// events of that time are never sent), and zookeeper-client 0.11 does
    /// not set persistent watches again on the new connection (its
    /// SetWatches request leaves them out). So after every reconnection the
    /// watch is added again, then [`TreeChange::Resync`] is sent. A server
    /// before 3.6 answers `Unimplemented`: `NotSupported`.
    pub(crate) async fn watch_tree(&self, path: &str) -> Result<TreeWatch> {
        // Registered before the request, so a data watch on the path set
        // meanwhile listens to this one instead of the server.
        let Some(registration) = self.shared.paths.tree_watch(path) else {
            return Err(Error::NotSupported {
                operation: "a tree watch on a path this session has a data watch on \
                            (ZooKeeper before 3.9 keeps one watch per path: ZOOKEEPER-4466)",
                backend: BACKEND,
            });
        };
        let watched = self
            .read(|c| async move { c.watch(path, zk::AddWatchMode::PersistentRecursive).await })
            .await;
        let watcher = match watched {
            Ok(w) => w,
            Err(zk::Error::Unimplemented) => {
                return Err(Error::NotSupported {
                    operation: "tree watches (ZooKeeper before 3.6)",
                    backend: BACKEND,
                })
            }
            Err(e) => return Err(self.map(e, Target::path(path))),
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let feed = tokio::spawn(feed_tree(
            self.shared.clone(),
            self.client_slot(),
            path.to_owned(),
            (watcher, registration),
            tx,
        ));
        Ok(TreeWatch::new(rx, feed))
    }
}

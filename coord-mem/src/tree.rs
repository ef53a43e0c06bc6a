//! The node tree of a [`crate::MemStore`] and the watchers on it: plain data,
//! changed only under the store's one lock, never awaited on.

use std::collections::{BTreeSet, HashMap};
use std::hash::BuildHasherDefault;
use std::time::{Duration, SystemTime};

use coord_core::{path, Blockers, Child, CreateMode, Created, Error, Node, Place, Result, Stat};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::kids::Kids;

/// The backend name in errors.
pub(crate) const BACKEND: &str = "mem";

/// A session's key inside one store.
pub(crate) type SessionKey = u64;

/// A session's id as [`coord_core::backend::PrimitiveSession::id`] shows it (and
/// [`Stat::owner`] names an ephemeral node's session).
pub(crate) fn session_id(key: SessionKey) -> coord_core::SessionId {
    coord_core::SessionId(format!("mem-{key}"))
}

/// How many watcher registrations between two sweeps of the whole watcher
/// table for watchers whose futures were dropped.
pub(crate) const SWEEP_EVERY: u64 = 1024;

/// One node.
struct Entry {
    data: Vec<u8>,
    version: u64,
    stamp: u64,
    /// The session an ephemeral node belongs to.
    owner: Option<SessionKey>,
    /// The direct children: name, and sequence for a sequential one (so
    /// a listing reads no other entry), also in sequence order.
    children: Kids,
    /// The next sequence handed to a sequential child (ZooKeeper's
    /// `cversion`): never goes back while this node lives.
    next_sequence: u64,
    /// The store's clock at the create; `None` for the root, which no
    /// create made.
    created_at: Option<SystemTime>,
    /// A TTL node's TTL.
    ttl: Option<Duration>,
    /// For a TTL node: when it was created or last set (ZooKeeper's
    /// `mtime`). Not read for other nodes, so not kept (no clock read).
    mtime: Option<Instant>,
}

impl Entry {
    fn new(
        data: Vec<u8>,
        stamp: u64,
        owner: Option<SessionKey>,
        created_at: Option<SystemTime>,
    ) -> Self {
        Entry {
            data,
            version: 0,
            stamp,
            owner,
            children: Kids::default(),
            next_sequence: 0,
            created_at,
            ttl: None,
            mtime: None,
        }
    }

    fn stat(&self) -> Stat {
        Stat::new(
            self.version,
            self.stamp,
            self.owner.is_some(),
            self.created_at,
        )
        .with_owner(self.owner.map(session_id))
    }
}

/// The tree's maps hash with [`FxHasher`]: the store is in-process and
/// its keys are the application's own paths, so a keyed hash buys nothing,
/// and SipHash over every path was a tenth of a lock cycle.
type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

type Waiters = FastMap<String, Vec<oneshot::Sender<()>>>;

/// The Fx hash (rustc's): a multiply and a rotate per 8 bytes.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

impl FxHasher {
    const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(Self::SEED);
    }
}

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 59));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

/// A tree watch: every change of `root` or a node under it goes to `tx`
/// (the path that changed).
struct TreeWatcher {
    root: String,
    tx: mpsc::UnboundedSender<String>,
}

impl TreeWatcher {
    fn covers(&self, path: &str) -> bool {
        path::is_within(path, &self.root)
    }
}

/// The tree: nodes by full path, the stamp counter, each session's
/// ephemeral nodes, and the one-shot watchers.
pub(crate) struct Tree {
    nodes: FastMap<String, Entry>,
    /// The last stamp handed out; the root has stamp 0.
    last_stamp: u64,
    ephemerals: FastMap<SessionKey, BTreeSet<String>>,
    /// Fired at a change to a node's set of children (or its deletion).
    children_waiters: Waiters,
    /// Fired at a node's deletion.
    gone_waiters: Waiters,
    /// Fired at a node's data change (any `set`) or its deletion.
    change_waiters: Waiters,
    /// Fired at every change under their roots, never consumed.
    tree_watchers: Vec<TreeWatcher>,
    registrations: u64,
}

impl Tree {
    pub(crate) fn new() -> Self {
        let mut nodes = FastMap::default();
        nodes.insert("/".to_owned(), Entry::new(Vec::new(), 0, None, None));
        Tree {
            nodes,
            last_stamp: 0,
            ephemerals: FastMap::default(),
            children_waiters: FastMap::default(),
            gone_waiters: FastMap::default(),
            change_waiters: FastMap::default(),
            tree_watchers: Vec::new(),
            registrations: 0,
        }
    }

    pub(crate) fn exists(&self, path: &str) -> bool {
        self.nodes.contains_key(path)
    }

    /// The stamp of the node at `path`, if there is one.
    pub(crate) fn stamp(&self, path: &str) -> Option<u64> {
        self.nodes.get(path).map(|e| e.stamp)
    }

    pub(crate) fn get(&self, path: &str) -> Option<Node> {
        self.nodes
            .get(path)
            .map(|e| Node::new(e.data.clone(), e.stat()))
    }

    /// Create a node (and its missing parents, persistent). All checks come
    /// before the first change, so a refused create changes nothing.
    pub(crate) fn create(
        &mut self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        owner: SessionKey,
    ) -> Result<Created> {
        self.check_create(path, mode)?;
        let parent = path::parent(path);
        let parent_known = self.nodes.contains_key(parent);
        let (path, sequence) = if mode.is_sequential() {
            let mut next = self.nodes.get(parent).map_or(0, |e| e.next_sequence);
            // A node made by hand may already carry the next name: skip it.
            let mut name = format!("{path}{next:010}");
            while self.nodes.contains_key(&name) {
                next += 1;
                name = format!("{path}{next:010}");
            }
            (name, Some(next))
        } else {
            (path.to_owned(), None)
        };

        if !parent_known {
            let missing: Vec<String> = path::ancestors(&path)
                .filter(|a| !self.nodes.contains_key(*a))
                .map(str::to_owned)
                .collect();
            for dir in missing {
                self.insert(dir, Vec::new(), None, None);
            }
        }
        if let (Some(seq), Some(p)) = (sequence, self.nodes.get_mut(parent)) {
            p.next_sequence = seq + 1;
        }
        let owner = mode.is_ephemeral().then_some(owner);
        let stamp = self.insert(path.clone(), data.to_vec(), owner, sequence);
        if let (Some(ttl), Some(entry)) = (mode.ttl(), self.nodes.get_mut(&path)) {
            entry.ttl = Some(ttl);
            entry.mtime = Some(Instant::now());
        }
        if let Some(owner) = owner {
            self.ephemerals
                .entry(owner)
                .or_default()
                .insert(path.clone());
        }
        Ok(Created::new(path, sequence, stamp, 0))
    }

    /// What refuses a create of `path` in `mode` now, with nothing
    /// changed: a bad path, a child of an ephemeral node, a node already
    /// there (for a plain create).
    pub(crate) fn check_create(&self, path: &str, mode: CreateMode) -> Result<()> {
        path::validate_non_root(path)?;
        let parent = path::parent(path);
        // Ephemeral nodes have no children (as on ZooKeeper). Only an
        // existing node can be ephemeral, and then none below it exists:
        // so when the parent exists, it is the only one to look at (and no
        // ancestor is missing).
        let parent_entry = self.nodes.get(parent);
        let ephemeral = match parent_entry {
            Some(e) => e.owner.is_some().then_some(parent),
            None => path::ancestors(path)
                .find(|a| self.nodes.get(*a).is_some_and(|e| e.owner.is_some())),
        };
        if let Some(ephemeral) = ephemeral {
            tracing::debug!(
                path,
                parent = ephemeral,
                "refused a child of an ephemeral node"
            );
            return Err(Error::NotSupported {
                operation: "children of an ephemeral node",
                backend: BACKEND,
            });
        }
        if !mode.is_sequential() && self.nodes.contains_key(path) {
            return Err(Error::AlreadyExists {
                path: path.to_owned(),
            });
        }
        Ok(())
    }

    /// Insert a node whose parent exists; returns its stamp.
    fn insert(
        &mut self,
        path: String,
        data: Vec<u8>,
        owner: Option<SessionKey>,
        sequence: Option<u64>,
    ) -> u64 {
        self.last_stamp += 1;
        let stamp = self.last_stamp;
        let parent = path::parent(&path);
        if let Some(p) = self.nodes.get_mut(parent) {
            p.children.insert(path::name(&path), sequence);
        }
        // Everything here happens under the store's lock: a waiter fired
        // now runs once it is let go.
        fire(&mut self.children_waiters, parent);
        let created_at = Some(SystemTime::now());
        self.tree_changed(&path);
        self.nodes
            .insert(path, Entry::new(data, stamp, owner, created_at));
        stamp
    }

    pub(crate) fn set(&mut self, path: &str, data: &[u8], version: Option<u64>) -> Result<Stat> {
        path::validate_non_root(path)?;
        let entry = self.nodes.get_mut(path).ok_or_else(|| Error::NotFound {
            path: path.to_owned(),
        })?;
        check_version(path, entry, version)?;
        entry.data = data.to_vec();
        entry.version += 1;
        // A change: a TTL node's TTL starts again.
        if entry.ttl.is_some() {
            entry.mtime = Some(Instant::now());
        }
        // Owner and stamp stay: a set by another session (a revoker's)
        // leaves the node ephemeral of its creator and its fence valid.
        let stat = entry.stat();
        fire(&mut self.change_waiters, path);
        self.tree_changed(path);
        Ok(stat)
    }

    pub(crate) fn delete(&mut self, path: &str, version: Option<u64>) -> Result<()> {
        path::validate_non_root(path)?;
        self.check_node(path, version, true)?;
        self.remove(path);
        Ok(())
    }

    /// What refuses a set (`childless` false) or a delete (`childless`
    /// true) of `path` at `version` now, with nothing changed: no node,
    /// another version, then (for a delete) children — the version first,
    /// then the children, as ZooKeeper checks them.
    pub(crate) fn check_node(
        &self,
        path: &str,
        version: Option<u64>,
        childless: bool,
    ) -> Result<()> {
        let entry = self.nodes.get(path).ok_or_else(|| Error::NotFound {
            path: path.to_owned(),
        })?;
        check_version(path, entry, version)?;
        if childless && !entry.children.is_empty() {
            return Err(Error::NotEmpty {
                path: path.to_owned(),
            });
        }
        Ok(())
    }

    /// Remove a childless node and fire everything waiting on it.
    fn remove(&mut self, path: &str) {
        let Some(entry) = self.nodes.remove(path) else {
            return;
        };
        debug_assert!(entry.children.is_empty());
        if let Some(owner) = entry.owner {
            if let Some(set) = self.ephemerals.get_mut(&owner) {
                set.remove(path);
                if set.is_empty() {
                    self.ephemerals.remove(&owner);
                }
            }
        }
        let parent = path::parent(path);
        if let Some(p) = self.nodes.get_mut(parent) {
            p.children.remove(path::name(path));
        }
        fire(&mut self.gone_waiters, path);
        fire(&mut self.change_waiters, path);
        fire(&mut self.children_waiters, path);
        fire(&mut self.children_waiters, parent);
        self.tree_changed(path);
    }

    /// Reap the TTL node at `path` made with `stamp` if it has gone its TTL
    /// without a change and has no children (as ZooKeeper's reaper does).
    /// `None` once that node is gone (reaped now, or deleted before);
    /// otherwise when to look again: when its TTL runs out, or, while
    /// children keep it, after `recheck`.
    pub(crate) fn reap_ttl(
        &mut self,
        path: &str,
        stamp: u64,
        recheck: Duration,
    ) -> Option<Instant> {
        let now = Instant::now();
        let entry = self.nodes.get(path).filter(|e| e.stamp == stamp)?;
        let ttl = entry.ttl?;
        let due = entry.mtime.unwrap_or(now).checked_add(ttl)?;
        if now < due {
            return Some(due);
        }
        if !entry.children.is_empty() {
            return Some(now + recheck.min(ttl));
        }
        tracing::debug!(path, ?ttl, "mem TTL node went its TTL without a change");
        self.remove(path);
        None
    }

    /// Delete every ephemeral node of `owner` (its session ended).
    pub(crate) fn remove_ephemerals(&mut self, owner: SessionKey) -> usize {
        let paths = self.ephemerals.remove(&owner).unwrap_or_default();
        for p in &paths {
            self.remove(p);
        }
        paths.len()
    }

    /// The children of `dir`: sequential ones by sequence, then the rest by
    /// name.
    pub(crate) fn children(&self, dir: &str) -> Result<Vec<Child>> {
        self.children_prefixed(dir, "")
    }

    /// The children of `dir` whose names begin with `prefix`, in the order
    /// of [`Tree::children`]; only those are visited (a range of the
    /// sorted names).
    pub(crate) fn children_prefixed(&self, dir: &str, prefix: &str) -> Result<Vec<Child>> {
        Ok(self.kids(dir)?.prefixed(prefix))
    }

    /// The first `n` children of `dir` in the order of [`Tree::children`],
    /// from the sequence index: only those are visited.
    pub(crate) fn first_children(&self, dir: &str, n: usize) -> Result<Vec<Child>> {
        Ok(self.kids(dir)?.first(n))
    }

    /// Where `me` stands among the children of `dir` (a missing `dir`:
    /// [`Place::Gone`]), from the sequence index in O(log N).
    pub(crate) fn place(&self, dir: &str, me: &Child, blockers: Blockers<'_>) -> Place {
        self.nodes
            .get(dir)
            .map_or(Place::Gone, |e| e.children.place(me, blockers))
    }

    fn kids(&self, dir: &str) -> Result<&Kids> {
        self.nodes
            .get(dir)
            .map(|e| &e.children)
            .ok_or_else(|| Error::NotFound {
                path: dir.to_owned(),
            })
    }

    /// A receiver fired at the next change to `dir`'s children.
    pub(crate) fn watch_children(&mut self, dir: &str) -> oneshot::Receiver<()> {
        self.register(dir, WatchKind::Children)
    }

    /// A receiver fired when the node at `path` is deleted.
    pub(crate) fn watch_gone(&mut self, path: &str) -> oneshot::Receiver<()> {
        self.register(path, WatchKind::Gone)
    }

    /// A receiver fired at the next set of the node at `path`, or its
    /// deletion.
    pub(crate) fn watch_change(&mut self, path: &str) -> oneshot::Receiver<()> {
        self.register(path, WatchKind::Change)
    }

    fn register(&mut self, path: &str, kind: WatchKind) -> oneshot::Receiver<()> {
        self.registrations += 1;
        if self.registrations.is_multiple_of(SWEEP_EVERY) {
            sweep(&mut self.children_waiters);
            sweep(&mut self.gone_waiters);
            sweep(&mut self.change_waiters);
        }
        let waiters = match kind {
            WatchKind::Children => &mut self.children_waiters,
            WatchKind::Gone => &mut self.gone_waiters,
            WatchKind::Change => &mut self.change_waiters,
        };
        let (tx, rx) = oneshot::channel();
        let list = waiters.entry(path.to_owned()).or_default();
        // Watches whose futures were dropped leave closed senders: drop them.
        list.retain(|w| !w.is_closed());
        list.push(tx);
        rx
    }

    /// A tree watch on `root`: every later change of `root` or a node
    /// under it sends the changed path to the returned receiver, until it
    /// is dropped.
    pub(crate) fn watch_tree(&mut self, root: &str) -> mpsc::UnboundedReceiver<String> {
        self.tree_watchers.retain(|w| !w.tx.is_closed());
        let (tx, rx) = mpsc::unbounded_channel();
        self.tree_watchers.push(TreeWatcher {
            root: root.to_owned(),
            tx,
        });
        rx
    }

    /// Tell the tree watches covering `path` that it changed; drop those
    /// whose receivers are gone.
    fn tree_changed(&mut self, path: &str) {
        if self.tree_watchers.is_empty() {
            return;
        }
        self.tree_watchers
            .retain(|w| !w.covers(path) || w.tx.send(path.to_owned()).is_ok());
    }

    /// Registered watchers, awaited or dropped but not yet cleaned up.
    pub(crate) fn registered_watches(&self) -> usize {
        self.children_waiters
            .values()
            .chain(self.gone_waiters.values())
            .chain(self.change_waiters.values())
            .map(Vec::len)
            .sum::<usize>()
            + self.tree_watchers.len()
    }
}

/// What a watcher registration waits for.
#[derive(Clone, Copy)]
enum WatchKind {
    Children,
    Gone,
    Change,
}

fn check_version(path: &str, entry: &Entry, version: Option<u64>) -> Result<()> {
    match version {
        Some(v) if v != entry.version => Err(Error::VersionMismatch {
            path: path.to_owned(),
            expected: v,
        }),
        _ => Ok(()),
    }
}

fn fire(waiters: &mut Waiters, path: &str) {
    if waiters.is_empty() {
        return;
    }
    for w in waiters.remove(path).unwrap_or_default() {
        // A receiver that is gone no longer cares.
        let _ = w.send(());
    }
}

fn sweep(waiters: &mut Waiters) {
    waiters.retain(|_, list| {
        list.retain(|w| !w.is_closed());
        !list.is_empty()
    });
}

//! Watches: each session's waiters and tree watches (its hub), fed by the
//! process's listening connection for its server and schema
//! ([`crate::listener`], `LISTEN <schema>`). The schema's trigger sends
//! the kind (`c`, `u`, `d`), stamp, version and path of every created, set
//! or deleted node at its transaction's commit, in commit order.
//!
//! 1. A one-shot waiter registers *before* the read it follows, so a change
//!    committed after the read is never missed. Notices that come before
//!    the read's answer are kept; once the read is known the waiter is
//!    *armed* with it, and a notice fires it only if the read did not see
//!    that change already (by stamp and version: a node's stamp never
//!    repeats, its version grows). So a change the read saw never wakes a
//!    waiter twice, as a ZooKeeper watch set with its read would not.
//! 2. While the listening connection is down, nothing is heard: when it is
//!    lost every waiter fires, and when it is back (its `LISTEN` in place)
//!    every waiter fires again and every tree watch gets `Resync`. A reader
//!    then reads again; no change is ever dropped silently.
//!    A waiter for a node's deletion is the exception: it must never fire
//!    while its node is there (a holder counts that as its loss). It stays
//!    registered while the listener is down, and when the listener is back
//!    its watch reads the node again: gone or another node (another stamp)
//!    fires it, the same node arms it again.
//! 3. When the session ends, every waiter fires and every tree watch gets
//!    the session's end as its last item.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use coord_core::{Error, Result, SessionState, TreeChange, TreeWatch, Watch};
use tokio::sync::{mpsc, oneshot, watch};

use crate::link::RECONNECT;

/// What a waiter waits for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The node's data changes or it is deleted.
    Change,
    /// The node is deleted.
    Gone,
    /// A child of the node is created or deleted.
    Children,
}

/// One change notice.
#[derive(Clone)]
pub(crate) struct Notice {
    op: char,
    stamp: u64,
    version: u64,
    /// The node's name (for a children waiter: which child).
    name: String,
}

/// What the read after a waiter's registration saw.
pub(crate) enum Seen {
    /// The node, with its stamp and version.
    Node { stamp: u64, version: u64 },
    /// The children, by name, with their stamps.
    Children(HashMap<String, u64>),
}

impl Seen {
    /// Whether `n` is a change this read did not see.
    fn is_news(&self, kind: Kind, n: &Notice) -> bool {
        match (self, kind) {
            (Seen::Node { stamp, .. }, Kind::Gone) => n.op == 'd' && n.stamp >= *stamp,
            (Seen::Node { stamp, version }, Kind::Change) => match n.op {
                'u' => n.stamp > *stamp || (n.stamp == *stamp && n.version > *version),
                'd' => n.stamp >= *stamp,
                _ => false,
            },
            (Seen::Children(seen), Kind::Children) => {
                let had = seen.get(&n.name).copied();
                match n.op {
                    // A child the listing showed (or a later one) is no news.
                    'c' => had.is_none_or(|s| n.stamp > s),
                    // A child the listing did not show was gone already.
                    'd' => had.is_some_and(|s| n.stamp >= s),
                    _ => false,
                }
            }
            _ => true,
        }
    }
}

/// A waiter's filter: notices kept until its read is known, then the read.
enum Filter {
    Pending(Vec<Notice>),
    Armed(Seen),
}

/// Why a waiter fired.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Fired {
    /// A notice of a change its read had not seen.
    Notice,
    /// The listening connection came back (or the session ended): changes
    /// may have gone unheard, read again.
    Resync,
}

/// The sending half of a waiter, and its filter.
type WaiterState = (Option<oneshot::Sender<Fired>>, Filter);

/// One one-shot waiter, shared by the hub and the watch being made.
pub(crate) struct Waiter {
    kind: Kind,
    inner: Mutex<WaiterState>,
}

impl Waiter {
    fn fire(inner: &mut WaiterState, why: Fired) {
        if let Some(tx) = inner.0.take() {
            let _ = tx.send(why);
        }
    }

    /// A notice for this waiter's path (step 1).
    fn offer(&self, n: &Notice) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        match &mut inner.1 {
            Filter::Pending(kept) => kept.push(n.clone()),
            Filter::Armed(seen) => {
                if seen.is_news(self.kind, n) {
                    Self::fire(&mut inner, Fired::Notice);
                }
            }
        }
    }

    /// The read is known: fire now for a kept notice it did not see, and
    /// judge later ones by it.
    pub(crate) fn arm(&self, seen: Seen) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let news = match &inner.1 {
            Filter::Pending(kept) => kept.iter().any(|n| seen.is_news(self.kind, n)),
            Filter::Armed(_) => false,
        };
        inner.1 = Filter::Armed(seen);
        if news {
            Self::fire(&mut inner, Fired::Notice);
        }
    }

    fn fire_now(&self, why: Fired) {
        Self::fire(
            &mut self.inner.lock().unwrap_or_else(|p| p.into_inner()),
            why,
        );
    }

    fn done(&self) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .0
            .as_ref()
            .is_none_or(|tx| tx.is_closed())
    }
}

/// Waiters by path.
type Waiters = HashMap<String, Vec<Arc<Waiter>>>;

/// A tree watch's root and where its changes go.
type Tree = (String, mpsc::UnboundedSender<Result<TreeChange>>);

/// The waiters of one session, and the listening connection feeding them
/// while it listens.
#[derive(Default)]
pub(crate) struct Hub {
    waiters: Mutex<Waiters>,
    trees: Mutex<Vec<Tree>>,
    side: Mutex<Option<Arc<tokio_postgres::Client>>>,
}

impl Hub {
    /// The listening connection now feeding this hub, if it listens: a
    /// second way to the server, idle but for pings, for a renewal that
    /// must not wait behind the session's own requests
    /// ([`crate::keepalive`]).
    pub(crate) fn side(&self) -> Option<Arc<tokio_postgres::Client>> {
        self.side.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Set by the listener as it listens (`Some`) or is lost (`None`).
    pub(crate) fn set_side(&self, client: Option<Arc<tokio_postgres::Client>>) {
        *self.side.lock().unwrap_or_else(|p| p.into_inner()) = client;
    }

    /// Wait for `kind` at `path`: the waiter (to arm once its read is
    /// known) and the receiver that resolves when it fires.
    pub(crate) fn register(
        &self,
        path: &str,
        kind: Kind,
    ) -> (Arc<Waiter>, oneshot::Receiver<Fired>) {
        let (tx, rx) = oneshot::channel();
        let waiter = Arc::new(Waiter {
            kind,
            inner: Mutex::new((Some(tx), Filter::Pending(Vec::new()))),
        });
        let mut w = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
        let list = w.entry(path.to_owned()).or_default();
        list.retain(|x| !x.done());
        list.push(Arc::clone(&waiter));
        (waiter, rx)
    }

    /// Report every change at or under `root` to the returned receiver.
    pub(crate) fn tree(&self, root: &str) -> mpsc::UnboundedReceiver<Result<TreeChange>> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut trees = self.trees.lock().unwrap_or_else(|p| p.into_inner());
        trees.retain(|(_, t)| !t.is_closed());
        trees.push((root.to_owned(), tx));
        rx
    }

    /// A notice from the trigger, parsed once ([`parse`]), for this
    /// session's waiters and tree watches at `path`.
    pub(crate) fn deliver(&self, n: &Notice, path: &str) {
        {
            let mut w = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
            if matches!(n.op, 'u' | 'd') {
                offer(&mut w, path, n, &[Kind::Change, Kind::Gone]);
            }
            if matches!(n.op, 'c' | 'd') && path != "/" {
                offer(&mut w, coord_core::path::parent(path), n, &[Kind::Children]);
            }
        }
        let mut trees = self.trees.lock().unwrap_or_else(|p| p.into_inner());
        trees.retain(|(root, tx)| {
            if !under(path, root) {
                return !tx.is_closed();
            }
            tx.send(Ok(TreeChange::Changed(path.to_owned()))).is_ok()
        });
    }

    /// Wake every one-shot waiter with `Resync` (they read again), but
    /// those of `keep`: a gone waiter must not fire before its node is
    /// gone, so it waits for the listener to be back, then checks.
    fn fire_all(&self, keep: Option<Kind>) {
        let mut w = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
        w.retain(|_, list| {
            list.retain(|waiter| {
                if Some(waiter.kind) == keep {
                    !waiter.done()
                } else {
                    waiter.fire_now(Fired::Resync);
                    false
                }
            });
            !list.is_empty()
        });
    }

    /// The listening connection is lost (step 2).
    pub(crate) fn down(&self) {
        self.fire_all(Some(Kind::Gone));
    }

    /// The listening connection is back, listening (step 2).
    pub(crate) fn up(&self) {
        self.fire_all(None);
        let mut trees = self.trees.lock().unwrap_or_else(|p| p.into_inner());
        trees.retain(|(_, tx)| tx.send(Ok(TreeChange::Resync)).is_ok());
    }

    /// The session is over with `end` (step 3).
    pub(crate) fn end(&self, end: &dyn Fn() -> Error) {
        self.fire_all(None);
        let mut trees = self.trees.lock().unwrap_or_else(|p| p.into_inner());
        for (_, tx) in trees.drain(..) {
            let _ = tx.send(Err(end()));
        }
    }
}

/// A notice from the trigger, `OP:STAMP:VERSION:PATH`: the notice and its
/// path; `None` for anything else.
pub(crate) fn parse(payload: &str) -> Option<(Notice, &str)> {
    let mut parts = payload.splitn(4, ':');
    let (op, stamp, version, path) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let n = Notice {
        op: op.chars().next()?,
        stamp: stamp.parse().ok()?,
        version: version.parse().ok()?,
        name: path.rsplit('/').next().unwrap_or_default().to_owned(),
    };
    Some((n, path))
}

/// Whether `path` is `root` or lies under it.
fn under(path: &str, root: &str) -> bool {
    root == "/"
        || path == root
        || path
            .strip_prefix(root)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Offer `n` to the waiters of `kinds` at `at`; drop those done.
fn offer(w: &mut Waiters, at: &str, n: &Notice, kinds: &[Kind]) {
    if let Some(list) = w.get_mut(at) {
        for waiter in list.iter() {
            if kinds.contains(&waiter.kind) {
                waiter.offer(n);
            }
        }
        list.retain(|x| !x.done());
        if list.is_empty() {
            w.remove(at);
        }
    }
}

/// A one-shot watch over `fired`: `Ok` when it fires, or the session's end
/// when the session ends first.
pub(crate) fn one_shot(
    fired: oneshot::Receiver<Fired>,
    mut state: watch::Receiver<SessionState>,
) -> Watch {
    Watch::new(async move {
        tokio::select! {
            _ = fired => {}
            _ = state.wait_for(|s| s.is_terminal()) => {}
        }
        let end = state.borrow().end_error();
        match end {
            Some(e) => Err(e),
            None => Ok(()),
        }
    })
}

/// A tree watch at `root`, fed by the hub until the session ends.
pub(crate) fn tree_watch(hub: &Arc<Hub>, root: &str) -> TreeWatch {
    let mut rx = hub.tree(root);
    let (tx, out) = mpsc::unbounded_channel();
    let feed = tokio::spawn(async move {
        while let Some(item) = rx.recv().await {
            let last = item.is_err();
            if tx.send(item).is_err() || last {
                return;
            }
        }
    });
    TreeWatch::new(out, feed)
}

/// A watch for the deletion of the node at `path` with `stamp` (step 2's
/// exception): `Ok` only once that node is gone — a notice of its
/// deletion, or a read after the listener came back that finds it gone or
/// replaced — or the session's end.
pub(crate) fn gone_watch(
    hub: Arc<Hub>,
    link: Arc<crate::link::Link>,
    sid: i64,
    path: String,
    stamp: u64,
    mut fired: oneshot::Receiver<Fired>,
    mut state: watch::Receiver<SessionState>,
) -> Watch {
    Watch::new(async move {
        let read = format!("select stamp from {}.get($1, $2)", link.target.schema);
        loop {
            let why = tokio::select! {
                f = &mut fired => f.unwrap_or(Fired::Resync),
                _ = state.wait_for(|s| s.is_terminal()) => Fired::Resync,
            };
            if let Some(e) = state.borrow().end_error() {
                return Err(e);
            }
            if why == Fired::Notice {
                return Ok(());
            }
            // The listener was away: is the node still there?
            let mut attempt = 0;
            loop {
                let (waiter, rx) = hub.register(&path, Kind::Gone);
                let params: [crate::link::Param<'_>; 2] = [
                    (&sid, tokio_postgres::types::Type::INT8),
                    (&path, tokio_postgres::types::Type::TEXT),
                ];
                match link.query(&read, &params, &path).await {
                    Ok(rows) => {
                        let now = rows.first().map(|r| crate::rows::u64_of(r.get(0)));
                        if now != Some(stamp) {
                            return Ok(());
                        }
                        waiter.arm(Seen::Node { stamp, version: 0 });
                        fired = rx;
                        break;
                    }
                    Err(Error::SessionExpired) => {
                        link.ended_by_server();
                        return Err(state.borrow().end_error().unwrap_or(Error::SessionExpired));
                    }
                    Err(e) if e.is_retryable() => {
                        tokio::select! {
                            () = RECONNECT.sleep(&mut attempt) => {}
                            _ = state.wait_for(|s| s.is_terminal()) => {}
                        }
                        if let Some(e) = state.borrow().end_error() {
                            return Err(e);
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    })
}

//! Watches: one listening connection per session (`LISTEN <schema>`). The
//! schema's trigger sends the kind (`c`, `u`, `d`), stamp, version and path
//! of every created, set or deleted node at its transaction's commit, in
//! commit order.
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
//! 3. When the session ends, every waiter fires and every tree watch gets
//!    the session's end as its last item.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coord_core::backend::Backoff;
use coord_core::{Error, Result, SessionState, TreeChange, TreeWatch, Watch};
use futures_util::StreamExt;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_postgres::AsyncMessage;

use crate::link::open;
use crate::options::Target;
use crate::tls::MakeTls;

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
struct Notice {
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

/// One one-shot waiter, shared by the hub and the watch being made.
pub(crate) struct Waiter {
    kind: Kind,
    inner: Mutex<(Option<oneshot::Sender<()>>, Filter)>,
}

impl Waiter {
    fn fire(inner: &mut (Option<oneshot::Sender<()>>, Filter)) {
        if let Some(tx) = inner.0.take() {
            let _ = tx.send(());
        }
    }

    /// A notice for this waiter's path (step 1).
    fn offer(&self, n: &Notice) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        match &mut inner.1 {
            Filter::Pending(kept) => kept.push(n.clone()),
            Filter::Armed(seen) => {
                if seen.is_news(self.kind, n) {
                    Self::fire(&mut inner);
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
            Self::fire(&mut inner);
        }
    }

    fn fire_now(&self) {
        Self::fire(&mut self.inner.lock().unwrap_or_else(|p| p.into_inner()));
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

/// The waiters of one session.
#[derive(Default)]
pub(crate) struct Hub {
    waiters: Mutex<Waiters>,
    trees: Mutex<Vec<Tree>>,
}

impl Hub {
    /// Wait for `kind` at `path`: the waiter (to arm once its read is
    /// known) and the receiver that resolves when it fires.
    pub(crate) fn register(&self, path: &str, kind: Kind) -> (Arc<Waiter>, oneshot::Receiver<()>) {
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

    /// A notice from the trigger: `OP:STAMP:VERSION:PATH`.
    pub(crate) fn notice(&self, payload: &str) {
        let mut parts = payload.splitn(4, ':');
        let (Some(op), Some(stamp), Some(version), Some(path)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return;
        };
        let (Some(op), Ok(stamp), Ok(version)) =
            (op.chars().next(), stamp.parse(), version.parse())
        else {
            return;
        };
        let name = path.rsplit('/').next().unwrap_or_default().to_owned();
        let n = Notice {
            op,
            stamp,
            version,
            name,
        };
        {
            let mut w = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
            if matches!(op, 'u' | 'd') {
                offer(&mut w, path, &n, &[Kind::Change, Kind::Gone]);
            }
            if matches!(op, 'c' | 'd') && path != "/" {
                offer(
                    &mut w,
                    coord_core::path::parent(path),
                    &n,
                    &[Kind::Children],
                );
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

    /// Wake every one-shot waiter (they read again).
    fn fire_all(&self) {
        let mut w = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
        for (_, list) in w.drain() {
            for waiter in list {
                waiter.fire_now();
            }
        }
    }

    /// The listening connection is lost (step 2).
    pub(crate) fn down(&self) {
        self.fire_all();
    }

    /// The listening connection is back, listening (step 2).
    pub(crate) fn up(&self) {
        self.fire_all();
        let mut trees = self.trees.lock().unwrap_or_else(|p| p.into_inner());
        trees.retain(|(_, tx)| tx.send(Ok(TreeChange::Resync)).is_ok());
    }

    /// The session is over with `end` (step 3).
    pub(crate) fn end(&self, end: &dyn Fn() -> Error) {
        self.fire_all();
        let mut trees = self.trees.lock().unwrap_or_else(|p| p.into_inner());
        for (_, tx) in trees.drain(..) {
            let _ = tx.send(Err(end()));
        }
    }
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
    fired: oneshot::Receiver<()>,
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

/// Listen for the trigger's notices on connections made again whenever
/// lost, until the session is over; returns once the first `LISTEN` is in
/// place (step 2).
///
/// # Errors
/// Those of the first connection ([`open`]) and its `LISTEN`.
pub(crate) async fn listen(
    target: Target,
    tls: MakeTls,
    hub: Arc<Hub>,
    state: watch::Receiver<SessionState>,
) -> Result<tokio::task::JoinHandle<()>> {
    let (ready_tx, ready_rx) = oneshot::channel();
    let first = open(&target, &tls).await?;
    let shown = target.shown.clone();
    let task = tokio::spawn(async move {
        let mut ready = Some(ready_tx);
        let mut pending = Some(first);
        let mut attempt = 0;
        loop {
            let conn = match pending.take() {
                Some(c) => Ok(c),
                None => open(&target, &tls).await,
            };
            match conn {
                Ok((client, conn)) => {
                    let listened = listen_on(&target, client, conn, &hub, &mut ready, &state).await;
                    if listened {
                        attempt = 0;
                    }
                }
                Err(e) => {
                    tracing::debug!(target: "coord", error = %e, "postgres listening connection failed");
                }
            }
            if let Some(tx) = ready.take() {
                let _ = tx.send(Err(Error::ConnectionLost(format!(
                    "{}: the listening connection closed",
                    target.shown
                ))));
                return;
            }
            if state.borrow().is_terminal() {
                return;
            }
            let mut s = state.clone();
            tokio::select! {
                () = Backoff::RECIPES.sleep(&mut attempt) => {}
                _ = s.wait_for(|s| s.is_terminal()) => return,
            }
        }
    });
    match ready_rx.await {
        Ok(Ok(())) => Ok(task),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(Error::ConnectionLost(format!(
            "{shown}: the listening connection closed"
        ))),
    }
}

/// Listen over one connection until it is lost or the session is over;
/// `true` if its `LISTEN` took.
async fn listen_on(
    target: &Target,
    client: tokio_postgres::Client,
    mut conn: tokio_postgres::Connection<
        tokio_postgres::Socket,
        crate::tls::TlsStream<tokio_postgres::Socket>,
    >,
    hub: &Hub,
    ready: &mut Option<oneshot::Sender<Result<()>>>,
    state: &watch::Receiver<SessionState>,
) -> bool {
    let mut messages = futures_util::stream::poll_fn(move |cx| conn.poll_message(cx)).boxed();
    let statement = format!("listen {}", target.schema);
    let listening = tokio::time::timeout(target.request_timeout, client.batch_execute(&statement));
    tokio::pin!(listening);
    let mut listened = false;
    let mut state = state.clone();
    // A ping now and then, so a connection cut without a reset is noticed
    // within about a request timeout (a listener otherwise only reads).
    let mut ping = tokio::time::interval(target.request_timeout.max(Duration::from_secs(1)));
    ping.tick().await;
    let mut pinging: Option<futures_util::future::BoxFuture<'_, bool>> = None;
    loop {
        tokio::select! {
            r = &mut listening, if !listened => match r {
                Ok(Ok(())) => {
                    listened = true;
                    match ready.take() {
                        Some(tx) => { let _ = tx.send(Ok(())); }
                        None => hub.up(),
                    }
                }
                _ => break,
            },
            m = messages.next() => match m {
                Some(Ok(AsyncMessage::Notification(n))) => hub.notice(n.payload()),
                Some(Ok(_)) => {}
                Some(Err(_)) | None => break,
            },
            _ = ping.tick(), if listened && pinging.is_none() => {
                let query = client.simple_query("");
                let within = target.request_timeout;
                pinging = Some(Box::pin(async move {
                    matches!(tokio::time::timeout(within, query).await, Ok(Ok(_)))
                }));
            }
            alive = async {
                match pinging.as_mut() {
                    Some(p) => p.await,
                    None => std::future::pending().await,
                }
            }, if pinging.is_some() => {
                pinging = None;
                if !alive {
                    break;
                }
            }
            _ = state.wait_for(|s| s.is_terminal()) => break,
        }
    }
    if listened {
        hub.down();
    }
    listened
}

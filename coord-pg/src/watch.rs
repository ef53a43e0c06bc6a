//! Watches: one listening connection per session (`LISTEN <schema>`). The
//! schema's trigger sends `c:`, `u:` or `d:` and the path of every created,
//! set or deleted node at its transaction's commit, in commit order.
//!
//! 1. A one-shot waiter registers *before* the read it follows, so a change
//!    committed after the read is never missed: the hub wakes the waiters
//!    of the path (a data watch on `u`/`d`, a gone watch on `d`) and of its
//!    parent (a children watch on `c`/`d`). Tree watches get every path at
//!    or under their root.
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

/// Waiters by path.
type Waiters = HashMap<String, Vec<(Kind, oneshot::Sender<()>)>>;

/// A tree watch's root and where its changes go.
type Tree = (String, mpsc::UnboundedSender<Result<TreeChange>>);

/// The waiters of one session.
#[derive(Default)]
pub(crate) struct Hub {
    waiters: Mutex<Waiters>,
    trees: Mutex<Vec<Tree>>,
}

impl Hub {
    /// Wait for `kind` at `path`: the receiver resolves when it happens.
    pub(crate) fn register(&self, path: &str, kind: Kind) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        let mut w = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
        let list = w.entry(path.to_owned()).or_default();
        list.retain(|(_, t)| !t.is_closed());
        list.push((kind, tx));
        rx
    }

    /// Report every change at or under `root` to the returned receiver.
    pub(crate) fn tree(&self, root: &str) -> mpsc::UnboundedReceiver<Result<TreeChange>> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut trees = self.trees.lock().unwrap_or_else(|p| p.into_inner());
        trees.retain(|(_, t)| !t.is_closed());
        trees.push((root.to_owned(), tx));
        rx
    }

    /// A notice from the trigger: `c:PATH`, `u:PATH` or `d:PATH`.
    pub(crate) fn notice(&self, payload: &str) {
        let Some((op, path)) = payload.split_once(':') else {
            return;
        };
        {
            let mut w = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
            match op {
                "u" => fire(&mut w, path, &[Kind::Change]),
                "d" => fire(&mut w, path, &[Kind::Change, Kind::Gone]),
                _ => {}
            }
            if matches!(op, "c" | "d") && path != "/" {
                fire(&mut w, coord_core::path::parent(path), &[Kind::Children]);
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
            for (_, tx) in list {
                let _ = tx.send(());
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

/// Wake the waiters of `kinds` at `at`.
fn fire(w: &mut Waiters, at: &str, kinds: &[Kind]) {
    if let Some(list) = w.get_mut(at) {
        let mut keep = Vec::new();
        for (k, tx) in list.drain(..) {
            if kinds.contains(&k) {
                let _ = tx.send(());
            } else if !tx.is_closed() {
                keep.push((k, tx));
            }
        }
        *list = keep;
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

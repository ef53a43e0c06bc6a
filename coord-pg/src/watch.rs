//! Watches: one `LISTEN coord` connection per session. The schema's
//! trigger sends `c:`, `u:` or `d:` and the path of every created, set or
//! deleted node at its transaction's commit; the hub wakes the waiters of
//! that path (a data watch on `u`/`d`, a gone watch on `d`) and of its
//! parent (a children watch on `c`/`d`). A waiter is registered before the
//! read it follows, so a change after the read is never missed. When the
//! listening connection is lost every waiter fires: the reader reads again
//! rather than miss a change.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::oneshot;

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

/// The waiters of one session, by path.
#[derive(Default)]
pub(crate) struct Hub {
    waiters: Mutex<Waiters>,
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

    /// A notice from the trigger: `c:PATH`, `u:PATH` or `d:PATH`.
    pub(crate) fn notice(&self, payload: &str) {
        let Some((op, path)) = payload.split_once(':') else {
            return;
        };
        let mut w = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
        let fire = |w: &mut Waiters, at: &str, kinds: &[Kind]| {
            if let Some(list) = w.get_mut(at) {
                let mut keep = Vec::new();
                for (k, tx) in list.drain(..) {
                    if kinds.contains(&k) {
                        let _ = tx.send(());
                    } else {
                        keep.push((k, tx));
                    }
                }
                *list = keep;
                if list.is_empty() {
                    w.remove(at);
                }
            }
        };
        match op {
            "u" => fire(&mut w, path, &[Kind::Change]),
            "d" => fire(&mut w, path, &[Kind::Change, Kind::Gone]),
            _ => {}
        }
        if matches!(op, "c" | "d") {
            fire(&mut w, coord_core::path::parent(path), &[Kind::Children]);
        }
    }

    /// The listening connection is gone: every waiter reads again.
    pub(crate) fn fire_all(&self) {
        let mut w = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
        for (_, list) in w.drain() {
            for (_, tx) in list {
                let _ = tx.send(());
            }
        }
    }
}

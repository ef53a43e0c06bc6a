//! A plain consumer's cache: the ordered names of one listing, tried in
//! turn before listing again, with the data of the next items read ahead.

use std::collections::{HashMap, VecDeque};

use tokio::task::JoinSet;

use crate::error::{Error, Result};
use crate::path;
use crate::session::Session;

/// How many items' data a plain consumer reads ahead, concurrently.
const READ_AHEAD: usize = 32;

/// A consumer's names from its last listing, not tried yet, in order, with
/// the data of those read ahead. Items are never changed once offered, so
/// data read ahead is the item's as long as the item exists — and a
/// successful delete proves that it did.
#[derive(Default)]
pub(crate) struct Cache {
    names: VecDeque<String>,
    /// `None`: found gone (taken by someone else).
    data: HashMap<String, Option<Vec<u8>>>,
}

impl Cache {
    /// The next name to try.
    pub(crate) fn front(&self) -> Option<&String> {
        self.names.front()
    }

    /// Done with the front name.
    pub(crate) fn pop_front(&mut self) {
        if let Some(n) = self.names.pop_front() {
            self.data.remove(&n);
        }
    }

    /// Add the names of a new listing, in order. Data read ahead for
    /// names not in it is dropped (those items are gone).
    pub(crate) fn extend(&mut self, names: Vec<String>) {
        if self.names.is_empty() && !self.data.is_empty() {
            let listed: std::collections::HashSet<&String> = names.iter().collect();
            self.data.retain(|n, _| listed.contains(n));
        }
        self.names.extend(names);
    }

    /// Forget the names not tried yet (keeping data read ahead, which
    /// stays the item's as long as it exists), so the next take lists
    /// afresh.
    pub(crate) fn clear_names(&mut self) {
        self.names.clear();
    }

    /// The data read ahead for `name`: `None` when not read yet,
    /// `Some(None)` when found gone.
    pub(crate) fn data(&self, name: &str) -> Option<&Option<Vec<u8>>> {
        self.data.get(name)
    }

    /// Read the data of the first [`READ_AHEAD`] cached names that lack
    /// it, concurrently (reads pipeline on every backend), from the item
    /// directory `items`, so a take costs one delete instead of a read and
    /// a delete. Names found gone are marked so.
    pub(crate) async fn read_ahead(&mut self, session: &Session, items: &str) -> Result<()> {
        let mut reads = JoinSet::new();
        for name in self.names.iter().take(READ_AHEAD) {
            if self.data.contains_key(name) {
                continue;
            }
            let session = session.clone();
            let item = path::join(items, name);
            let name = name.clone();
            reads.spawn(async move { (name, session.get(&item).await) });
        }
        while let Some(r) = reads.join_next().await {
            let (name, node) = r.map_err(|e| Error::backend(session.backend(), e))?;
            self.data.insert(name, node?.map(|n| n.data));
        }
        Ok(())
    }
}

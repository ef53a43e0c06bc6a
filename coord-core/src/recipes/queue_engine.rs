//! The queue's engine: the consumer's cache of names, the take loop, and
//! the two ways of taking an item (remove, or lease by claim).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::path;
use crate::primitive::{Child, CreateMode};
use crate::recipes::held::HeldNode;
use crate::recipes::names;
use crate::recipes::pending::PendingNode;
use crate::recipes::queue::{Queue, ITEM_MARKER};
use crate::recipes::queue_reliable::Delivery;
use crate::recipes::retry::{backoff, list_watch_retrying, pause};
use crate::recipes::stats::Stats;
use crate::session::Session;

/// How long a take may wait.
#[derive(Clone, Copy)]
pub(crate) enum Wait {
    No,
    Until(Instant, Duration),
    Forever,
}

pub(crate) struct Stashed {
    name: String,
    data: Vec<u8>,
}

pub(crate) struct Inner {
    pub(crate) session: Session,
    pub(crate) items: String,
    pub(crate) claims: String,
    pub(crate) reliable: bool,
    pub(crate) stats: Stats,
    /// Names from the last listing not tried yet, in order.
    pub(crate) cache: Arc<tokio::sync::Mutex<Cache>>,
    /// Items removed for a take whose future was dropped: the next take
    /// returns them first.
    pub(crate) stash: Mutex<VecDeque<Stashed>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let stashed: Vec<Stashed> = match self.stash.get_mut() {
            Ok(s) => s.drain(..).collect(),
            Err(_) => Vec::new(),
        };
        if stashed.is_empty() {
            return;
        }
        // Removed from the queue for a take that was dropped, and nobody is
        // left to take them here: put them back (at the tail), retrying
        // through connection losses; `Session::close` waits for it.
        let session = self.session.clone();
        let prefix = path::join(&self.items, &names::protected(ITEM_MARKER));
        let s = session.clone();
        session.spawn_work(async move {
            for item in stashed {
                let mut attempt = 0;
                loop {
                    match s
                        .create(&prefix, &item.data, CreateMode::PersistentSequential)
                        .await
                    {
                        Ok(_) => break,
                        Err(e) if e.is_retryable() => pause(&s, &mut attempt).await,
                        Err(e) => {
                            tracing::error!(item = %item.name, error = %e, "could not put a dropped take's item back");
                            break;
                        }
                    }
                }
            }
        });
    }
}

pub(crate) type CacheGuard = tokio::sync::OwnedMutexGuard<Cache>;

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
    data: std::collections::HashMap<String, Option<Vec<u8>>>,
}

impl Cache {
    fn front(&self) -> Option<&String> {
        self.names.front()
    }

    fn pop_front(&mut self) {
        if let Some(n) = self.names.pop_front() {
            self.data.remove(&n);
        }
    }

    fn extend(&mut self, names: Vec<String>) {
        self.names.extend(names);
    }
}

pub(crate) enum Got {
    Plain(Vec<u8>),
    Leased(Delivery),
}

impl Queue {
    /// Names of the sequenced children of `dir`; a missing dir is empty.
    pub(crate) async fn list(&self, dir: &str) -> Result<Vec<String>> {
        let mut attempt = 0;
        loop {
            self.inner.stats.listed();
            match self.inner.session.children(dir).await {
                Ok(c) => return Ok(names_of(c)),
                Err(Error::NotFound { .. }) => return Ok(Vec::new()),
                Err(e) if e.is_retryable() => backoff(&mut attempt).await,
                Err(e) => return Err(e),
            }
        }
    }

    /// Items in order, less the leased ones in reliable mode.
    pub(crate) async fn available(&self) -> Result<Vec<String>> {
        let items = self.list(&self.inner.items).await?;
        if !self.inner.reliable || items.is_empty() {
            return Ok(items);
        }
        let claims = self.list_all(&self.inner.claims).await?;
        Ok(items.into_iter().filter(|n| !claims.contains(n)).collect())
    }

    pub(crate) async fn list_all(&self, dir: &str) -> Result<std::collections::HashSet<String>> {
        self.inner.stats.listed();
        match self.inner.session.children(dir).await {
            Ok(c) => Ok(c.into_iter().map(|c| c.name).collect()),
            Err(Error::NotFound { .. }) => Ok(Default::default()),
            Err(e) => Err(e),
        }
    }

    /// The take loop: try the cached names in order; when they run out,
    /// list once; when the listing is empty, wait per `wait`.
    pub(crate) async fn take_inner(&self, wait: Wait) -> Result<Option<Got>> {
        let inner = &self.inner;
        // Holding the cache also waits out a removal still in flight for a
        // dropped take (its task holds the cache until it has stashed the
        // item), so the stash is checked after it.
        let mut cache = Arc::clone(&inner.cache).lock_owned().await;
        if let Some(item) = inner.stash.lock().ok().and_then(|mut s| s.pop_front()) {
            inner.stats.acquired();
            return Ok(Some(Got::Plain(item.data)));
        }
        loop {
            // The name leaves the cache only once tried: a take dropped
            // mid-try leaves it at the front for the next one.
            while let Some(name) = cache.front().cloned() {
                let got = if inner.reliable {
                    let got = self.try_claim(&name).await?.map(Got::Leased);
                    cache.pop_front();
                    got
                } else {
                    let (got, c) = self.try_remove(&name, cache).await?;
                    cache = c;
                    got.map(Got::Plain)
                };
                if got.is_some() {
                    inner.stats.acquired();
                    return Ok(got);
                }
            }
            let names = self.available().await?;
            if !names.is_empty() {
                cache.extend(names);
                continue;
            }
            if let Wait::No = wait {
                return Ok(None);
            }
            // Empty (or all leased): list again with watches, and wait for
            // a change unless something arrived meanwhile.
            inner.stats.listed();
            let (items, items_changed) = list_watch_retrying(&inner.session, &inner.items).await?;
            let claims_changed = if inner.reliable {
                inner.stats.listed();
                let (claims, w) = list_watch_retrying(&inner.session, &inner.claims).await?;
                let claimed: std::collections::HashSet<_> =
                    claims.into_iter().map(|c| c.name).collect();
                let free: Vec<String> = names_of(items)
                    .into_iter()
                    .filter(|n| !claimed.contains(n))
                    .collect();
                if !free.is_empty() {
                    cache.extend(free);
                    continue;
                }
                Some(w)
            } else {
                let names = names_of(items);
                if !names.is_empty() {
                    cache.extend(names);
                    continue;
                }
                None
            };
            let changed = async {
                match claims_changed {
                    Some(c) => tokio::select! { r = items_changed => r, r = c => r },
                    None => items_changed.await,
                }
            };
            let r = match wait {
                Wait::Until(deadline, d) => {
                    match tokio::time::timeout_at(deadline, changed).await {
                        Ok(r) => r,
                        Err(_) => return Err(Error::Timeout(d)),
                    }
                }
                _ => changed.await,
            };
            match r {
                Ok(()) => inner.stats.woke(),
                Err(e) if e.is_retryable() => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Plain mode: remove the item at the front of `cache`; `None` when
    /// someone else got it. The delete runs in a task that holds the cache
    /// and leaves the item in the stash, so a take dropped mid-delete loses
    /// nothing and the next take returns that item first.
    pub(crate) async fn try_remove(
        &self,
        name: &str,
        mut cache: CacheGuard,
    ) -> Result<(Option<Vec<u8>>, CacheGuard)> {
        let inner = Arc::clone(&self.inner);
        let item_path = path::join(&inner.items, name);
        if !cache.data.contains_key(name) {
            self.read_ahead(&mut cache).await?;
        }
        let Some(Some(data)) = cache.data.get(name).cloned() else {
            // Gone before we could read it: someone else took it.
            cache.pop_front();
            return Ok((None, cache));
        };
        let name = name.to_owned();
        let task_name = name.clone();
        let task = tokio::spawn(async move {
            let mut attempt = 0;
            let mut ambiguous = false;
            let removed = loop {
                match inner.session.delete(&item_path, None).await {
                    Ok(()) => break Ok(true),
                    // After a delete whose answer was lost, "gone" may be our
                    // own delete: deliver (at least once) rather than lose it.
                    Err(Error::NotFound { .. }) => break Ok(ambiguous),
                    Err(e) if e.is_retryable() => {
                        ambiguous = true;
                        backoff(&mut attempt).await;
                    }
                    Err(e) => break Err(e),
                }
            };
            if removed.is_ok() {
                cache.pop_front();
            }
            if let Ok(true) = removed {
                if let Ok(mut s) = inner.stash.lock() {
                    s.push_back(Stashed {
                        name: task_name,
                        data,
                    });
                }
            }
            (removed, cache)
        });
        let (removed, cache) = match task.await {
            Ok(r) => r,
            Err(e) => return Err(Error::backend(self.inner.session.backend(), e)),
        };
        if !removed? {
            return Ok((None, cache));
        }
        let mut stash =
            self.inner.stash.lock().map_err(|_| {
                Error::backend(self.inner.session.backend(), "queue stash poisoned")
            })?;
        let data = stash
            .iter()
            .position(|s| s.name == name)
            .and_then(|i| stash.remove(i))
            .map(|s| s.data);
        Ok((data, cache))
    }

    /// Read the data of the first [`READ_AHEAD`] cached names that lack
    /// it, concurrently (reads pipeline on every backend), so a take costs
    /// one delete instead of a read and a delete. Names found gone are
    /// marked so.
    pub(crate) async fn read_ahead(&self, cache: &mut Cache) -> Result<()> {
        let mut reads = JoinSet::new();
        for name in cache.names.iter().take(READ_AHEAD) {
            if cache.data.contains_key(name) {
                continue;
            }
            let session = self.inner.session.clone();
            let item = path::join(&self.inner.items, name);
            let name = name.clone();
            reads.spawn(async move { (name, session.get(&item).await) });
        }
        while let Some(r) = reads.join_next().await {
            let (name, node) = r.map_err(|e| Error::backend(self.inner.session.backend(), e))?;
            cache.data.insert(name, node?.map(|n| n.data));
        }
        Ok(())
    }

    /// Reliable mode: lease one item by creating its claim. `None` when
    /// someone else holds the lease or the item is gone.
    pub(crate) async fn try_claim(&self, name: &str) -> Result<Option<Delivery>> {
        let inner = &self.inner;
        let claim = path::join(&inner.claims, name);
        let item = path::join(&inner.items, name);
        let mut pending = PendingNode::spawn(
            &inner.session,
            claim,
            inner.session.id().0.into_bytes(),
            CreateMode::Ephemeral,
        );
        match pending.created().await {
            Ok(_) => {}
            Err(Error::AlreadyExists { .. }) => return Ok(None),
            Err(e) => return Err(e),
        }
        let node = match inner.session.get(&item).await {
            Ok(n) => n,
            Err(e) => {
                pending.remove().await;
                return Err(e);
            }
        };
        let Some(node) = node else {
            // Acknowledged by someone else after our listing.
            pending.remove().await;
            return Ok(None);
        };
        let created = pending.take().ok_or_else(|| {
            Error::backend(inner.session.backend(), "lost track of our own claim")
        })?;
        Ok(Some(Delivery {
            claim: HeldNode::new(inner.session.clone(), created),
            item,
            data: node.data,
        }))
    }
}

fn names_of(children: Vec<Child>) -> Vec<String> {
    children
        .into_iter()
        .filter(|c| c.sequence.is_some())
        .map(|c| c.name)
        .collect()
}

impl Got {
    pub(crate) fn plain(self) -> Option<Vec<u8>> {
        match self {
            Got::Plain(d) => Some(d),
            Got::Leased(_) => None,
        }
    }
    pub(crate) fn leased(self) -> Option<Delivery> {
        match self {
            Got::Leased(d) => Some(d),
            Got::Plain(_) => None,
        }
    }
}

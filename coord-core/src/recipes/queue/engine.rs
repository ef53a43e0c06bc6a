//! The queue's engine, run by both [`Queue`](super::Queue) and
//! [`ReliableQueue`](super::ReliableQueue): one handle's state (its cache
//! of names, its stash of removed items), the offer and the reads, and the
//! take loop with its two ways of taking an item (remove it here, or lease
//! it by claim).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::backend::delete::delete_at_least_once;
use crate::backend::node::{Child, CreateMode};
use crate::error::{Error, Result};
use crate::layout;
use crate::machinery::retry::{backoff, list_watch_retrying, pause};
use crate::machinery::stats::Stats;
use crate::machinery::wait::Wait;
use crate::path;
use crate::recipes::queue::cache::Cache;
use crate::recipes::queue::claim::{try_claim, Claim};
use crate::recipes::queue::keys::{now_ms, Arranged, Order};
use crate::session::Session;
use crate::telemetry::{self, Recipe};

struct Stashed {
    name: String,
    data: Vec<u8>,
}

/// How many names a strict consumer reads from the head of the queue per
/// refill, where the server answers from an ordered index
/// ([`Engine::head_only`]).
const HEAD_BATCH: usize = 64;

/// One queue handle's state, shared by its clones.
pub(crate) struct Engine {
    pub(crate) session: Session,
    /// The queue's directory.
    pub(crate) dir: String,
    items: String,
    claims: String,
    reliable: bool,
    /// The order items are taken in (FIFO, priority, delay).
    order: Order,
    /// Take strictly in order, several consumers racing for each next
    /// item, rather than spread over lanes after losing items to another
    /// (see [`Cache::lost`]).
    strict: AtomicBool,
    pub(crate) stats: Stats,
    /// Names from the last listing not tried yet, in order.
    cache: Arc<tokio::sync::Mutex<Cache>>,
    /// Items removed for a take whose future was dropped: the next take
    /// returns them first.
    stash: Mutex<VecDeque<Stashed>>,
}

/// Shows as the queue it serves: `Queue { items, reliable }` (a priority
/// or delay queue's with its `order`).
impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Queue");
        d.field("items", &self.items)
            .field("reliable", &self.reliable);
        if self.order != Order::Fifo {
            d.field("order", &self.order);
        }
        d.finish()
    }
}

impl Drop for Engine {
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
        let (items, order) = (self.items.clone(), self.order);
        let s = session.for_work();
        session.spawn_work(async move {
            for item in stashed {
                // Put back under its old key (priority, due time).
                let prefix = path::join(
                    &items,
                    &(layout::protected(layout::ITEM) + &order.key_of(&item.name)),
                );
                let mut attempt = 0;
                loop {
                    match s
                        .create(&prefix, &item.data, CreateMode::PersistentSequential)
                        .await
                    {
                        Ok(_) => break,
                        Err(e) if e.is_retryable() => pause(&s, &mut attempt).await,
                        Err(e @ Error::OutcomeUnknown { .. }) => {
                            tracing::warn!(target: crate::telemetry::TARGET, item = %item.name, error = %e, "a dropped take's item may or may not be back in the queue (if back, it may be taken already)");
                            break;
                        }
                        Err(e) => {
                            tracing::error!(target: crate::telemetry::TARGET, item = %item.name, error = %e, "could not put a dropped take's item back");
                            break;
                        }
                    }
                }
            }
        });
    }
}

type CacheGuard = tokio::sync::OwnedMutexGuard<Cache>;

/// What a plain take's try at one item found.
enum Removed {
    /// It removed the item: its data.
    Taken(Vec<u8>),
    /// The item was known gone (read ahead as gone); nothing was sent.
    Gone,
    /// The delete found it gone: another consumer took it meanwhile.
    Lost,
}

/// A take's item; a reliable queue's lease is followed by its delivery,
/// not as a hold.
impl telemetry::Outcome for Got {}

/// What a take got.
pub(crate) enum Got {
    /// Plain mode: the item, removed from the queue.
    Plain(Vec<u8>),
    /// Reliable mode: the item, leased (boxed: a claim holds its node).
    Leased(Box<Claim>),
}

impl Engine {
    /// The engine of the queue at `path`, plain or `reliable`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or `/`.
    pub(crate) fn new(session: &Session, path: &str, reliable: bool) -> Result<Self> {
        Self::ordered(session, path, reliable, Order::Fifo)
    }

    /// The engine of the queue at `path`, plain or `reliable`, taking
    /// items in `order`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or `/`.
    pub(crate) fn ordered(
        session: &Session,
        path: &str,
        reliable: bool,
        order: Order,
    ) -> Result<Self> {
        path::validate_non_root(path)?;
        // One lane alone is listed only where that costs the server less
        // than the whole queue, and only for a plain FIFO take: a reliable
        // take also needs the whole list of leases, and the other orders
        // list the whole queue at every take.
        let narrow = session.lists_by_prefix() && !reliable && order == Order::Fifo;
        Ok(Engine {
            session: session.clone(),
            dir: path.to_owned(),
            items: path::join(path, layout::QUEUE_ITEMS),
            claims: path::join(path, layout::QUEUE_CLAIMS),
            reliable,
            order,
            strict: AtomicBool::new(false),
            stats: Stats::new(),
            cache: Arc::new(tokio::sync::Mutex::new(Cache::new(narrow))),
            stash: Mutex::new(VecDeque::new()),
        })
    }

    /// Take strictly in order from now on (see [`Engine::strict`]).
    pub(crate) fn set_strict(&self) {
        self.strict.store(true, Ordering::Relaxed);
    }

    /// Add an item at the tail.
    pub(crate) async fn offer(&self, data: &[u8]) -> Result<()> {
        self.offer_keyed(data, "").await
    }

    /// Add an item whose name carries `key` (see
    /// [`keys`](crate::recipes::queue::keys)) after the item marker.
    pub(crate) async fn offer_keyed(&self, data: &[u8], key: &str) -> Result<()> {
        path::validate_data(data)?;
        let prefix = path::join(&self.items, &(layout::protected(layout::ITEM) + key));
        self.session
            .create(&prefix, data, CreateMode::PersistentSequential)
            .await?;
        Ok(())
    }

    /// The first available item, without taking it.
    pub(crate) async fn peek(&self) -> Result<Option<Vec<u8>>> {
        loop {
            let names = self.available().await?.names;
            if names.is_empty() {
                return Ok(None);
            }
            for name in names {
                if let Some(n) = self.session.get(&path::join(&self.items, &name)).await? {
                    return Ok(Some(n.data));
                }
            }
        }
    }

    /// How many items are in the queue, leased ones included.
    pub(crate) async fn len(&self) -> Result<usize> {
        Ok(self.list(&self.items).await?.len())
    }

    /// The sequenced children of `dir`, by sequence; a missing dir is
    /// empty.
    async fn list(&self, dir: &str) -> Result<Vec<Child>> {
        let mut attempt = 0;
        loop {
            self.stats.listed();
            match self.session.children(dir).await {
                Ok(c) => {
                    self.stats.listed_names(c.len());
                    if dir == self.items {
                        telemetry::queue_depth(&self.session, &self.dir, c.len());
                    }
                    return Ok(c.into_iter().filter(|c| c.sequence.is_some()).collect());
                }
                Err(Error::NotFound { .. }) => return Ok(Vec::new()),
                Err(e) if e.is_retryable() => backoff(&mut attempt).await,
                Err(e) => return Err(e),
            }
        }
    }

    /// Whether a refill reads only the head of the queue: a strict plain
    /// FIFO consumer tries the items in order and never looks past the
    /// first few it has not tried, so where the server answers
    /// `first_children` from an ordered index, reading the whole queue
    /// (every name, for each refill of each consumer) buys nothing.
    fn head_only(&self) -> bool {
        self.strict.load(Ordering::Relaxed)
            && !self.reliable
            && self.order == Order::Fifo
            && self.session.orders_at_server()
    }

    /// The first [`HEAD_BATCH`] sequenced children of `dir`, by sequence;
    /// a missing dir is empty.
    async fn head(&self, dir: &str) -> Result<Vec<Child>> {
        let mut attempt = 0;
        loop {
            self.stats.listed();
            match self.session.first_children(dir, HEAD_BATCH).await {
                Ok(c) => {
                    self.stats.listed_names(c.len());
                    return Ok(c.into_iter().filter(|c| c.sequence.is_some()).collect());
                }
                Err(Error::NotFound { .. }) => return Ok(Vec::new()),
                Err(e) if e.is_retryable() => backoff(&mut attempt).await,
                Err(e) => return Err(e),
            }
        }
    }

    /// The items of one lane (those whose names begin with `prefix`), in
    /// order; a missing dir is empty.
    async fn list_lane(&self, prefix: &str) -> Result<Vec<String>> {
        let mut attempt = 0;
        loop {
            self.stats.listed();
            match self.session.children_prefixed(&self.items, prefix).await {
                Ok(c) => {
                    self.stats.listed_names(c.len());
                    let items = c.into_iter().filter(|c| c.sequence.is_some());
                    return Ok(items.map(|c| c.name).collect());
                }
                Err(Error::NotFound { .. }) => return Ok(Vec::new()),
                Err(e) if e.is_retryable() => backoff(&mut attempt).await,
                Err(e) => return Err(e),
            }
        }
    }

    /// Items in order, less the leased ones in reliable mode (and in delay
    /// order, less those not due yet).
    async fn available(&self) -> Result<Arranged> {
        let items = if self.head_only() {
            self.head(&self.items).await?
        } else {
            self.list(&self.items).await?
        };
        if !self.reliable || items.is_empty() {
            return Ok(self.order.arrange(items, None, now_ms()));
        }
        let claims = self.list_all(&self.claims).await?;
        Ok(self.order.arrange(items, Some(&claims), now_ms()))
    }

    /// Names of every child of `dir`; a missing dir is empty.
    async fn list_all(&self, dir: &str) -> Result<std::collections::HashSet<String>> {
        self.stats.listed();
        match self.session.children(dir).await {
            Ok(c) => {
                self.stats.listed_names(c.len());
                Ok(c.into_iter().map(|c| c.name).collect())
            }
            Err(Error::NotFound { .. }) => Ok(Default::default()),
            Err(e) => Err(e),
        }
    }

    /// Take per `wait`, every step bounded by its deadline: the reads
    /// before the wait retry through connection losses, and with the
    /// server unreachable (a lost quorum) they must not hold a timed take
    /// past its timeout. The take loop is cancel safe, so it is simply
    /// dropped then.
    pub(crate) async fn take(self: &Arc<Self>, wait: Wait) -> Result<Option<Got>> {
        let take = async {
            match wait.within(self.take_loop(wait)).await {
                Some(r) => r,
                None => Err(Error::Timeout(wait.length())),
            }
        };
        let recipe = if self.reliable {
            Recipe::ReliableQueue
        } else {
            Recipe::Queue
        };
        telemetry::operation(recipe, &self.session, &self.dir, take).await
    }

    /// The take loop: try the cached names in order; when they run out,
    /// list once; when the listing is empty, wait per `wait`.
    async fn take_loop(self: &Arc<Self>, wait: Wait) -> Result<Option<Got>> {
        // Holding the cache also waits out a removal still in flight for a
        // dropped take (its task holds the cache until it has stashed the
        // item), so the stash is checked after it.
        let mut cache = Arc::clone(&self.cache).lock_owned().await;
        if let Some(item) = self.stash.lock().ok().and_then(|mut s| s.pop_front()) {
            self.stats.acquired();
            return Ok(Some(Got::Plain(item.data)));
        }
        if self.order != Order::Fifo {
            // An item offered since the last listing may come first (a
            // higher priority, an earlier due time): order by a fresh one.
            cache.clear_names();
        }
        loop {
            // The name leaves the cache only once tried: a take dropped
            // mid-try leaves it at the front for the next one.
            while let Some(name) = cache.front().cloned() {
                let got = if self.reliable {
                    self.stats.attempted();
                    let got = try_claim(&self.session, &self.claims, &self.items, &name)
                        .await?
                        .map(|c| Got::Leased(Box::new(c)));
                    cache.pop_front();
                    got
                } else {
                    let (got, c) = self.try_remove(&name, cache).await?;
                    cache = c;
                    match got {
                        Removed::Taken(data) => Some(Got::Plain(data)),
                        // Known gone without a request: no race.
                        Removed::Gone => continue,
                        Removed::Lost => None,
                    }
                };
                if got.is_some() {
                    cache.won();
                    self.stats.acquired();
                    return Ok(got);
                }
                // Another consumer took it (or holds its lease): unless
                // strict, spread out rather than race it again.
                if !self.strict.load(Ordering::Relaxed) {
                    cache.lost();
                }
            }
            // Done with a lane, where one lane can be listed alone: the
            // next one. (Only a listing of the whole queue finds it empty.)
            if let Some((lane, prefix)) = cache.lane_to_list() {
                let names = self.list_lane(&prefix).await?;
                cache.extend_lane(lane, names);
                continue;
            }
            let names = self.available().await?.names;
            if !names.is_empty() {
                cache.extend(names);
                continue;
            }
            if let Wait::No = wait {
                return Ok(None);
            }
            // Empty (or all leased): list again with watches, and wait for
            // a change unless something arrived meanwhile.
            self.stats.listed();
            let (items, items_changed) = list_watch_retrying(&self.session, &self.items).await?;
            self.stats.listed_names(items.len());
            telemetry::queue_depth(&self.session, &self.dir, items.len());
            let (claims_changed, claimed) = if self.reliable {
                self.stats.listed();
                let (claims, w) = list_watch_retrying(&self.session, &self.claims).await?;
                self.stats.listed_names(claims.len());
                let claimed: std::collections::HashSet<_> =
                    claims.into_iter().map(|c| c.name).collect();
                (Some(w), Some(claimed))
            } else {
                (None, None)
            };
            let Arranged { names, next_due } =
                self.order.arrange(items, claimed.as_ref(), now_ms());
            if !names.is_empty() {
                cache.extend(names);
                continue;
            }
            // Delay order: wake when the earliest item not due yet falls
            // due (by this process's clock), if no change comes first.
            let due = next_due.map(|at| {
                let ms = at.saturating_sub(now_ms()).max(1);
                tokio::time::Instant::now() + std::time::Duration::from_millis(ms)
            });
            let changed = async {
                let timer = async {
                    match due {
                        Some(t) => tokio::time::sleep_until(t).await,
                        None => std::future::pending().await,
                    }
                };
                match claims_changed {
                    Some(c) => tokio::select! {
                        r = items_changed => r,
                        r = c => r,
                        () = timer => Ok(()),
                    },
                    None => tokio::select! {
                        r = items_changed => r,
                        () = timer => Ok(()),
                    },
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
                Ok(()) => self.stats.woke(),
                Err(e) if e.is_retryable() => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Plain mode: remove the item at the front of `cache`. The delete
    /// runs in a task that holds the cache and leaves the item in the
    /// stash, so a take dropped mid-delete loses nothing and the next take
    /// returns that item first.
    ///
    /// Where the backend takes a node and its data in one request
    /// ([`Session::takes_leaf_at_once`]), that is the whole try; otherwise
    /// the data is read ahead (pipelined, for the next items too) and the
    /// item is then deleted.
    async fn try_remove(
        self: &Arc<Self>,
        name: &str,
        mut cache: CacheGuard,
    ) -> Result<(Removed, CacheGuard)> {
        let inner = Arc::clone(self);
        let item_path = path::join(&inner.items, name);
        let read = if self.session.takes_leaf_at_once() {
            None
        } else {
            if cache.data(name).is_none() {
                cache.read_ahead(&self.session, &self.items).await?;
            }
            let Some(Some(data)) = cache.data(name).cloned() else {
                // Gone before we could read it: someone else took it.
                cache.pop_front();
                return Ok((Removed::Gone, cache));
            };
            Some(data)
        };
        let name = name.to_owned();
        let task_name = name.clone();
        self.stats.attempted();
        let task = tokio::spawn(async move {
            let session = &inner.session;
            let removed = match read {
                Some(data) => delete_at_least_once(|| session.delete(&item_path, None))
                    .await
                    .map(|ours| ours.then_some(data)),
                None => session.take_leaf(&item_path).await,
            };
            if removed.is_ok() {
                cache.pop_front();
            }
            let removed = removed.map(|data| match data {
                Some(data) => {
                    if let Ok(mut s) = inner.stash.lock() {
                        s.push_back(Stashed {
                            name: task_name,
                            data,
                        });
                    }
                    true
                }
                None => false,
            });
            (removed, cache)
        });
        let (removed, cache) = match task.await {
            Ok(r) => r,
            Err(e) => return Err(Error::backend(self.session.backend(), e)),
        };
        if !removed? {
            return Ok((Removed::Lost, cache));
        }
        let mut stash = self
            .stash
            .lock()
            .map_err(|_| Error::backend(self.session.backend(), "queue stash poisoned"))?;
        let data = stash
            .iter()
            .position(|s| s.name == name)
            .and_then(|i| stash.remove(i))
            .map(|s| s.data);
        // Not in the stash: returned already (by a take that ran while
        // this one's future was parked); nothing more to do for this name.
        Ok((data.map_or(Removed::Gone, Removed::Taken), cache))
    }
}

impl Got {
    pub(crate) fn plain(self) -> Option<Vec<u8>> {
        match self {
            Got::Plain(d) => Some(d),
            Got::Leased(_) => None,
        }
    }
    pub(crate) fn leased(self) -> Option<Claim> {
        match self {
            Got::Leased(d) => Some(*d),
            Got::Plain(_) => None,
        }
    }
}

//! [`Semaphore`], N leases, and [`SemaphoreMutex`], the non-reentrant mutex
//! on top of it.

use std::time::Duration;

use async_trait::async_trait;

use crate::backend::node::CreateMode;
use crate::error::{Error, Result};
use crate::hold::contenders::{self, Contender, ContenderState};
use crate::hold::held::HeldNode;
use crate::layout;
use crate::machinery::pending::PendingNode;
use crate::machinery::stats::Stats;
use crate::machinery::wait::Wait;
use crate::path;
use crate::recipes::lock::exclusive::Lock;
use crate::recipes::lock::guard::LockGuard;
use crate::recipes::lock::lockable::Lockable;
use crate::session::Session;
use crate::telemetry::{self, Recipe};

/// A distributed semaphore (Curator's `InterProcessSemaphoreV2`): at most
/// `max_leases` leases are held at once, across every process. Made by
/// [`Semaphore::new`]`(session, path, max_leases)` (every process must
/// agree on `max_leases`); take leases with [`Semaphore::acquire`]
/// (`try_acquire`, `acquire_timeout`), each a [`Lease`], and give them back
/// with [`Lease::release`] or [`Semaphore::return_all`]. For a one-lease
/// lock that is a [`Lockable`], see [`SemaphoreMutex`].
///
/// Layout as Curator's, so Curator processes share the semaphore:
/// `<path>/locks` is an internal [`Lock`] that queues the acquirers who
/// must wait, and `<path>/leases` holds one ephemeral-sequential node per
/// lease (`_c_<uuid>-lease-<seq>`). A holder's leases die with its session.
///
/// `acquire(qty, ..)` is all or nothing: on timeout, error or cancel, the
/// leases taken so far are returned.
// How a lease is taken: first without the internal lock: create the lease
// node, list the leases (the first `max_leases + 1` of them: enough to
// count up to `max_leases`); at most `max_leases`, it is kept (two round trips,
// one on ZooKeeper, whose FIFO connection lets the listing follow the
// create unanswered; one more to return it). Otherwise the node is deleted
// and the lease is taken as Curator takes every lease: holding the internal
// lock, create the lease node, count the leases, keep it at most
// `max_leases`, else wait for the lease directory to change, then let go of
// the lock.
//
// Why the fast path never grants more than `max_leases`: every acquirer,
// fast, locked or Curator's, decides on a listing made after its own node
// exists (one that shows its node), and keeps it only if that listing
// counts at most `max_leases`.
// Take any `max_leases + 1` nodes held at one moment, and among them the
// one created last in the server's order of writes. Its listing was read
// from a state that holds its own create, so every earlier write, so
// every other of those nodes (each made before it, and deleted only after
// that moment, later than the listing): it counted more than
// `max_leases`, and was never kept. The internal lock plays no part in
// this; it only orders the waiting.
//
// Why a waiter is not starved: a fast attempt keeps its node only when
// its listing, which holds the node of the waiter counting under the
// internal lock (ours or Curator's; it was made earlier), counts at most
// `max_leases`, so that waiter fits too, and the attempt's create wakes
// it to list again. A fast attempt that does not fit leaves a node in
// the directory for a moment: a waiter that counts it waits for the next
// change, the attempt's delete, and lists again — delayed, never
// miscounted for good. Having failed, the attempt queues on the internal
// lock behind the waiters, so each acquirer delays a waiter at most once.
// An acquirer queued on the lock, with no lease node yet, can be passed
// by a fast attempt while a lease is free: the fairness Curator's lock
// gives is kept from the head of the queue on.
#[derive(Debug, Clone)]
pub struct Semaphore {
    session: Session,
    dir: String,
    leases_dir: String,
    lock: Lock,
    max_leases: u32,
    data: Vec<u8>,
    stats: Stats,
    /// Protection ids of returned lease nodes, to name the next ones with
    /// ([`layout::Ids`]; shared by clones).
    ids: layout::Ids,
}

/// One lease of a [`Semaphore`]; return it with [`Lease::release`] (or
/// [`Semaphore::return_all`]). Dropping it returns it in the background.
#[must_use = "dropping a lease returns it"]
#[derive(Debug)]
pub struct Lease(HeldNode);

impl Lease {
    /// The lease node's name (its last path segment).
    pub fn node_name(&self) -> &str {
        path::name(self.0.path())
    }

    /// The lease node's full path.
    pub fn path(&self) -> &str {
        self.0.path()
    }

    /// The lease node's stamp: its fencing token.
    pub fn fencing_token(&self) -> u64 {
        self.0.fencing_token()
    }

    /// The data stored in the lease node, read from the server.
    ///
    /// # Errors
    /// [`Error::LockLost`] when the lease is gone; session errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn data(&self) -> Result<Vec<u8>> {
        match self.0.session().get(self.0.path()).await? {
            Some(n) => Ok(n.data),
            None => Err(Error::LockLost {
                path: self.0.path().to_owned(),
            }),
        }
    }

    /// Resolve when the lease is lost (the session ended, or the node was deleted), with the reason.
    ///
    /// # Errors
    /// None: it resolves *to* the reason the hold was lost.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn lost(&self) -> Error {
        self.0.lost().await
    }

    /// Return the lease.
    ///
    /// # Errors
    /// [`Error::LockLost`] when it had already been lost; session errors.
    ///
    /// # Cancel safety
    /// Cancel safe in effect: dropped, it is returned in the background.
    pub async fn release(self) -> Result<()> {
        self.0.release().await
    }
}

crate::hold::impl_hold!(Lease, |l| &l.0, release);

impl telemetry::Outcome for Lease {
    fn holds(&mut self, f: &mut dyn FnMut(&mut dyn telemetry::Follow)) {
        f(&mut self.0);
    }
}

impl Semaphore {
    /// A semaphore at `path` with `max_leases` leases. Every process using
    /// the semaphore must agree on `max_leases`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`]; [`Error::InvalidArgument`] for 0 leases.
    pub fn new(session: &Session, path: &str, max_leases: u32) -> Result<Self> {
        path::validate_non_root(path)?;
        if max_leases == 0 {
            return Err(Error::InvalidArgument(
                "a semaphore needs at least one lease".into(),
            ));
        }
        let stats = Stats::new();
        Ok(Semaphore {
            session: session.clone(),
            dir: path.to_owned(),
            leases_dir: path::join(path, layout::SEMAPHORE_LEASES),
            lock: Lock::new(session, &path::join(path, layout::SEMAPHORE_LOCKS))?
                .with_stats(stats.clone()),
            max_leases,
            data: Vec::new(),
            stats,
            ids: layout::Ids::default(),
        })
    }

    /// Data to store in each lease node (Curator's `setNodeData`): any
    /// bytes (`&str`, `String`, `&[u8]`, `Vec<u8>`, `b"…"`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when larger than [`path::MAX_DATA_LEN`].
    pub fn with_data(mut self, data: impl AsRef<[u8]>) -> Result<Self> {
        let data = data.as_ref();
        path::validate_data(data)?;
        // Waiters queue on the internal lock: its nodes carry the data too,
        // so a waiter's data can be listed (`participants`).
        self.lock = self.lock.with_data(data)?;
        self.data = data.to_vec();
        Ok(self)
    }

    /// Count into shared `stats` (the internal lock counts there too).
    #[doc(hidden)]
    pub fn with_stats(mut self, stats: Stats) -> Self {
        self.lock = self.lock.with_stats(stats.clone());
        self.stats = stats;
        self
    }

    /// This handle's counters.
    #[doc(hidden)]
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The semaphore's directory.
    pub fn path(&self) -> &str {
        &self.dir
    }

    /// Every lease holder, then every acquirer still waiting, in order,
    /// each once (Curator's `getParticipantNodes` lists only the lease
    /// nodes).
    ///
    /// Waiters queue on the semaphore's internal lock; the first of them
    /// counts the leases, and while there is no room its own lease node is
    /// one beyond `max_leases` — it is listed once, as the waiter it is
    /// (its lock node carries the same data). A lease node made after that
    /// waiter's is kept only if the waiter fits too (see the type's docs),
    /// so while it waits, the first `max_leases` lease nodes are the
    /// holders'. An acquirer caught in the instant between taking a lease
    /// that fits and letting go of the internal lock is listed both holding
    /// and waiting; a fast attempt that does not fit, caught in the instant
    /// between its create and its delete, may be listed holding in place
    /// of a holder made after it.
    ///
    /// # Errors
    /// The session's errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn participants(&self) -> Result<Vec<Contender>> {
        let mut holders = contenders::list(&self.session, &self.leases_dir, &|_, _| false).await?;
        // Beyond max_leases: the counting waiter's lease, listed below as
        // the waiter through its lock node.
        holders.truncate(self.max_leases as usize);
        let mut waiting = self.lock.participants().await?;
        for w in &mut waiting {
            w.state = ContenderState::Waiting;
        }
        holders.append(&mut waiting);
        Ok(holders)
    }

    /// The most leases held at once.
    pub fn max_leases(&self) -> u32 {
        self.max_leases
    }

    fn check_qty(&self, qty: u32) -> Result<()> {
        if qty == 0 || qty > self.max_leases {
            return Err(Error::InvalidArgument(format!(
                "cannot acquire {qty} leases of a semaphore with {}",
                self.max_leases
            )));
        }
        Ok(())
    }

    /// The internal lock, per `wait` (`Err(Timeout(d))` past its
    /// deadline); reported as part of the semaphore's acquire, not as a
    /// lock of its own.
    async fn take_lock(&self, wait: Wait) -> Result<Option<LockGuard>> {
        self.lock.acquire_quietly(wait).await
    }

    /// Start creating a lease node (deleted unless taken), named with
    /// the protection id returned with it.
    fn create_lease(&self) -> (PendingNode, uuid::Uuid) {
        let id = self.ids.take();
        let prefix = path::join(&self.leases_dir, &layout::protected_with(id, layout::LEASE));
        let pending = PendingNode::spawn(
            &self.session,
            prefix,
            self.data.clone(),
            CreateMode::EphemeralSequential,
        );
        (pending, id)
    }

    /// Keep the created lease node (named with `id`) as a lease.
    fn keep(&self, pending: PendingNode, id: uuid::Uuid) -> Option<Lease> {
        pending
            .take()
            .map(|n| Lease(HeldNode::new(self.session.clone(), n).lending(&self.ids, id)))
    }

    /// One lease, without the internal lock if there is room now (see the
    /// type's docs), else holding it; `None` when `Wait::No` finds no room.
    async fn one_lease(&self, wait: Wait) -> Result<Option<Lease>> {
        match self.fast_lease().await? {
            Some(lease) => Ok(Some(lease)),
            None => self.locked_lease(wait).await,
        }
    }

    /// The fast path: create a lease node, read the first `max_leases + 1`
    /// leases, keep the node if they are at most `max_leases` (then they
    /// are all of them). `None` when they are more: our node is deleted
    /// first (retried until done), so a waiter that counts it only waits
    /// for that delete.
    async fn fast_lease(&self) -> Result<Option<Lease>> {
        let (mut pending, id) = self.create_lease();
        // Whether there is room needs no more than `max_leases + 1` names:
        // a backend with an ordered index reads only those
        // (`first_children`), however many wait. The create's request is
        // issued already (PendingNode::spawn polls it once): read right
        // behind it, as the lock does. On a FIFO connection (ZooKeeper) the
        // read sees our node, saving a round trip; a read that shows room
        // but not our node may predate our create, so it is no ground for
        // a grant: read again. On an error, `pending` is dropped: its node
        // is deleted in the background.
        let over = self.max_leases as usize + 1;
        let (created, first) = tokio::join!(
            pending.created(),
            self.session.first_children(&self.leases_dir, over)
        );
        let me = path::name(&created?.path).to_owned();
        let head = match first {
            Ok(c) if c.len() >= over || c.iter().any(|c| c.name == me) => c,
            _ => self.session.first_children(&self.leases_dir, over).await?,
        };
        if head.len() < over {
            // Every lease is in `head`: ours must be there.
            if !head.iter().any(|c| c.name == me) {
                return Err(Error::LockLost {
                    path: path::join(&self.leases_dir, &me),
                });
            }
            let lease = self.keep(pending, id);
            if lease.is_some() {
                self.stats.acquired();
            }
            return Ok(lease);
        }
        pending.remove().await;
        Ok(None)
    }

    /// One lease while holding the internal lock, waiting per `wait` (as
    /// Curator takes each lease); `None` when `Wait::No` finds no room.
    async fn locked_lease(&self, wait: Wait) -> Result<Option<Lease>> {
        let Some(guard) = self.take_lock(wait).await? else {
            return Ok(None);
        };
        let (mut pending, id) = self.create_lease();
        let me = path::name(&pending.created().await?.path).to_owned();
        let outcome = loop {
            let (children, changed) = self.session.children_watch(&self.leases_dir).await?;
            if !children.iter().any(|c| c.name == me) {
                break Err(Error::LockLost {
                    path: path::join(&self.leases_dir, &me),
                });
            }
            if children.len() <= self.max_leases as usize {
                break Ok(true);
            }
            let blocked = self.stats.blocked();
            match wait {
                Wait::No => break Ok(false),
                Wait::Forever => changed.await?,
                Wait::Until(deadline, d) => {
                    match tokio::time::timeout_at(deadline, changed).await {
                        Ok(r) => r?,
                        Err(_) => break Err(Error::Timeout(d)),
                    }
                }
            }
            drop(blocked);
            self.stats.woke();
        };
        let lease = match outcome {
            Ok(true) => self.keep(pending, id),
            Ok(false) => {
                pending.remove().await;
                None
            }
            Err(e) => {
                pending.remove().await;
                let _ = guard.release().await;
                return Err(e);
            }
        };
        guard.release().await?;
        if lease.is_some() {
            self.stats.acquired();
        }
        Ok(lease)
    }

    async fn acquire_inner(&self, qty: u32, wait: Wait) -> Result<Option<Vec<Lease>>> {
        self.check_qty(qty)?;
        let acquire = self.leases(qty, wait);
        telemetry::operation(Recipe::Semaphore, &self.session, &self.dir, acquire).await
    }

    /// `qty` leases per `wait`, all or nothing.
    async fn leases(&self, qty: u32, wait: Wait) -> Result<Option<Vec<Lease>>> {
        let mut got = Vec::with_capacity(qty as usize);
        for _ in 0..qty {
            match self.one_lease(wait).await {
                Ok(Some(l)) => got.push(l),
                Ok(None) => {
                    Self::return_all(got).await?;
                    return Ok(None);
                }
                Err(e) => {
                    let _ = Self::return_all(got).await;
                    return Err(e);
                }
            }
        }
        Ok(Some(got))
    }

    /// Wait for `qty` leases, all or nothing.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for 0 or more than `max_leases`; the
    /// session's end; connection and backend errors. On any error the
    /// leases taken so far are returned.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped at any point, every lease node it made is
    /// deleted (in the background).
    pub async fn acquire(&self, qty: u32) -> Result<Vec<Lease>> {
        self.acquire_inner(qty, Wait::Forever)
            .await?
            .ok_or_else(|| Error::backend(self.session.backend(), "wait ended without leases"))
    }

    /// `qty` leases only if they are free now; `None` otherwise (nothing is
    /// held then).
    ///
    /// # Errors
    /// As [`Semaphore::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn try_acquire(&self, qty: u32) -> Result<Option<Vec<Lease>>> {
        self.acquire_inner(qty, Wait::No).await
    }

    /// Wait at most `timeout` for `qty` leases, all or nothing.
    ///
    /// # Errors
    /// [`Error::Timeout`] with nothing held; otherwise as
    /// [`Semaphore::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn acquire_timeout(&self, qty: u32, timeout: Duration) -> Result<Vec<Lease>> {
        self.acquire_inner(qty, Wait::timeout(timeout)?)
            .await?
            .ok_or(Error::Timeout(timeout))
    }

    /// Return every lease given (Curator's `returnAll`). Leases already
    /// lost are skipped.
    ///
    /// # Errors
    /// The first error other than "already lost"; the rest are still
    /// returned.
    ///
    /// # Cancel safety
    /// Cancel safe in effect: leases not yet returned are returned in the
    /// background when dropped.
    pub async fn return_all(leases: impl IntoIterator<Item = Lease>) -> Result<()> {
        let mut first = None;
        for l in leases {
            if let Err(e) = l.0.discard().await {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

/// A non-reentrant mutex built on a one-lease [`Semaphore`] (Curator
/// `InterProcessSemaphoreMutex`, same layout), made by
/// [`SemaphoreMutex::new`]`(session, path)`: a [`Lockable`] whose holds are
/// [`LockGuard`]s. Unlike [`Lock`], even the same handle cannot take it
/// twice.
#[derive(Debug, Clone)]
pub struct SemaphoreMutex {
    sem: Semaphore,
}

impl SemaphoreMutex {
    /// A mutex at `path`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`].
    pub fn new(session: &Session, path: &str) -> Result<Self> {
        Ok(SemaphoreMutex {
            sem: Semaphore::new(session, path, 1)?,
        })
    }

    /// Count into shared `stats`.
    #[doc(hidden)]
    pub fn with_stats(mut self, stats: Stats) -> Self {
        self.sem = self.sem.with_stats(stats);
        self
    }

    /// This handle's counters.
    #[doc(hidden)]
    pub fn stats(&self) -> &Stats {
        self.sem.stats()
    }

    fn guard(mut leases: Vec<Lease>) -> Option<LockGuard> {
        leases.pop().map(|l| LockGuard::from_held(l.0))
    }

    /// Wait until held.
    ///
    /// # Errors
    /// As [`Semaphore::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn acquire(&self) -> Result<LockGuard> {
        Self::guard(self.sem.acquire(1).await?)
            .ok_or_else(|| Error::backend(self.sem.session.backend(), "no lease granted"))
    }

    /// Take it only if free now.
    ///
    /// # Errors
    /// As [`Semaphore::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        Ok(self.sem.try_acquire(1).await?.and_then(Self::guard))
    }

    /// Wait at most `timeout`.
    ///
    /// # Errors
    /// [`Error::Timeout`]; otherwise as [`Semaphore::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        Self::guard(self.sem.acquire_timeout(1, timeout).await?).ok_or(Error::Timeout(timeout))
    }
}

#[async_trait]
impl Lockable for SemaphoreMutex {
    fn path(&self) -> &str {
        &self.sem.dir
    }
    fn session(&self) -> &Session {
        &self.sem.session
    }
    async fn acquire(&self) -> Result<LockGuard> {
        SemaphoreMutex::acquire(self).await
    }
    async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        SemaphoreMutex::try_acquire(self).await
    }
    async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        SemaphoreMutex::acquire_timeout(self, timeout).await
    }
    async fn participants(&self) -> Result<Vec<Contender>> {
        self.sem.participants().await
    }
}

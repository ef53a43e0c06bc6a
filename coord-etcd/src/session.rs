//! A coord session on etcd: a lease kept alive by a background task, and
//! the primitive operations as Txns, ranges and watches.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use coord_core::backoff::Backoff;
use coord_core::{
    Child, CreateMode, Created, Error, Fence, LeaseClock, Node, Op, OpResult, PrimitiveSession,
    Result, Session, SessionId, SessionState, Stat, TreeWatch, Watch,
};
use etcd_client::{Client, GetOptions, Txn, TxnOp, TxnOpResponse};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::error::{self, BACKEND};
use crate::keys::{direct_child, sequential_suffix, KeySpace};
use crate::lease::keep_alive;
use crate::options::EtcdOptions;
use crate::shared::Shared;
use crate::slots::Slots;
use crate::txn::{self, stat_of, urev, CreatePlan, DeletePlan, FenceKey, Plan, SetPlan};

/// Open a session on the etcd cluster described by `options`: connect,
/// grant a lease whose TTL is the session timeout and keep it alive in the
/// background.
///
/// ```no_run
/// # async fn demo() -> coord_core::Result<()> {
/// use coord_core::CreateMode;
/// use coord_etcd::EtcdOptions;
///
/// let session = coord_etcd::connect(EtcdOptions::new(["http://127.0.0.1:2379"])).await?;
/// session.create("/jobs/nightly", b"owner-1", CreateMode::Ephemeral).await?;
/// session.close().await?;
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] for options that cannot work, before any I/O
/// (no endpoint; a session timeout of zero or over
/// [`coord_core::limits::MAX_SESSION_TIMEOUT`]; a request or connect
/// timeout of zero or over [`crate::MAX_REQUEST_TIMEOUT`]; bad TLS
/// settings, or a TLS file that cannot be read or holds no PEM block of
/// its kind);
/// [`Error::Unauthenticated`] when the server refuses the user name or
/// password, wants credentials, or the TLS handshake fails on trust: its
/// certificate is not trusted (hint: `ca=`), does not carry the name
/// checked (`server_name=`), or it refuses our client certificate or its
/// absence (`cert=`/`key=`);
/// [`Error::ConnectionLost`] when no endpoint answers within the
/// request timeout, or one side speaks TLS and the other does not (the
/// message says which); [`Error::Backend`] for anything else the client or
/// the server says (a malformed endpoint, say).
///
/// # Cancel safety
/// Cancel safe in effect: dropped after the lease was granted, nothing keeps
/// the lease alive and the server drops it after its TTL.
pub async fn connect(options: EtcdOptions) -> Result<Session> {
    options.check()?;
    // The TLS files are read before any I/O: a bad one is InvalidArgument.
    let tls = options.effective_tls();
    let material = tls.as_ref().map(coord_core::TlsOptions::load).transpose()?;
    let client_options = options.client_options(material.as_ref())?;
    let endpoints = options.dial_endpoints(material.is_some());
    let timeout = options.get_request_timeout();
    let client = match tokio::time::timeout(
        timeout,
        Client::connect(&endpoints, Some(client_options)),
    )
    .await
    {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            return Err(error::map_connect(
                e,
                &endpoints,
                material.as_ref(),
                options.get_connect_timeout(),
            )
            .await)
        }
        Err(_) => return Err(error::timed_out(timeout)),
    };
    // Granting twice would leak a lease, so only a request that never left
    // (a member the client cannot connect to) is sent again.
    let started = Instant::now();
    let deadline = started.checked_add(timeout).unwrap_or(started);
    // A fixed pause (first = cap), jittered.
    const GRANT_RETRY: Backoff =
        Backoff::new(Duration::from_millis(100), Duration::from_millis(100));
    let mut attempt = 0;
    let (grant, sent) = loop {
        let mut lease_client = client.lease_client();
        let left = deadline.saturating_duration_since(Instant::now());
        let sent = tokio::time::Instant::now();
        match tokio::time::timeout(left, lease_client.grant(options.lease_ttl_secs(), None)).await {
            Ok(Ok(g)) => break (g, sent),
            // A TLS handshake refused or a protocol mismatch: trying again
            // cannot help, say what to fix at once.
            Ok(Err(e)) if error::tls_error(&e, material.is_some()).is_some() => {
                return Err(error::map_connect(e, &[], material.as_ref(), timeout).await)
            }
            Ok(Err(e))
                if error::never_sent(&e)
                    && deadline.saturating_duration_since(Instant::now()) > GRANT_RETRY.cap() =>
            {
                tokio::time::sleep(GRANT_RETRY.next(&mut attempt)).await;
            }
            // Unreachable everywhere: say why (refused, no route, …).
            Ok(Err(e)) => {
                let probe = options.get_connect_timeout().min(left_after(deadline));
                return Err(error::map_connect(e, &endpoints, material.as_ref(), probe).await);
            }
            Err(_) => return Err(error::timed_out(timeout)),
        }
    };
    // The TTL the server granted (it may raise a short one to its minimum),
    // kept within what coord accepts whatever the server says.
    let granted = u64::try_from(grant.ttl()).unwrap_or(0).max(1);
    let ttl = Duration::from_secs(granted).min(coord_core::limits::MAX_SESSION_TIMEOUT);
    let (state, _) = watch::channel(SessionState::Connected);
    let shared = Arc::new(Shared {
        client,
        keys: KeySpace::new(options.get_namespace()),
        lease: grant.id(),
        ttl,
        clock: LeaseClock::new(ttl, sent),
        request_timeout: timeout,
        state,
        seen: AtomicI64::new(0),
        closing: AtomicBool::new(false),
        beat_now: tokio::sync::Notify::new(),
        requests: AtomicU64::new(0),
        authenticates: options.get_user().is_some(),
        auth_epoch: AtomicU64::new(0),
        auth_refresh: tokio::sync::Mutex::new(()),
    });
    tracing::debug!(lease = %format!("{:x}", grant.id()), ?ttl, "etcd session opened");
    let keep_alive = tokio::spawn(keep_alive(shared.clone()));
    Ok(Session::new(Arc::new(EtcdSession {
        shared,
        counter: AtomicU64::new(0),
        keep_alive: Mutex::new(Some(keep_alive)),
        in_flight: Mutex::new(Vec::new()),
        in_flight_ids: AtomicU64::new(0),
        slots: Mutex::new(Slots::default()),
        deleting: Mutex::new(Vec::new()),
        gone: Mutex::new(std::collections::VecDeque::new()),
        dirs: Mutex::new(std::collections::HashSet::new()),
    })))
}

/// The time left until `deadline`, at least 500 ms (a probe of why the
/// connection failed gets that long, even at the deadline).
fn left_after(deadline: Instant) -> Duration {
    deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(500))
}

/// The [`PrimitiveSession`] for etcd.
struct EtcdSession {
    shared: Arc<Shared>,
    /// Numbers the sequential creates of this session (see
    /// [`sequential_suffix`]).
    counter: AtomicU64,
    keep_alive: Mutex<Option<JoinHandle<()>>>,
    /// Contender creates in flight, whose Txn also lists the siblings: a
    /// `children` of the same directory issued meanwhile takes that listing
    /// instead of a round trip of its own (see [`EtcdSession::create`]).
    in_flight: Mutex<Vec<InFlight>>,
    in_flight_ids: AtomicU64,
    /// Names of deleted contender nodes, lent to the next create at the
    /// same prefix ([`crate::slots`]).
    slots: Mutex<Slots>,
    /// Paths of this session's contender nodes whose delete is in flight
    /// (see [`EtcdSession::list`]).
    deleting: Mutex<Vec<String>>,
    /// The last [`GONE_KEPT`] contender nodes this session deleted (or
    /// found gone), as path and create revision (see
    /// [`EtcdSession::list`]).
    gone: Mutex<std::collections::VecDeque<(String, u64)>>,
    /// Keys of directories this session last created under and found
    /// there, not ephemeral: a create under one compares it alone
    /// ([`txn::CreatePlan::parent_known`]). Forgotten when that fails.
    dirs: Mutex<std::collections::HashSet<String>>,
}

/// How many directories [`EtcdSession::dirs`] holds before it starts over.
const DIRS_KEPT: usize = 1024;

/// How many of its deleted contender nodes a session remembers to leave
/// out of its listings: a listing read before a delete landed can only be
/// a few requests old.
const GONE_KEPT: usize = 64;

/// Registers a contender node's delete in flight in
/// [`EtcdSession::deleting`] until it ends, however it ends.
struct DeletingGuard<'a> {
    session: &'a EtcdSession,
    path: Option<String>,
}

impl<'a> DeletingGuard<'a> {
    fn new(session: &'a EtcdSession, path: &str, own: bool) -> Self {
        let path = own.then(|| path.to_owned());
        if let (Some(p), Ok(mut list)) = (&path, session.deleting.lock()) {
            list.push(p.clone());
        }
        DeletingGuard { session, path }
    }
}

impl Drop for DeletingGuard<'_> {
    fn drop(&mut self) {
        let (Some(p), Ok(mut list)) = (&self.path, self.session.deleting.lock()) else {
            return;
        };
        if let Some(i) = list.iter().position(|d| d == p) {
            list.swap_remove(i);
        }
    }
}

/// A listing of a directory's children and the revision it was read at.
type Listing = Arc<(Vec<Child>, i64)>;

/// What a contender create in flight will tell: `None` while in flight,
/// then `Some(listing)` (`Some(None)`: failed, or no listing).
type ListingSlot = Option<Option<Listing>>;

/// One contender create in flight, by the directory it creates in.
struct InFlight {
    id: u64,
    dir: String,
    listing: watch::Receiver<ListingSlot>,
}

/// Unregisters an [`InFlight`] when its create ends, however it ends.
struct InFlightGuard<'a> {
    session: &'a EtcdSession,
    id: u64,
    tx: watch::Sender<ListingSlot>,
}

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        self.tx.send_if_modified(|slot| {
            if slot.is_none() {
                *slot = Some(None);
                true
            } else {
                false
            }
        });
        if let Ok(mut list) = self.session.in_flight.lock() {
            list.retain(|f| f.id != self.id);
        }
    }
}

/// The direct children under `prefix` among `kvs`, in creation order.
/// Every key has a create revision, so every child (ours or made by
/// another etcd client) carries a sequence.
fn children_of(prefix: &str, kvs: &[etcd_client::KeyValue]) -> Vec<Child> {
    let mut children: Vec<(i64, String)> = kvs
        .iter()
        .filter_map(|kv| {
            let key = std::str::from_utf8(kv.key()).ok()?;
            direct_child(prefix, key).map(|name| (kv.create_revision(), name.to_owned()))
        })
        .collect();
    children.sort();
    children
        .into_iter()
        .map(|(rev, name)| Child::new(name, Some(urev(rev))))
        .collect()
}

/// Whether `path` is the child `name` of `dir`, compared without building
/// the child's path (a queue's listing may hold thousands of children).
fn is_child(dir: &str, name: &str, path: &str) -> bool {
    let rest = path.strip_prefix(dir);
    let rest = match dir {
        "/" => rest,
        _ => rest.and_then(|r| r.strip_prefix('/')),
    };
    rest == Some(name)
}

/// The parent of a path (`/` for a top-level node).
fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

impl EtcdSession {
    fn stop_keep_alive(&self) {
        let handle = match self.keep_alive.lock() {
            Ok(mut h) => h.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(h) = handle {
            h.abort();
        }
    }

    /// A TTL node's create: a lease of its own (see `crate::ttl`), revoked
    /// again if the create fails.
    async fn create_ttl(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        ttl: Duration,
    ) -> Result<Created> {
        self.shared.check_open()?;
        let lease = crate::ttl::grant(&self.shared, ttl).await?;
        let mut plan = self.create_plan(path, data, mode);
        plan.lease = lease;
        // A key found on this fresh lease after a lost answer is this
        // create's.
        plan.own_lease = lease;
        match self.write(Plan::Create(plan), None).await {
            Ok(OpResult::Created(c)) => Ok(c),
            Ok(_) => Err(error::unexpected("a create that did not create")),
            Err(e) => {
                crate::ttl::revoke(&self.shared, lease).await;
                Err(e)
            }
        }
    }

    /// The create revision of this session's node at `path` when its name
    /// may be lent again (see [`crate::slots`]).
    fn created(&self, path: &str) -> Option<i64> {
        self.slots.lock().ok()?.created(path)
    }

    /// A delete of `path` (of the node with `created`) was answered: a node
    /// deleted or found gone lends its name again.
    fn deleted<T>(&self, path: &str, created: Option<i64>, done: &Result<T>) {
        let Some(created) = created else { return };
        if matches!(done, Ok(_) | Err(Error::NotFound { .. })) {
            if let Ok(mut gone) = self.gone.lock() {
                if gone.len() >= GONE_KEPT {
                    gone.pop_front();
                }
                gone.push_back((path.to_owned(), txn::urev(created)));
            }
            if let Ok(mut slots) = self.slots.lock() {
                slots.gone(path, created);
            }
        }
    }

    /// Send one create (see [`PrimitiveSession::create`] for
    /// [`EtcdSession`]): a contender's also lists its siblings.
    async fn create_once(&self, mut plan: CreatePlan, mode: CreateMode) -> Result<Created> {
        let parent = parent_of(&plan.path).to_owned();
        let in_flight = if mode == CreateMode::EphemeralSequential && parent != "/" {
            plan.list_siblings = Some(self.shared.keys.child_prefix(&parent));
            let (tx, listing) = watch::channel(None);
            let id = self.in_flight_ids.fetch_add(1, Ordering::Relaxed);
            if let Ok(mut list) = self.in_flight.lock() {
                list.push(InFlight {
                    id,
                    dir: parent,
                    listing,
                });
            }
            Some(InFlightGuard {
                session: self,
                id,
                tx,
            })
        } else {
            None
        };
        let (done, listing) = self.write_listing(Plan::Create(plan), None).await?;
        if let (Some(guard), Some(listing)) = (&in_flight, listing) {
            guard.tx.send_replace(Some(Some(listing)));
        }
        match done {
            OpResult::Created(c) => Ok(c),
            _ => Err(error::unexpected("a create that did not create")),
        }
    }

    /// The plan for a create, naming a sequential node.
    fn create_plan(&self, path: &str, data: &[u8], mode: CreateMode) -> CreatePlan {
        self.create_plan_numbered(path, data, mode, None)
    }

    /// [`EtcdSession::create_plan`], naming a sequential node with
    /// `counter` (a lent one, see [`crate::slots`]) or else a new one.
    fn create_plan_numbered(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        counter: Option<u64>,
    ) -> CreatePlan {
        let shared = &self.shared;
        let path = if mode.is_sequential() {
            let n = counter.unwrap_or_else(|| self.counter.fetch_add(1, Ordering::Relaxed));
            format!("{path}{}", sequential_suffix(shared.lease, n))
        } else {
            path.to_owned()
        };
        CreatePlan {
            key: shared.keys.key(&path),
            ancestors: shared.keys.ancestors(&path),
            data: data.to_vec(),
            lease: if mode.is_ephemeral() { shared.lease } else { 0 },
            sequential: mode.is_sequential(),
            persistent: !mode.is_ephemeral(),
            own_lease: shared.lease,
            list_siblings: None,
            parent_known: false,
            path,
        }
    }

    /// Run one write. A create whose answer is lost (connection dropped,
    /// timeout) is sent again unchanged until it gets an answer, for up to
    /// one TTL: the retry recognises the node the first attempt made (see
    /// `txn::Plan::failed`), so it is found, never made twice. A persistent
    /// sequential create is only looked for, not sent again: another
    /// session may have deleted the node it made (a queue item taken), and
    /// sending it again would make a second one (`OutcomeUnknown` then).
    async fn write(&self, plan: Plan, fence: Option<FenceKey>) -> Result<OpResult> {
        Ok(self.write_listing(plan, fence).await?.0)
    }

    /// [`EtcdSession::write`], with the sibling listing a create asked for.
    async fn write_listing(
        &self,
        mut plan: Plan,
        fence: Option<FenceKey>,
    ) -> Result<(OpResult, Option<Listing>)> {
        let shared = &self.shared;
        shared.check_open()?;
        let parent = match &mut plan {
            Plan::Create(c) => {
                let parent = c.ancestors.last().cloned();
                c.parent_known = parent
                    .as_ref()
                    .is_some_and(|p| self.dirs.lock().is_ok_and(|d| d.contains(p)));
                parent
            }
            _ => None,
        };
        let recover = matches!(plan, Plan::Create(_));
        let started = Instant::now();
        let mut retrying = false;
        let backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
        let mut attempt = 0;
        let path = match &plan {
            Plan::Create(p) => p.path.clone(),
            Plan::Set(p) => p.path.clone(),
            Plan::Delete(p) => p.path.clone(),
        };
        loop {
            if let (true, Plan::Create(c)) = (retrying, &plan) {
                if c.sequential && c.persistent {
                    match self.find_sequential(c).await {
                        Ok(Some(made)) => return Ok((OpResult::Created(made), None)),
                        Ok(None) => return Err(Error::lost_sequential_create(&c.path)),
                        Err(e) if e.is_retryable() && started.elapsed() < shared.ttl => {
                            shared.check_open()?;
                            backoff.sleep(&mut attempt).await;
                            continue;
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
            let sent = shared.txn(&txn::build(&plan, fence.as_ref()), false).await;
            match sent.map_err(error::at(&path)) {
                Ok(resp) => {
                    shared.saw_header(resp.header());
                    if plan.needs_ancestors(fence.as_ref(), &resp) {
                        // The parent is gone (or was made again, ephemeral):
                        // the whole plan makes it or says why not.
                        if let (Some(p), Ok(mut dirs)) = (&parent, self.dirs.lock()) {
                            dirs.remove(p);
                        }
                        if let Plan::Create(c) = &mut plan {
                            c.parent_known = false;
                        }
                        continue;
                    }
                    let done = txn::interpret(&plan, fence.as_ref(), &resp, retrying)?;
                    if let Some(lease) = txn::deleted_lease(&plan, &resp) {
                        crate::ttl::forget_deleted(shared, lease).await;
                    }
                    if let (Some(p), true) = (&parent, resp.succeeded()) {
                        if let Ok(mut dirs) = self.dirs.lock() {
                            if dirs.len() >= DIRS_KEPT && !dirs.contains(p) {
                                dirs.clear();
                            }
                            dirs.insert(p.clone());
                        }
                    }
                    let listing = match (&plan, txn::sibling_listing(&plan, &resp)) {
                        (Plan::Create(c), Some(kvs)) => c.list_siblings.as_deref().map(|p| {
                            let revision = resp.header().map(|h| h.revision()).unwrap_or(0);
                            Arc::new((children_of(p, &kvs), revision))
                        }),
                        _ => None,
                    };
                    return Ok((done, listing));
                }
                Err(e) if recover && e.is_retryable() && started.elapsed() < shared.ttl => {
                    tracing::debug!(error = %e, "etcd create lost its answer; retrying");
                    shared.check_open()?;
                    retrying = true;
                    backoff.sleep(&mut attempt).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The data of the node at `path` (`key`) at `revision`, for a take
    /// whose delete's answer was lost and which then found the key gone
    /// (see [`PrimitiveSession::take_leaf`]).
    async fn data_before(&self, path: &str, key: &str, revision: i64) -> Result<Option<Vec<u8>>> {
        let backoff = Backoff::RECIPES;
        let mut attempt = 0;
        loop {
            let at = GetOptions::new().with_revision(revision);
            match self.shared.get(key, Some(at)).await {
                Ok(resp) => return Ok(resp.kvs().first().map(|kv| kv.value().to_vec())),
                Err(e) if e.is_retryable() => {
                    self.shared.check_open()?;
                    backoff.sleep(&mut attempt).await;
                }
                Err(e) => {
                    return Err(Error::OutcomeUnknown {
                        path: path.to_owned(),
                        detail: format!(
                            "the answer to this take was lost and the node is gone, taken by \
                             this take or another; its data at revision {revision} could not \
                             be read ({e})"
                        ),
                    })
                }
            }
        }
    }

    /// The node a sequential create made, if it is there: its key carries
    /// this session's lease and counter, so whatever is there is ours.
    async fn find_sequential(&self, c: &txn::CreatePlan) -> Result<Option<Created>> {
        let resp = self
            .shared
            .get(&c.key, None)
            .await
            .map_err(error::at(&c.path))?;
        self.shared.saw_header(resp.header());
        Ok(resp.kvs().first().map(|kv| {
            let created = txn::urev(kv.create_revision());
            Created::new(
                c.path.clone(),
                Some(created),
                created,
                txn::urev(kv.mod_revision()),
            )
        }))
    }

    /// The children of `dir` and the revision they were read at, less
    /// this session's contender nodes whose delete is in flight.
    ///
    /// etcd does not apply one client's requests in the order sent (each
    /// is a stream of its own on the connection), so a lock's next acquire
    /// right after a dropped guard — whose delete was sent first — could
    /// list the old node and wait for it. That delete is sent until the
    /// node is gone or the session is over, so this session may count the
    /// node gone already: the listing is what it will be once the delete,
    /// which began before it, lands. Other sessions see the node until
    /// then, and wait behind it, as behind any holder.
    ///
    /// Nor does a listing show a contender node this session has seen
    /// deleted (the same key and create revision: that incarnation is gone
    /// for good). A create's listing, read in its own transaction, may
    /// have been read before a delete sent earlier landed, and be looked
    /// at after that delete's answer came back.
    async fn list(&self, dir: &str) -> Result<(Vec<Child>, i64)> {
        self.list_prefixed(dir, "").await
    }

    /// [`EtcdSession::list`] of the children whose names begin with
    /// `name_prefix`: a range over their keys only.
    async fn list_prefixed(&self, dir: &str, name_prefix: &str) -> Result<(Vec<Child>, i64)> {
        let (mut children, revision) = self.list_all(dir, name_prefix).await?;
        let is = |path: &str, name: &str| is_child(dir, name, path);
        let deleting = self.deleting.lock().map(|d| d.clone()).unwrap_or_default();
        if !deleting.is_empty() {
            children.retain(|c| !deleting.iter().any(|p| is(p, &c.name)));
        }
        let gone = self.gone.lock().map(|g| g.clone()).unwrap_or_default();
        if !gone.is_empty() {
            children.retain(|c| {
                !gone
                    .iter()
                    .any(|(p, rev)| Some(*rev) == c.sequence && is(p, &c.name))
            });
        }
        Ok((children, revision))
    }

    /// The children of `dir` whose names begin with `name_prefix` (all of
    /// them for `""`) and the revision they were read at.
    async fn list_all(&self, dir: &str, name_prefix: &str) -> Result<(Vec<Child>, i64)> {
        let shared = &self.shared;
        shared.check_open()?;
        if let Some(listing) = self.listing_in_flight(dir).await {
            let (children, revision) = &*listing;
            let mine = children.iter().filter(|c| c.name.starts_with(name_prefix));
            return Ok((mine.cloned().collect(), *revision));
        }
        let prefix = shared.keys.child_prefix(dir);
        let range = format!("{prefix}{name_prefix}");
        let under = || Some(GetOptions::new().with_prefix().with_keys_only());
        if dir == "/" {
            let resp = shared.get(&range, under()).await.map_err(error::at(dir))?;
            let revision = shared.saw_header(resp.header());
            return Ok((children_of(&prefix, resp.kvs()), revision));
        }
        // The directory's key and its children at one revision.
        let dir_key = shared.keys.key(dir);
        let listing = Txn::new().and_then([
            TxnOp::get(dir_key.as_str(), Some(GetOptions::new().with_keys_only())),
            TxnOp::get(range.as_str(), under()),
        ]);
        let resp = shared.txn(&listing, true).await.map_err(error::at(dir))?;
        let revision = shared.saw_header(resp.header());
        let mut answers = resp.op_responses().into_iter();
        let (Some(TxnOpResponse::Get(own)), Some(TxnOpResponse::Get(under))) =
            (answers.next(), answers.next())
        else {
            return Err(error::unexpected("children without the directory"));
        };
        // A directory exists if its key does, or if keys live under it:
        // etcd's own clients make `P/<lease>` without a key `P` (etcdctl
        // lock, elect), and those contenders must be listed.
        if own.kvs().is_empty() && under.kvs().is_empty() {
            if !name_prefix.is_empty() {
                // No key of its own and none in this part: whether it has
                // children at all takes the whole range (rare: a directory
                // only etcd's own clients made).
                let (children, revision) = Box::pin(self.list_all(dir, "")).await?;
                let mine = children
                    .into_iter()
                    .filter(|c| c.name.starts_with(name_prefix));
                return Ok((mine.collect(), revision));
            }
            return Err(Error::NotFound {
                path: dir.to_owned(),
            });
        }
        Ok((children_of(&prefix, under.kvs()), revision))
    }

    /// The listing of `dir` that a contender create of this session, in
    /// flight when this is called, reads in its own Txn; `None` when there
    /// is no such create, it failed, or its listing is older than an answer
    /// this session has already had. So a listing never misses this
    /// session's own writes, and reads never go back in time: ZooKeeper's
    /// guarantees for a read that follows a create on one connection.
    async fn listing_in_flight(&self, dir: &str) -> Option<Listing> {
        let floor = self.shared.seen.load(Ordering::Relaxed);
        let mut rx = {
            let list = self.in_flight.lock().ok()?;
            list.iter().rev().find(|f| f.dir == dir)?.listing.clone()
        };
        let waited =
            tokio::time::timeout(self.shared.request_timeout, rx.wait_for(Option::is_some)).await;
        let listing = match waited {
            Ok(Ok(slot)) => slot.clone().flatten()?,
            _ => return None,
        };
        (listing.1 >= floor).then_some(listing)
    }
}

impl Drop for EtcdSession {
    fn drop(&mut self) {
        self.stop_keep_alive();
        // Nobody can close it any more: revoke the lease in the background
        // so its ephemeral nodes go now, not after the TTL.
        if self.shared.state.borrow().is_terminal() {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let mut lease = self.shared.client.lease_client();
            let id = self.shared.lease;
            let timeout = self.shared.request_timeout;
            rt.spawn(async move {
                let _ = tokio::time::timeout(timeout, lease.revoke(id)).await;
            });
        }
        // Watches still awaited end with the session.
        self.shared.set_state(SessionState::Closed);
    }
}

#[async_trait]
impl PrimitiveSession for EtcdSession {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    fn id(&self) -> SessionId {
        SessionId(format!("{:x}", self.shared.lease))
    }

    fn state(&self) -> watch::Receiver<SessionState> {
        self.shared.state.subscribe()
    }

    /// A contender's create (ephemeral-sequential, below a directory) also
    /// lists its siblings in its Txn, and a `children` of that directory
    /// issued while it is in flight takes that listing: the recipes list
    /// right behind their create, so an uncontended acquire costs one round
    /// trip and its release one more, as etcd's Go mutex does.
    ///
    /// An ephemeral-sequential create takes the name of a node this session
    /// deleted at the same prefix when it has one ([`crate::slots`]: etcd's
    /// listings walk deleted keys until a compaction).
    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<Created> {
        if let Some(ttl) = mode.ttl() {
            return self.create_ttl(path, data, mode, ttl).await;
        }
        if mode != CreateMode::EphemeralSequential {
            return self
                .create_once(self.create_plan(path, data, mode), mode)
                .await;
        }
        loop {
            let lent = self.slots.lock().ok().and_then(|mut s| s.take(path));
            let counter = lent.unwrap_or_else(|| self.counter.fetch_add(1, Ordering::Relaxed));
            let plan = self.create_plan_numbered(path, data, mode, Some(counter));
            match self.create_once(plan, mode).await {
                Ok(made) => {
                    if let (Ok(mut slots), Ok(stamp)) =
                        (self.slots.lock(), i64::try_from(made.stamp))
                    {
                        slots.made(&made.path, path, counter, stamp);
                    }
                    return Ok(made);
                }
                // Somebody else made a key at that name (by hand): the
                // counter is not lent again; a new one.
                Err(Error::AlreadyExists { .. }) if lent.is_some() => {}
                Err(e) => return Err(e),
            }
        }
    }

    async fn get(&self, path: &str) -> Result<Option<Node>> {
        let shared = &self.shared;
        shared.check_open()?;
        if path == "/" {
            // The root has no key and always exists.
            return Ok(Some(Node::new(Vec::new(), Stat::new(0, 0, false, None))));
        }
        let resp = shared
            .get(&shared.keys.key(path), None)
            .await
            .map_err(error::at(path))?;
        shared.saw_header(resp.header());
        let Some(kv) = resp.kvs().first() else {
            return Ok(None);
        };
        let mut stat = stat_of(kv);
        if crate::ttl::ttl_lease(shared, &stat).await?.is_some() {
            stat = crate::ttl::persistent(stat);
        }
        Ok(Some(Node::new(kv.value().to_vec(), stat)))
    }

    async fn set(&self, path: &str, data: &[u8], version: Option<u64>) -> Result<Stat> {
        let plan = Plan::Set(SetPlan {
            path: path.to_owned(),
            key: self.shared.keys.key(path),
            data: data.to_vec(),
            version,
        });
        let stat = match self.write(plan, None).await? {
            OpResult::Set(s) => s,
            _ => return Err(error::unexpected("a set that did not set")),
        };
        // A TTL node's set restarts its TTL.
        match crate::ttl::ttl_lease(&self.shared, &stat).await? {
            Some(lease) => {
                crate::ttl::restart(&self.shared, lease).await?;
                Ok(crate::ttl::persistent(stat))
            }
            None => Ok(stat),
        }
    }

    /// One plain delete that returns the key's previous value: no Txn,
    /// and no read first. etcd applies a plain delete at well under half
    /// the cost of a Txn, and several consumers' deletes then share its
    /// raft rounds (measured on etcd 3.4 with four clients: 3.1× one
    /// client's rate for plain deletes, 2.2× for Txn deletes).
    ///
    /// After a lost answer, a later delete that finds the key gone reads
    /// the node as it was at the last revision this session had seen
    /// before the first delete was sent: there it means the first delete
    /// may have taken it (its data is returned); not there means another
    /// session took it before. Only a compaction past that revision in the
    /// meantime leaves the data unreadable (`OutcomeUnknown`).
    async fn take_leaf(&self, path: &str) -> Result<Option<Vec<u8>>> {
        let shared = &self.shared;
        shared.check_open()?;
        let before = shared.seen.load(Ordering::Relaxed);
        if self.created(path).is_some() || before <= 0 {
            // This session's own contender node, whose name it lends again
            // (a plain delete would not free it), or a session that has
            // no revision to read at yet: read, then delete.
            return coord_core::primitive::read_then_delete(self, path).await;
        }
        let key = shared.keys.key(path);
        let backoff = Backoff::RECIPES;
        let (mut attempt, mut ambiguous) = (0, false);
        loop {
            let sent = shared
                .call(false, || {
                    let mut kv = shared.client.kv_client();
                    let key = key.clone();
                    let options = etcd_client::DeleteOptions::new().with_prev_key();
                    async move { kv.delete(key, Some(options)).await }
                })
                .await
                .map_err(error::at(path));
            match sent {
                Ok(resp) => {
                    shared.saw_header(resp.header());
                    if let Some(kv) = resp.prev_kvs().first() {
                        crate::ttl::forget_deleted(shared, kv.lease()).await;
                        return Ok(Some(kv.value().to_vec()));
                    }
                    if !ambiguous {
                        return Ok(None);
                    }
                    return self.data_before(path, &key, before).await;
                }
                Err(e) if e.is_retryable() => {
                    tracing::debug!(error = %e, "etcd take lost its answer; again");
                    shared.check_open()?;
                    ambiguous = true;
                    backoff.sleep(&mut attempt).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn takes_leaf_at_once(&self) -> bool {
        true
    }

    async fn delete(&self, path: &str, version: Option<u64>) -> Result<()> {
        let created = self.created(path);
        let _deleting = DeletingGuard::new(self, path, created.is_some());
        let plan = Plan::Delete(DeletePlan {
            path: path.to_owned(),
            key: self.shared.keys.key(path),
            child_prefix: self.shared.keys.child_prefix(path),
            version,
            created,
        });
        let done = self.write(plan, None).await.map(|_| ());
        self.deleted(path, created, &done);
        done
    }

    async fn children(&self, dir: &str) -> Result<Vec<Child>> {
        Ok(self.list(dir).await?.0)
    }

    async fn children_prefixed(&self, dir: &str, prefix: &str) -> Result<Vec<Child>> {
        Ok(self.list_prefixed(dir, prefix).await?.0)
    }

    fn lists_by_prefix(&self) -> bool {
        true
    }

    async fn children_watch(&self, dir: &str) -> Result<(Vec<Child>, Watch)> {
        let (children, revision) = self.list(dir).await?;
        let keys = &self.shared.keys;
        let dir_key = (dir != "/").then(|| keys.key(dir));
        let watch = crate::watch::children_changed(
            self.shared.clone(),
            dir_key,
            keys.child_prefix(dir),
            revision,
        );
        Ok((children, Watch::new(watch)))
    }

    /// Read the key; the watch sees every change after the read's
    /// revision (see [`crate::watch`]), so a delete after the read is never
    /// missed however late it is polled.
    async fn watch_gone(&self, path: &str) -> Result<Option<Watch>> {
        self.watch_gone_listed(path, None).await
    }

    /// A node's name may be reused by its session ([`crate::slots`]): the
    /// listed node is the one with `sequence` as its create revision.
    async fn watch_gone_listed(&self, path: &str, sequence: Option<u64>) -> Result<Option<Watch>> {
        let shared = &self.shared;
        shared.check_open()?;
        let key = shared.keys.key(path);
        let resp = shared
            .get(&key, Some(GetOptions::new().with_keys_only()))
            .await
            .map_err(error::at(path))?;
        let Some(found) = resp.kvs().first() else {
            return Ok(None);
        };
        let revision = shared.saw_header(resp.header());
        if sequence.is_some_and(|s| s != urev(found.create_revision())) {
            // Another node at the name now: the one listed is gone.
            return Ok(None);
        }
        Ok(Some(Watch::new(crate::watch::wait_gone(
            shared.clone(),
            key,
            found.create_revision(),
            revision,
        ))))
    }

    /// Read the key with its value; the watch sees every change after the
    /// read's revision (see [`crate::watch`]), so a put or delete after the
    /// read is never missed however late it is polled.
    async fn get_watch(&self, path: &str) -> Result<Option<(Node, Watch)>> {
        let shared = &self.shared;
        shared.check_open()?;
        let key = shared.keys.key(path);
        let resp = shared.get(&key, None).await.map_err(error::at(path))?;
        let revision = shared.saw_header(resp.header());
        let Some(kv) = resp.kvs().first() else {
            return Ok(None);
        };
        // The watch counts changes after the read's revision: the marker
        // read below cannot make it miss a change.
        let mut stat = stat_of(kv);
        if crate::ttl::ttl_lease(shared, &stat).await?.is_some() {
            stat = crate::ttl::persistent(stat);
        }
        let node = Node::new(kv.value().to_vec(), stat);
        let changed = crate::watch::wait_changed(
            shared.clone(),
            key,
            kv.create_revision(),
            kv.mod_revision(),
            revision,
        );
        Ok(Some((node, Watch::new(changed))))
    }

    /// One etcd watch over the subtree's key range; see
    /// [`crate::watch::watch_tree`].
    async fn watch_tree(&self, path: &str) -> Result<TreeWatch> {
        crate::watch::watch_tree(self.shared.clone(), path).await
    }

    async fn guarded(&self, fence: &Fence, op: Op) -> Result<OpResult> {
        let keys = &self.shared.keys;
        let fence = FenceKey {
            path: fence.path.clone(),
            key: keys.key(&fence.path),
            stamp: fence.stamp,
        };
        let plan = match op {
            Op::Create { path, data, mode } => Plan::Create(self.create_plan(&path, &data, mode)),
            Op::Set {
                path,
                data,
                version,
            } => Plan::Set(SetPlan {
                key: keys.key(&path),
                path,
                data,
                version,
            }),
            Op::Delete { path, version } => Plan::Delete(DeletePlan {
                key: keys.key(&path),
                child_prefix: keys.child_prefix(&path),
                created: self.created(&path),
                path,
                version,
            }),
            // An op added to coord-core after this backend: refused
            // before any I/O.
            _ => {
                return Err(Error::NotSupported {
                    operation: "this guarded write",
                    backend: BACKEND,
                })
            }
        };
        let deleting = match &plan {
            Plan::Delete(d) => Some((d.path.clone(), d.created)),
            _ => None,
        };
        let done = self.write(plan, Some(fence)).await;
        if let Some((path, created)) = deleting {
            self.deleted(&path, created, &done);
        }
        done
    }

    fn requests_sent(&self) -> Option<u64> {
        Some(
            self.shared
                .requests
                .load(std::sync::atomic::Ordering::Relaxed),
        )
    }

    fn lease(&self) -> &LeaseClock {
        &self.shared.clock
    }

    /// Stop the keep-alive, make the state `Expired` (watches in flight end
    /// with it), and revoke the lease: sent again after every connection
    /// error until the server answers, for at most TTL + request timeout
    /// from the call. Past that, with no keep-alive sent since the call,
    /// the server has dropped the lease itself.
    async fn abandon(&self) {
        let shared = &self.shared;
        let started = Instant::now();
        self.stop_keep_alive();
        shared.set_state(SessionState::Expired);
        let budget = shared.ttl.saturating_add(shared.request_timeout);
        let deadline = started.checked_add(budget).unwrap_or(started);
        let lease = format!("{:x}", shared.lease);
        let backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(1));
        let mut attempt = 0;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            // `closing` stays unset: a lease the server no longer knows
            // comes back as `SessionExpired` (as `SessionClosed` only if a
            // `close` raced this), and the state is `Expired` already.
            let revoke = shared.call(false, || {
                let mut client = shared.client.lease_client();
                let id = shared.lease;
                async move { client.revoke(id).await }
            });
            match tokio::time::timeout(left, revoke).await {
                Ok(Ok(_)) => {
                    tracing::info!(%lease, "etcd lease revoked: the session given up on the client has ended on the server");
                    return;
                }
                Ok(Err(Error::SessionExpired | Error::SessionClosed)) => {
                    tracing::debug!(%lease, "etcd lease already gone on the server");
                    return;
                }
                Ok(Err(e)) if e.is_retryable() => {
                    tracing::debug!(%lease, error = %e, "revoking the etcd lease failed; again");
                }
                Ok(Err(e)) => {
                    // Nothing a retry can change (auth, say): the server drops
                    // the lease after its TTL, nothing renewing it.
                    tracing::warn!(%lease, error = %e, "cannot revoke the etcd lease; the server drops it after its TTL");
                    return;
                }
                Err(_) => {}
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                tracing::warn!(
                    %lease,
                    waited = ?started.elapsed(),
                    "etcd unreachable while revoking the lease; the server has dropped it by now"
                );
                return;
            }
            tokio::time::sleep(backoff.next(&mut attempt).min(left)).await;
        }
    }

    async fn close(&self) -> Result<()> {
        let shared = &self.shared;
        if shared.state.borrow().is_terminal() {
            return Ok(());
        }
        self.stop_keep_alive();
        shared.closing.store(true, Ordering::SeqCst);
        // Not retried after a lost answer: a second revoke of a revoked
        // lease would say "not found", which reads as expiry.
        let revoke = shared.call(false, || {
            let mut lease = shared.client.lease_client();
            let id = shared.lease;
            async move { lease.revoke(id).await }
        });
        match revoke.await {
            Ok(_) => {
                shared.set_state(SessionState::Closed);
                Ok(())
            }
            // The lease was gone before we revoked it: the session had
            // expired (the server said so before we could close it).
            Err(Error::SessionClosed | Error::SessionExpired) => {
                shared.set_state(SessionState::Expired);
                Ok(())
            }
            Err(e) => {
                // The server will drop the lease after its TTL.
                shared.set_state(SessionState::Closed);
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_child_matches_only_the_direct_child_of_that_name() {
        assert!(is_child("/a/b", "x", "/a/b/x"));
        assert!(is_child("/", "x", "/x"));
        assert!(!is_child("/a", "x", "/ab/x"));
        assert!(!is_child("/a", "x", "/a/xy"));
        assert!(!is_child("/a/b", "x", "/a/b/y"));
        assert!(!is_child("/", "a", "/a/b"));
    }

    #[test]
    fn parents() {
        assert_eq!(parent_of("/a"), "/");
        assert_eq!(parent_of("/a/b"), "/a");
        assert_eq!(parent_of("/a/b/_c_x-lock-"), "/a/b");
    }
}

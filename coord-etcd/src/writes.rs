//! Writes on etcd: a create, set or delete as one Txn ([`crate::txn`]),
//! sent again after a lost answer when that is safe and recognised when it
//! had landed; a contender create's Txn also lists its siblings
//! ([`crate::listing`]).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use coord_core::backend::Backoff;
use coord_core::{CreateMode, Created, Error, OpResult, Result};
use etcd_client::{GetOptions, KeyValue};

use crate::error;
use crate::etcd_session::{EtcdSession, Listed, DIRS_KEPT};
use crate::keys::sequential_suffix;
use crate::listing::{head_of, parent_of};
use crate::txn::{self, CreatePlan, FenceKey, Plan};

/// The siblings a contender's create read in its Txn, right after its put
/// ([`txn::CreatePlan::list_siblings`]): keys only, the first by create
/// revision or (`nearest_siblings`) the last, newest first.
pub(crate) struct Siblings {
    /// The parent's child prefix the range read.
    pub prefix: String,
    /// The keys, in the order read.
    pub kvs: Vec<KeyValue>,
    /// Whether the range held more keys than these.
    pub more: bool,
    /// The Txn's revision: the create's.
    pub revision: i64,
}

impl EtcdSession {
    /// A TTL node's create: a lease of its own (see `crate::ttl`), revoked
    /// again if the create fails.
    pub(crate) async fn create_ttl(
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

    /// Send one create (see [`PrimitiveSession::create`](coord_core::backend::PrimitiveSession::create) for
    /// [`EtcdSession`]): a contender's also reads its siblings — the first
    /// ones, kept for a `first_children` asked meanwhile, or with `nearest`
    /// the ones just before it, returned (see [`Siblings`]).
    pub(crate) async fn create_once(
        &self,
        mut plan: CreatePlan,
        mode: CreateMode,
        nearest: bool,
    ) -> Result<(Created, Option<Siblings>)> {
        let parent = parent_of(&plan.path).to_owned();
        let contender = mode == CreateMode::EphemeralSequential && parent != "/";
        if contender {
            plan.list_siblings = Some(self.shared.keys.child_prefix(&parent));
            plan.nearest_siblings = nearest;
        }
        let in_flight = (contender && !nearest).then(|| self.listing_create(parent));
        let (done, siblings) = self.write_listing(Plan::Create(plan), None).await?;
        let siblings = match (&in_flight, siblings) {
            (Some(guard), Some(read)) => {
                guard.listed(Arc::new(Listed {
                    children: head_of(&read.prefix, &read.kvs, read.more),
                    revision: read.revision,
                    complete: !read.more,
                }));
                None
            }
            (_, read) => read,
        };
        match done {
            OpResult::Created(c) => Ok((c, siblings)),
            _ => Err(error::unexpected("a create that did not create")),
        }
    }

    /// Create `path` plus a sequence, ephemeral or not: a name this
    /// session lent again (see [`crate::slots`]) or a new counter. With
    /// `nearest`, a contender's create also returns the siblings just
    /// before it (see [`EtcdSession::create_once`]).
    pub(crate) async fn create_sequential(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        nearest: bool,
    ) -> Result<(Created, Option<Siblings>)> {
        loop {
            let lent = self.slots.lock().ok().and_then(|mut s| s.take(path));
            let counter = lent.unwrap_or_else(|| self.counter.fetch_add(1, Ordering::Relaxed));
            let plan = self.create_plan_numbered(path, data, mode, Some(counter));
            match self.create_once(plan, mode, nearest).await {
                Ok((made, siblings)) => {
                    if let (Ok(mut slots), Ok(stamp)) =
                        (self.slots.lock(), i64::try_from(made.stamp))
                    {
                        slots.made(&made.path, path, counter, stamp);
                    }
                    return Ok((made, siblings));
                }
                // Somebody else made a key at that name (by hand): the
                // counter is not lent again; a new one.
                Err(Error::AlreadyExists { .. }) if lent.is_some() => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// The plan for a create, naming a sequential node.
    pub(crate) fn create_plan(&self, path: &str, data: &[u8], mode: CreateMode) -> CreatePlan {
        self.create_plan_numbered(path, data, mode, None)
    }

    /// [`EtcdSession::create_plan`], naming a sequential node with
    /// `counter` (a lent one, see [`crate::slots`]) or else a new one.
    pub(crate) fn create_plan_numbered(
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
            nearest_siblings: false,
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
    pub(crate) async fn write(&self, plan: Plan, fence: Option<FenceKey>) -> Result<OpResult> {
        Ok(self.write_listing(plan, fence).await?.0)
    }

    /// [`EtcdSession::write`], with the siblings a create asked to read.
    pub(crate) async fn write_listing(
        &self,
        mut plan: Plan,
        fence: Option<FenceKey>,
    ) -> Result<(OpResult, Option<Siblings>)> {
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
            Plan::Create(p) | Plan::Put(p) => p.path.clone(),
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
                    let siblings = match (&plan, txn::sibling_listing(&plan, &resp)) {
                        (Plan::Create(c), Some((kvs, more))) => {
                            c.list_siblings.as_ref().map(|prefix| Siblings {
                                prefix: prefix.clone(),
                                kvs,
                                more,
                                revision: resp.header().map(|h| h.revision()).unwrap_or(0),
                            })
                        }
                        _ => None,
                    };
                    return Ok((done, siblings));
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
    /// (see [`PrimitiveSession::take_leaf`](coord_core::backend::PrimitiveSession::take_leaf)).
    pub(crate) async fn data_before(
        &self,
        path: &str,
        key: &str,
        revision: i64,
    ) -> Result<Option<Vec<u8>>> {
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
    pub(crate) async fn find_sequential(&self, c: &txn::CreatePlan) -> Result<Option<Created>> {
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
}

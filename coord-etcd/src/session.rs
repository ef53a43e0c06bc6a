//! The primitive contract on etcd: `impl PrimitiveSession for
//! EtcdSession`, each operation as Txns ([`crate::writes`]), ranges
//! ([`crate::listing`]) and watches ([`crate::watch`]).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use coord_core::backend::Backoff;
use coord_core::backend::{lease::LeaseClock, PrimitiveSession};
use coord_core::{
    Blockers, Child, CreateMode, Created, Error, Fence, Node, Op, OpResult, Place, Result,
    SessionId, SessionState, Stat, Transaction, TreeWatch, TxnLimits, TxnResult, Watch,
};
use etcd_client::GetOptions;
use tokio::sync::watch;

use crate::error::{self, BACKEND};
use crate::etcd_session::EtcdSession;
use crate::listing::DeletingGuard;
use crate::txn::{stat_of, urev, DeletePlan, FenceKey, Plan, SetPlan};

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
            let plan = self.create_plan(path, data, mode);
            return Ok(self.create_once(plan, mode, false).await?.0);
        }
        Ok(self.create_sequential(path, data, mode, false).await?.0)
    }

    async fn get(&self, path: &str) -> Result<Option<Node>> {
        crate::reads::get(&self.shared, path).await
    }

    /// Txns of reads, 128 keys each, sent together ([`crate::reads`]).
    async fn get_many(&self, paths: &[String]) -> Result<Vec<Option<Node>>> {
        crate::reads::get_many(&self.shared, paths).await
    }

    fn reads_many_at_once(&self) -> bool {
        true
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
            return coord_core::backend::read_then_delete(self, path).await;
        }
        let key = shared.keys.key(path);
        let backoff = Backoff::RECIPES;
        let (mut attempt, mut ambiguous) = (0, false);
        loop {
            let sent = shared
                .call(false, || {
                    let mut kv = shared.kv_client();
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

    /// One Txn: see [`crate::neighbours`].
    async fn place(&self, dir: &str, me: &Child, blockers: Blockers<'_>) -> Result<Place> {
        self.place_of(dir, me, blockers).await
    }

    /// One range (none behind this session's contender create in the
    /// directory, whose Txn reads the head): see [`crate::neighbours`].
    async fn first_children(&self, dir: &str, n: usize) -> Result<Vec<Child>> {
        self.first_of(dir, n).await
    }

    fn orders_at_server(&self) -> bool {
        true
    }

    /// The create's Txn reads the new node's nearest earlier siblings
    /// right after its put (see [`crate::neighbours`]).
    async fn create_contender(
        &self,
        path: &str,
        data: &[u8],
        blockers: Blockers<'_>,
    ) -> Result<(Created, Option<Place>)> {
        self.contender_create(path, data, blockers).await
    }

    fn places_at_create(&self) -> bool {
        true
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
    /// [`crate::tree_watch::watch_tree`].
    async fn watch_tree(&self, path: &str) -> Result<TreeWatch> {
        crate::tree_watch::watch_tree(self.shared.clone(), path).await
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
            Op::Put { path, data } => {
                Plan::Put(self.create_plan(&path, &data, CreateMode::Persistent))
            }
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

    /// One Txn: see `crate::transaction` and `crate::commit`.
    async fn transaction(&self, txn: &Transaction) -> Result<Vec<TxnResult>> {
        self.commit(txn).await
    }

    /// etcd's default `--max-txn-ops` (128) over the three etcd ops one
    /// step may cost: 42 steps; bytes as one node's data at most (the
    /// request must fit etcd's `--max-request-bytes`, 1.5 MiB).
    fn transaction_limits(&self) -> TxnLimits {
        crate::commit::LIMITS
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

    /// Ask for the lease's time to live: a read does not involve the
    /// lease, so it cannot tell. A lease the server no longer knows (TTL
    /// -1, or "not found") ends the session: `Expired`, or `Closed` when
    /// our own `close` revoked it.
    async fn alive(&self) -> Result<()> {
        let shared = &self.shared;
        shared.check_open()?;
        let answer = shared
            .call(true, || {
                let mut lease = shared.client.lease_client();
                let id = shared.lease;
                async move { lease.time_to_live(id, None).await }
            })
            .await?;
        // TTL -1 is etcd's "no such lease"; 0 is a live lease with less
        // than a second left (its keep-alive may yet renew it).
        if answer.ttl() >= 0 {
            return Ok(());
        }
        if shared.closing.load(Ordering::SeqCst) {
            return Err(Error::SessionClosed);
        }
        shared.set_state(SessionState::Expired);
        Err(Error::SessionExpired)
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

    /// A client of its own connects with the session's endpoints and
    /// options and revokes the lease.
    fn ender(&self) -> Option<coord_core::backend::SessionEnder> {
        let (endpoints, options) = self.shared.redial.clone();
        let id = self.shared.lease;
        Some(Box::pin(async move {
            let lost = |e: etcd_client::Error| {
                Error::ConnectionLost(format!(
                    "could not revoke lease {id:x} over a connection of its own: {e}"
                ))
            };
            let mut client = etcd_client::Client::connect(&endpoints, Some(options))
                .await
                .map_err(lost)?;
            match client.lease_revoke(id).await.map_err(crate::error::map) {
                Ok(_) => {
                    tracing::debug!(lease = %format!("{id:x}"), "etcd lease revoked over a connection of its own");
                    Ok(())
                }
                // Already gone: the session is over, as wanted.
                Err(Error::SessionExpired) => Ok(()),
                Err(e) => Err(Error::ConnectionLost(format!(
                    "could not revoke lease {id:x} over a connection of its own: {e}"
                ))),
            }
        }))
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

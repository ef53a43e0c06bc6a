//! [`RedisSession`]: the primitive contract on Redis.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use coord_core::backend::Backoff;
use coord_core::backend::{lease::LeaseClock, PrimitiveSession};
use coord_core::{
    path, Blockers, Child, CreateMode, Created, Error, Fence, Node, Op, OpResult, Place, Result,
    SessionId, SessionState, Stat, Transaction, TxnLimits, TxnResult, Watch,
};
use tokio::sync::watch as state_watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::error::{self, BACKEND};
use crate::reply::{
    decode_children, decode_created, decode_place, decode_put, decode_stat, flag, version_arg,
};
use crate::scripts;
use crate::shared::{after, Shared};
use crate::watch;

/// A coord session on Redis; see the crate docs for how it maps.
pub(crate) struct RedisSession {
    pub(crate) core: Arc<Shared>,
    /// The heartbeat first, then the notice loop.
    pub(crate) tasks: Vec<JoinHandle<()>>,
}

impl Drop for RedisSession {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        let core = &self.core;
        if core.crashed.load(Ordering::SeqCst) || core.state.borrow().is_terminal() {
            return;
        }
        // Dropped without close: end it now, best effort (else its key
        // expires after the TTL and the session is reaped then).
        core.closing.store(true, Ordering::SeqCst);
        core.mark_closed();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let core = Arc::clone(core);
            rt.spawn(async move {
                let sid = core.sid.clone();
                if let Err(e) = core.maintain(&scripts::END, &sid).await {
                    tracing::debug!(session = %sid, error = %e, "redis session end on drop failed");
                }
            });
        }
    }
}

/// Run the `END` script for session `sid` (under `prefix`, on behalf of
/// `caller`: the session itself, or `""`) over a connection of its own
/// made by `client`: the session's key is deleted and its ephemeral nodes
/// reaped.
///
/// # Errors
/// Connection and server errors.
pub(crate) async fn end_over_new_connection(
    client: &redis::Client,
    prefix: &str,
    caller: &str,
    sid: &str,
) -> Result<()> {
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| error::map(e, None))?;
    scripts::END
        .prepare_invoke()
        .arg(prefix)
        .arg(caller)
        .arg(sid)
        .invoke_async::<redis::Value>(&mut conn)
        .await
        .map_err(|e| error::map(e, None))?;
    Ok(())
}

impl RedisSession {
    async fn create_once(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        recover: Recover,
    ) -> Result<Created> {
        // A TTL node's TTL in whole milliseconds, rounded up (the session
        // checked it is within `MAX_NODE_TTL`, a whole number of them).
        let ttl = mode
            .ttl()
            .map(|t| t.as_nanos().div_ceil(1_000_000).max(1).to_string())
            .unwrap_or_default();
        let args = [
            path.as_bytes(),
            data,
            flag(mode.is_ephemeral()),
            flag(mode.is_sequential()),
            recover.arg(),
            ttl.as_bytes(),
        ];
        let value = self.core.call(&scripts::CREATE, &args, None).await?;
        decode_created(&value)
    }
}

/// What a create does about an earlier attempt whose answer was lost.
#[derive(Clone, Copy)]
enum Recover {
    /// Nothing: the first attempt.
    No,
    /// Return the node this session made under the protected prefix, or
    /// make it.
    FindOrCreate,
    /// Return that node, or fail `OUTCOMEUNKNOWN`.
    FindOnly,
}

impl Recover {
    fn arg(self) -> &'static [u8] {
        match self {
            Recover::No => b"0",
            Recover::FindOrCreate => b"1",
            Recover::FindOnly => b"2",
        }
    }
}

#[async_trait]
impl PrimitiveSession for RedisSession {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    fn id(&self) -> SessionId {
        SessionId(self.core.sid.clone())
    }

    fn state(&self) -> state_watch::Receiver<SessionState> {
        self.core.state.subscribe()
    }

    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<Created> {
        // A protected name (`_c_<uuid>-…`, see coord_core::recipes) is unique
        // to one create, so after a lost answer the node it made (if any)
        // is found by that prefix and this session, not made twice.
        let protected = mode.is_sequential() && path::name(path).starts_with("_c_");
        let first = self.create_once(path, data, mode, Recover::No).await;
        if !protected || !matches!(first, Err(Error::ConnectionLost(_))) {
            return first;
        }
        // Retried for a TTL at most: by then the session itself is over
        // unless the server answers (the lease ends it on the client).
        let deadline = after(Instant::now(), self.core.ttl);
        let backoff = Backoff::new(Duration::from_millis(25), Duration::from_secs(1));
        let mut attempt = 0;
        let mut last = first;
        while deadline.is_none_or(|d| Instant::now() < d) {
            tracing::debug!(%path, "redis create answer lost; looking for it before retrying");
            // A persistent node may have been removed by another session
            // (a queue item taken): only looked for, never made again.
            let recover = if mode.is_ephemeral() {
                Recover::FindOrCreate
            } else {
                Recover::FindOnly
            };
            match self.create_once(path, data, mode, recover).await {
                Err(Error::ConnectionLost(e)) => last = Err(Error::ConnectionLost(e)),
                done => return done,
            }
            backoff.sleep(&mut attempt).await;
        }
        last
    }

    async fn get(&self, path: &str) -> Result<Option<Node>> {
        self.core.read_node(path).await
    }

    /// A script per 256 paths (`get_many.lua`), sent together.
    async fn get_many(&self, paths: &[String]) -> Result<Vec<Option<Node>>> {
        self.core.read_nodes(paths).await
    }

    fn reads_many_at_once(&self) -> bool {
        true
    }

    async fn set(&self, path: &str, data: &[u8], version: Option<u64>) -> Result<Stat> {
        let expected = version_arg(version);
        let args = [path.as_bytes(), data, &expected];
        let value = self.core.call(&scripts::SET, &args, version).await?;
        decode_stat(&value)
    }

    async fn delete(&self, path: &str, version: Option<u64>) -> Result<()> {
        let expected = version_arg(version);
        let args = [path.as_bytes(), &expected];
        self.core.call(&scripts::DELETE, &args, version).await?;
        Ok(())
    }

    async fn children(&self, dir: &str) -> Result<Vec<Child>> {
        self.core.children(dir).await
    }

    /// One script (`place.lua`): a walk down the directory's sorted set
    /// from the contender's score, O(log N).
    async fn place(&self, dir: &str, me: &Child, blockers: Blockers<'_>) -> Result<Place> {
        let Some(seq) = me.sequence else {
            return Ok(Place::Gone);
        };
        let seq = seq.to_string();
        let mut args: Vec<&[u8]> = vec![dir.as_bytes(), me.name.as_bytes(), seq.as_bytes()];
        if let Blockers::Unmarked(markers) = blockers {
            args.extend(markers.iter().map(|m| m.as_bytes()));
        }
        let value = self.core.call_idempotent(&scripts::PLACE, &args).await?;
        decode_place(&value)
    }

    /// One script (`first.lua`): a range of the sorted set by rank,
    /// O(log N + n).
    async fn first_children(&self, dir: &str, n: usize) -> Result<Vec<Child>> {
        // More than any directory holds; a count Lua prints as an integer.
        let n = n.min(u32::MAX as usize).to_string();
        let value = self
            .core
            .call_idempotent(&scripts::FIRST, &[dir.as_bytes(), n.as_bytes()])
            .await?;
        decode_children(&value)
    }

    fn orders_at_server(&self) -> bool {
        true
    }

    async fn children_watch(&self, dir: &str) -> Result<(Vec<Child>, Watch)> {
        watch::children_watch(&self.core, dir).await
    }

    /// Subscribed to the node's deletion channel, then read; the deletion
    /// notice carries the deleted node's stamp, so the deletion of an
    /// earlier node at the path does not end the wait.
    async fn watch_gone(&self, path: &str) -> Result<Option<Watch>> {
        let channel = format!("{}w:{path}", self.core.prefix);
        Ok(watch::watch_node(&self.core, channel, path, false)
            .await?
            .map(|(_, gone)| gone))
    }

    /// Subscribed to the node's change channel (published by every set
    /// and at its deletion), then read. The stored creation time comes
    /// back in the stat.
    async fn get_watch(&self, path: &str) -> Result<Option<(Node, Watch)>> {
        let channel = format!("{}u:{path}", self.core.prefix);
        watch::watch_node(&self.core, channel, path, true).await
    }

    async fn guarded(&self, fence: &Fence, op: Op) -> Result<OpResult> {
        let stamp = fence.stamp.to_string();
        let head = [fence.path.as_bytes(), stamp.as_bytes()];
        match op {
            Op::Create { path, data, mode } => {
                let args = [
                    head[0],
                    head[1],
                    b"create",
                    path.as_bytes(),
                    &data,
                    flag(mode.is_ephemeral()),
                    flag(mode.is_sequential()),
                ];
                let value = self.core.call(&scripts::GUARDED, &args, None).await?;
                Ok(OpResult::Created(decode_created(&value)?))
            }
            Op::Set {
                path,
                data,
                version,
            } => {
                let expected = version_arg(version);
                let args = [head[0], head[1], b"set", path.as_bytes(), &data, &expected];
                let value = self.core.call(&scripts::GUARDED, &args, version).await?;
                Ok(OpResult::Set(decode_stat(&value)?))
            }
            Op::Delete { path, version } => {
                let expected = version_arg(version);
                let args = [head[0], head[1], b"delete", path.as_bytes(), &expected];
                self.core.call(&scripts::GUARDED, &args, version).await?;
                Ok(OpResult::Deleted)
            }
            Op::Put { path, data } => {
                let args = [head[0], head[1], b"put", path.as_bytes(), &data];
                decode_put(&self.core.call(&scripts::GUARDED, &args, None).await?)
            }
            // An op added to coord-core after this backend: refused
            // before any I/O.
            _ => Err(Error::NotSupported {
                operation: "this guarded write",
                backend: BACKEND,
            }),
        }
    }

    /// One script: see `crate::transaction`.
    async fn transaction(&self, txn: &Transaction) -> Result<Vec<TxnResult>> {
        crate::transaction::commit(&self.core, txn).await
    }

    /// 1,000 steps, 1,000,000 bytes (see `crate::transaction::LIMITS`).
    fn transaction_limits(&self) -> TxnLimits {
        crate::transaction::LIMITS
    }

    fn requests_sent(&self) -> Option<u64> {
        Some(
            self.core
                .requests
                .load(std::sync::atomic::Ordering::Relaxed),
        )
    }

    fn lease(&self) -> &LeaseClock {
        &self.core.lease
    }

    async fn abandon(&self) {
        let core = &self.core;
        // Nothing renews the session from here on: the heartbeat checks the
        // flag before each PEXPIRE (and ignores an answer that comes after
        // it), and is stopped besides.
        core.abandoned.store(true, Ordering::SeqCst);
        if let Some(heartbeat) = self.tasks.first() {
            heartbeat.abort();
        }
        // Expired (not Closed), whatever happens next: also when a `close`
        // is under way (its `closing` flag would make `mark_expired` take
        // the END's notice for ours). Final: the notice loop stops, and
        // every operation of the backend is refused.
        core.set_expired();
        if core.crashed.load(Ordering::SeqCst) {
            // Test hook: a crashed process tells the server nothing.
            return;
        }
        // A TTL from now the key has expired on the server anyway: the last
        // PEXPIRE left before this call. (One stalled in a partition may
        // still land after it heals; the ENDs sent since follow it on the
        // same connection.) One request timeout more for an END already
        // under way to answer.
        let budget = core.ttl.saturating_add(core.request_timeout);
        let started = Instant::now();
        let ended = core.end_until(after(started, budget)).await;
        if ended {
            tracing::info!(session = %core.sid, "redis session given up by the client and ended on the server");
        } else {
            tracing::warn!(
                session = %core.sid,
                waited = ?started.elapsed(),
                "redis session given up by the client; the server could not be told, its key expires on its own"
            );
        }
    }

    /// Not when the test hook says the process crashed: it tells the
    /// server nothing.
    fn closes_on_drop(&self) -> bool {
        !self.core.crashed.load(Ordering::SeqCst)
    }

    /// A connection of its own runs the session's `END`.
    fn ender(&self) -> Option<coord_core::backend::SessionEnder> {
        let client = self.core.hub.client().clone();
        let (prefix, sid) = (self.core.prefix.clone(), self.core.sid.clone());
        Some(Box::pin(async move {
            end_over_new_connection(&client, &prefix, &sid, &sid).await?;
            tracing::debug!(session = %sid, "redis session ended over a connection of its own");
            Ok(())
        }))
    }

    async fn close(&self) -> Result<()> {
        if self.core.state.borrow().is_terminal() {
            return Ok(());
        }
        self.core.closing.store(true, Ordering::SeqCst);
        let sid = self.core.sid.clone();
        let result = self.core.maintain(&scripts::END, &sid).await;
        self.core.mark_closed();
        result.map(|_| ()).map_err(|e| error::map(e, None))
    }
}

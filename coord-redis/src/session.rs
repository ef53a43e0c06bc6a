//! [`RedisSession`]: the primitive contract on Redis.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use coord_core::{
    path, Child, CreateMode, Created, Error, Fence, LeaseClock, Node, Op, OpResult,
    PrimitiveSession, Result, SessionId, SessionState, Stat, Watch,
};
use redis::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::core::{after, Core};
use crate::error::{self, BACKEND};
use crate::reply::{
    bytes, decode_children, decode_created, decode_stat, flag, int, uint, version_arg,
};
use crate::scripts;

/// A coord session on Redis; see the crate docs for how it maps.
pub(crate) struct RedisSession {
    pub(crate) core: Arc<Core>,
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

/// The stamp of the node at `path`, if any (a `get` without the data
/// decoding of the trait's).
async fn read_stamp(core: &Core, path: &str) -> Result<Option<u64>> {
    let value = core
        .call_idempotent(&scripts::GET, &[path.as_bytes()])
        .await?;
    match &value {
        Value::Nil => Ok(None),
        Value::Array(items) if items.len() == 4 => Ok(Some(uint(&items[2], "get")?)),
        other => Err(error::unexpected("get", other)),
    }
}

async fn ended(mut state: watch::Receiver<SessionState>) -> Error {
    let end = match state.wait_for(|s| s.is_terminal()).await {
        Ok(s) => *s,
        Err(_) => SessionState::Closed,
    };
    end.end_error().unwrap_or(Error::SessionClosed)
}

impl RedisSession {
    async fn create_once(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        recover: bool,
    ) -> Result<Created> {
        let args = [
            path.as_bytes(),
            data,
            flag(mode.is_ephemeral()),
            flag(mode.is_sequential()),
            flag(recover),
        ];
        let value = self.core.call(&scripts::CREATE, &args, None).await?;
        decode_created(&value)
    }

    /// Register for `channel`, mapping a session end to its error.
    async fn register(&self, channel: String) -> Result<crate::notices::Waiter> {
        self.core.check_open()?;
        self.core.hub.register(channel).await
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

    fn state(&self) -> watch::Receiver<SessionState> {
        self.core.state.subscribe()
    }

    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<Created> {
        // A protected name (`_c_<uuid>-…`, see coord_core::recipes) is unique
        // to one create, so after a lost answer the node it made (if any)
        // is found by that prefix and this session, not made twice.
        let protected = mode.is_sequential() && path::name(path).starts_with("_c_");
        let first = self.create_once(path, data, mode, false).await;
        if !protected || !matches!(first, Err(Error::ConnectionLost(_))) {
            return first;
        }
        // Retried for a TTL at most: by then the session itself is over
        // unless the server answers (the lease ends it on the client).
        let deadline = after(Instant::now(), self.core.ttl);
        let mut pause = Duration::from_millis(25);
        let mut last = first;
        while deadline.is_none_or(|d| Instant::now() < d) {
            tracing::debug!(%path, "redis create answer lost; looking for it before retrying");
            match self.create_once(path, data, mode, true).await {
                Err(Error::ConnectionLost(e)) => last = Err(Error::ConnectionLost(e)),
                done => return done,
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(1));
        }
        last
    }

    async fn get(&self, path: &str) -> Result<Option<Node>> {
        let value = self
            .core
            .call_idempotent(&scripts::GET, &[path.as_bytes()])
            .await?;
        match &value {
            Value::Nil => Ok(None),
            Value::Array(items) if items.len() == 4 => Ok(Some(Node {
                data: bytes(&items[0], "get")?,
                stat: Stat {
                    version: uint(&items[1], "get")?,
                    stamp: uint(&items[2], "get")?,
                    ephemeral: int(&items[3], "get")? == 1,
                },
            })),
            other => Err(error::unexpected("get", other)),
        }
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
        let value = self
            .core
            .call_idempotent(&scripts::CHILDREN, &[dir.as_bytes()])
            .await?;
        decode_children(&value)
    }

    async fn children_watch(&self, dir: &str) -> Result<(Vec<Child>, Watch)> {
        // Subscribed (and confirmed) before the read: nothing slips between.
        let mut waiter = self
            .register(format!("{}cw:{dir}", self.core.prefix))
            .await?;
        let children = self.children(dir).await?;
        let state = self.core.state.subscribe();
        let watch = Watch::new(async move {
            tokio::select! {
                _ = waiter.fired() => Ok(()),
                e = ended(state) => Err(e),
            }
        });
        Ok((children, watch))
    }

    async fn watch_gone(&self, path: &str) -> Result<Option<Watch>> {
        // Subscribed (and confirmed) before the read: nothing slips between.
        let channel = format!("{}w:{path}", self.core.prefix);
        let mut waiter = self.register(channel.clone()).await?;
        let Some(node) = self.get(path).await? else {
            return Ok(None);
        };
        let stamp = node.stat.stamp;
        let core = Arc::clone(&self.core);
        let path = path.to_owned();
        Ok(Some(Watch::new(async move {
            loop {
                let notice = tokio::select! {
                    n = waiter.fired() => n,
                    e = ended(core.state.subscribe()) => return Err(e),
                };
                // A deletion notice carries the deleted node's stamp: ours,
                // or a later node's at the same path (so ours went first),
                // ends the wait. An older node's (deleted before our read),
                // or a dropped pub/sub link (no notice), means: subscribe
                // again (the waiter is one-shot) and look.
                if let Some(payload) = notice {
                    let deleted = std::str::from_utf8(&payload)
                        .ok()
                        .and_then(|s| s.parse::<u64>().ok());
                    if deleted.is_none_or(|d| d >= stamp) {
                        return Ok(());
                    }
                }
                core.check_open()?;
                waiter = core.hub.register(channel.clone()).await?;
                match read_stamp(&core, &path).await? {
                    Some(s) if s == stamp => {}
                    _ => return Ok(()),
                }
            }
        })))
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
        }
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

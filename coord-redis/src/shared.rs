//! [`Shared`]: what a session's handle, its background tasks and its
//! watches share, and the one place scripts are run as the session.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coord_core::backend::lease::LeaseClock;
use coord_core::backend::Backoff;
use coord_core::{Child, Error, Node, Result, SessionState};
use redis::aio::ConnectionManager;
use redis::{Script, Value};
use tokio::sync::{watch, Notify};
use tokio::time::Instant;

use crate::error;
use crate::notices::Hub;
use crate::options::{KeyspaceEvents, RedisOptions};
use crate::reply::{decode_children, decode_node, decode_nodes};
use crate::scripts;

/// What a session's handle and its background tasks share.
pub(crate) struct Shared {
    pub(crate) sid: String,
    pub(crate) prefix: String,
    pub(crate) ttl: Duration,
    /// How long one request (or connection attempt) may take.
    pub(crate) request_timeout: Duration,
    pub(crate) conn: ConnectionManager,
    pub(crate) state: watch::Sender<SessionState>,
    pub(crate) hub: Arc<Hub>,
    /// The client's lease deadline: renewed by the heartbeat's answered
    /// `PEXPIRE`s (see `coord_core::backend::lease`).
    pub(crate) lease: LeaseClock,
    /// `close` has begun: the end notice that follows is ours, not an expiry.
    pub(crate) closing: AtomicBool,
    /// The client gave the session up (`abandon`): nothing renews it any
    /// more.
    pub(crate) abandoned: AtomicBool,
    /// A sweep is running (one at a time).
    sweeping: AtomicBool,
    /// Test hook: behave like a crashed process (no heartbeat, no close).
    pub(crate) crashed: AtomicBool,
    /// Wakes the heartbeat for a renewal now rather than at its next beat:
    /// the pub/sub link came back after a drop, and the server may have
    /// restarted without its data (then the renewal finds the key gone and
    /// the session is `Expired` at once, not a beat later).
    pub(crate) beat_now: Notify,
    /// Scripts this session ran on the server, one round trip each (see
    /// [`coord_core::backend::PrimitiveSession::requests_sent`]).
    pub(crate) requests: AtomicU64,
    /// Numbers this session's transactions (see `crate::transaction`).
    pub(crate) transactions: AtomicU64,
    /// What `connect` did about `notify-keyspace-events`; done again when
    /// the server may have restarted (a `CONFIG SET` does not survive one).
    pub(crate) keyspace_events: KeyspaceEvents,
}

/// One argument of a script.
pub(crate) type Arg<'a> = &'a [u8];

/// Paths read per `get_many.lua` run.
pub(crate) const READS_PER_SCRIPT: usize = 256;

/// `d` in whole milliseconds, saturating (for `PX` and `PEXPIRE`).
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The instant `d` after `from`, or `None` past the end of time.
pub(crate) fn after(from: Instant, d: Duration) -> Option<Instant> {
    from.checked_add(d)
}

/// The transport error of a request that took longer than its timeout.
fn timed_out() -> redis::RedisError {
    redis::RedisError::from(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "no answer from the redis server within the request timeout",
    ))
}

impl Shared {
    /// The core of session `sid` on the server and namespace `options`
    /// name, whose key is being created by a request sent at `sent` (the
    /// lease counts from there).
    pub(crate) fn new(
        sid: String,
        options: &RedisOptions,
        conn: ConnectionManager,
        hub: Arc<Hub>,
        sent: Instant,
    ) -> Self {
        let ttl = options.session_timeout;
        Shared {
            sid,
            prefix: options.key_prefix(),
            ttl,
            request_timeout: options.request_timeout(),
            conn,
            state: watch::Sender::new(SessionState::Connected),
            hub,
            lease: LeaseClock::new(ttl, sent),
            closing: AtomicBool::new(false),
            abandoned: AtomicBool::new(false),
            sweeping: AtomicBool::new(false),
            crashed: AtomicBool::new(false),
            beat_now: Notify::new(),
            requests: AtomicU64::new(0),
            transactions: AtomicU64::new(0),
            keyspace_events: options.keyspace_events,
        }
    }

    /// `request` failing with a transport error (a timeout) if it takes
    /// longer than the request timeout: the connection manager bounds the
    /// answer, this also bounds (re)connecting.
    pub(crate) async fn bounded<T>(
        &self,
        request: impl Future<Output = redis::RedisResult<T>>,
    ) -> redis::RedisResult<T> {
        match tokio::time::timeout(self.request_timeout, request).await {
            Ok(done) => done,
            Err(_) => Err(timed_out()),
        }
    }

    pub(crate) fn session_key(&self) -> String {
        format!("{}s:{}", self.prefix, self.sid)
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        let state = *self.state.borrow();
        state.end_error().map_or(Ok(()), Err)
    }

    /// The session ended on the server (its key is gone); an end that
    /// follows our own `close` is not an expiry.
    pub(crate) fn mark_expired(&self) {
        if self.closing.load(Ordering::SeqCst) {
            return;
        }
        self.set_expired();
    }

    /// The state becomes `Expired`, unless it is final already.
    pub(crate) fn set_expired(&self) {
        let changed = self.state.send_if_modified(|s| {
            if s.is_terminal() {
                return false;
            }
            *s = SessionState::Expired;
            true
        });
        if changed {
            // Logged once, by coord-core's `Session` (target `coord`).
            tracing::trace!(session = %self.sid, "redis session expired");
        }
    }

    pub(crate) fn mark_closed(&self) {
        self.state.send_if_modified(|s| {
            if s.is_terminal() {
                return false;
            }
            *s = SessionState::Closed;
            true
        });
    }

    pub(crate) fn mark_suspended(&self) {
        self.state.send_if_modified(|s| {
            if *s != SessionState::Connected {
                return false;
            }
            tracing::debug!(session = %self.sid, "redis connection lost; session suspended");
            *s = SessionState::Suspended;
            true
        });
    }

    pub(crate) fn mark_connected(&self) {
        self.state.send_if_modified(|s| {
            if *s != SessionState::Suspended {
                return false;
            }
            tracing::debug!(session = %self.sid, "redis connection back");
            *s = SessionState::Connected;
            true
        });
    }

    /// Run a script as this session: prefix and session id first, then
    /// `args`. Errors come back mapped, and move the state along.
    pub(crate) async fn call(
        &self,
        script: &Script,
        args: &[Arg<'_>],
        expected: Option<u64>,
    ) -> Result<Value> {
        self.check_open()?;
        let mut invocation = script.prepare_invoke();
        invocation.arg(&self.prefix).arg(&self.sid);
        for arg in args {
            invocation.arg(*arg);
        }
        let mut conn = self.conn.clone();
        self.requests.fetch_add(1, Ordering::Relaxed);
        match self
            .bounded(invocation.invoke_async::<Value>(&mut conn))
            .await
        {
            Ok(value) => {
                self.mark_connected();
                Ok(value)
            }
            Err(e) => {
                let err = error::map(e, expected);
                match &err {
                    Error::SessionExpired => self.mark_expired(),
                    Error::ConnectionLost(_) => self.mark_suspended(),
                    _ => {}
                }
                // A session closed meanwhile reports that, not its expiry.
                if err.is_session_end() && self.closing.load(Ordering::SeqCst) {
                    return Err(Error::SessionClosed);
                }
                Err(err)
            }
        }
    }

    /// The node at `path`, if any: the contract's `get`, also for watches,
    /// which hold this rather than the session.
    pub(crate) async fn read_node(&self, path: &str) -> Result<Option<Node>> {
        let value = self
            .call_idempotent(&scripts::GET, &[path.as_bytes()])
            .await?;
        decode_node(&value)
    }

    /// The nodes at `paths`: the contract's `get_many`, a script per
    /// [`READS_PER_SCRIPT`] paths, the scripts sent together (one
    /// connection: they pipeline). A script holds the server while it
    /// runs, so a batch stays small.
    pub(crate) async fn read_nodes(&self, paths: &[String]) -> Result<Vec<Option<Node>>> {
        let batches = futures_util::future::try_join_all(paths.chunks(READS_PER_SCRIPT).map(
            |batch| async move {
                let args: Vec<Arg<'_>> = batch.iter().map(|p| p.as_bytes()).collect();
                let value = self.call_idempotent(&scripts::GET_MANY, &args).await?;
                decode_nodes(&value, batch.len())
            },
        ))
        .await?;
        Ok(batches.into_iter().flatten().collect())
    }

    /// The children of `dir`: the contract's `children`.
    pub(crate) async fn children(&self, dir: &str) -> Result<Vec<Child>> {
        let value = self
            .call_idempotent(&scripts::CHILDREN, &[dir.as_bytes()])
            .await?;
        decode_children(&value)
    }

    /// [`Shared::call`] for a script that may run twice (a read: its only
    /// writes are reaps, which are idempotent): after a transport error it
    /// is tried once more, on the connection the manager makes anew.
    pub(crate) async fn call_idempotent(&self, script: &Script, args: &[Arg<'_>]) -> Result<Value> {
        match self.call(script, args, None).await {
            Err(Error::ConnectionLost(e)) => {
                tracing::debug!(session = %self.sid, error = %e, "redis read retried once");
                self.call(script, args, None).await
            }
            done => done,
        }
    }

    /// Run a maintenance script (`open`, `end`, `reap`, `sweep`: each may
    /// run twice) on session `sid`, trying once more after a transport error.
    pub(crate) async fn maintain(&self, script: &Script, sid: &str) -> redis::RedisResult<Value> {
        match self.maintain_once(script, sid).await {
            Err(e) if error::is_transport(&e) => self.maintain_once(script, sid).await,
            done => done,
        }
    }

    /// One attempt of a maintenance script, within the request timeout.
    pub(crate) async fn maintain_once(
        &self,
        script: &Script,
        sid: &str,
    ) -> redis::RedisResult<Value> {
        let mut conn = self.conn.clone();
        let mut invocation = script.prepare_invoke();
        invocation.arg(&self.prefix).arg(&self.sid).arg(sid);
        self.bounded(invocation.invoke_async(&mut conn)).await
    }

    /// End this session on the server (the `END` script: delete its key,
    /// reap its ephemeral nodes), retrying transport errors until it is
    /// done or `deadline` passes. Whether the server confirmed it.
    pub(crate) async fn end_until(&self, deadline: Option<Instant>) -> bool {
        let backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(1));
        let mut attempts = 0;
        loop {
            let attempt = self.maintain_once(&scripts::END, &self.sid);
            let outcome = match deadline {
                Some(d) => tokio::time::timeout_at(d, attempt).await.ok(),
                None => Some(attempt.await),
            };
            match outcome {
                Some(Ok(_)) => return true,
                Some(Err(e)) if !error::is_transport(&e) => {
                    tracing::warn!(session = %self.sid, error = %e, "redis refused to end the session");
                    return false;
                }
                Some(Err(e)) => {
                    tracing::debug!(session = %self.sid, error = %e, "redis session end failed; retrying");
                }
                None => return false,
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return false;
            }
            let pause = backoff.next(&mut attempts);
            let wake = after(now, pause).map(|w| deadline.map_or(w, |d| w.min(d)));
            if let Some(wake) = wake {
                tokio::time::sleep_until(wake).await;
            }
        }
    }

    /// Sweep dead sessions in the background, unless a sweep is running.
    pub(crate) fn spawn_sweep(self: &Arc<Self>) {
        if self.sweeping.swap(true, Ordering::SeqCst) {
            return;
        }
        let core = Arc::clone(self);
        tokio::spawn(async move {
            if let Err(e) = core.maintain(&scripts::SWEEP, "").await {
                tracing::debug!(error = %e, "redis sweep failed");
            }
            core.sweeping.store(false, Ordering::SeqCst);
        });
    }

    /// Reap session `sid` in the background (its key expired).
    pub(crate) fn spawn_reap(self: &Arc<Self>, sid: String) {
        let core = Arc::clone(self);
        tokio::spawn(async move {
            if let Err(e) = core.maintain(&scripts::REAP, &sid).await {
                tracing::debug!(session = %sid, error = %e, "redis reap failed; reads reap lazily");
            }
        });
    }

    /// A session ended on the server; `reaped` when its nodes are gone
    /// already (the `ended` notice), else this reaps them.
    pub(crate) fn session_gone(self: &Arc<Self>, sid: &str, reaped: bool) {
        if sid == self.sid {
            self.mark_expired();
        }
        if !reaped {
            self.spawn_reap(sid.to_owned());
        }
    }
}

//! [`Core`]: what a session's handle and its background tasks share, and
//! the one place scripts are run as the session.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coord_core::{Error, Result, SessionState};
use redis::aio::ConnectionManager;
use redis::{Script, Value};
use tokio::sync::watch;

use crate::error;
use crate::notices::Hub;
use crate::scripts;

/// What a session's handle and its background tasks share.
pub(crate) struct Core {
    pub(crate) sid: String,
    pub(crate) prefix: String,
    pub(crate) ttl: Duration,
    pub(crate) conn: ConnectionManager,
    pub(crate) state: watch::Sender<SessionState>,
    pub(crate) hub: Arc<Hub>,
    /// `close` has begun: the end notice that follows is ours, not an expiry.
    pub(crate) closing: AtomicBool,
    /// Test hook: behave like a crashed process (no heartbeat, no close).
    pub(crate) crashed: AtomicBool,
    /// Test hook: drop the answer of the next create (as a lost connection
    /// would), after the server applied it.
    pub(crate) lose_next_create_answer: AtomicBool,
}

/// One argument of a script.
pub(crate) type Arg<'a> = &'a [u8];

impl Core {
    pub(crate) fn new(
        sid: String,
        prefix: String,
        ttl: Duration,
        conn: ConnectionManager,
        hub: Arc<Hub>,
    ) -> Self {
        Core {
            sid,
            prefix,
            ttl,
            conn,
            state: watch::Sender::new(SessionState::Connected),
            hub,
            closing: AtomicBool::new(false),
            crashed: AtomicBool::new(false),
            lose_next_create_answer: AtomicBool::new(false),
        }
    }

    pub(crate) fn session_key(&self) -> String {
        format!("{}s:{}", self.prefix, self.sid)
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        match *self.state.borrow() {
            SessionState::Expired => Err(Error::SessionExpired),
            SessionState::Closed => Err(Error::SessionClosed),
            _ => Ok(()),
        }
    }

    pub(crate) fn mark_expired(&self) {
        if self.closing.load(Ordering::SeqCst) {
            return;
        }
        let changed = self.state.send_if_modified(|s| {
            if s.is_terminal() {
                return false;
            }
            *s = SessionState::Expired;
            true
        });
        if changed {
            tracing::info!(session = %self.sid, "redis session expired");
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
            tracing::warn!(session = %self.sid, "redis connection lost; session suspended");
            *s = SessionState::Suspended;
            true
        });
    }

    pub(crate) fn mark_connected(&self) {
        self.state.send_if_modified(|s| {
            if *s != SessionState::Suspended {
                return false;
            }
            tracing::info!(session = %self.sid, "redis connection back");
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
        match invocation.invoke_async::<Value>(&mut conn).await {
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

    /// [`Core::call`] for a script that may run twice (a read: its only
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
        let mut conn = self.conn.clone();
        let mut invocation = script.prepare_invoke();
        invocation.arg(&self.prefix).arg(&self.sid).arg(sid);
        match invocation.invoke_async(&mut conn).await {
            Err(e) if error::is_transport(&e) => invocation.invoke_async(&mut conn).await,
            done => done,
        }
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

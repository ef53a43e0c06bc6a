//! The session's command connection, made again when it is lost.
//!
//! 1. Every request goes over the current connection, bounded by the
//!    request timeout; with none, it fails at once with `ConnectionLost`
//!    (recipes retry those) and the session is `Suspended`.
//! 2. A request that times out or finds the connection broken drops that
//!    connection (only that one: a newer one is left alone) and wakes the
//!    reconnector.
//! 3. The reconnector opens a new connection with a backoff and renews the
//!    session over it before it is used: the session is `Connected` again
//!    (the lease moved to that renewal's send time), or the server says it
//!    has ended it, and the session is `Expired`.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use coord_core::backend::lease::LeaseClock;
use coord_core::backend::Backoff;
use coord_core::{Error, Result, SessionState};
use tokio::sync::{watch, Notify};
use tokio::time::Instant;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Row};

use crate::error::map;
use crate::options::Target;
use crate::tls::MakeTls;

/// Pacing of reconnects: soon after a failure, and never more than a
/// quarter second apart, so a session is back within moments of its server
/// (the recipes' backoff grows to a second).
pub(crate) const RECONNECT: Backoff = Backoff::new(
    std::time::Duration::from_millis(10),
    std::time::Duration::from_millis(250),
);

/// One request awaiting its answer, counted while it lives (dropped on
/// the answer, the timeout, or the caller's cancel).
struct InFlight<'a>(&'a std::sync::atomic::AtomicUsize);

impl<'a> InFlight<'a> {
    fn count(n: &'a std::sync::atomic::AtomicUsize) -> Self {
        n.fetch_add(1, Ordering::SeqCst);
        InFlight(n)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One parameter of a request, with its type (one round trip: no prepare).
pub(crate) type Param<'a> = (&'a (dyn ToSql + Sync), Type);

/// A server process: its id and start (together unique: ids are reused).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Backend {
    pid: i32,
    start: std::time::SystemTime,
}

/// Maps a server's error onto coord's.
pub(crate) type Mapper<'a> = dyn Fn(tokio_postgres::Error) -> Error + Sync + 'a;

/// The command connection of one session.
pub(crate) struct Link {
    pub(crate) target: Target,
    pub(crate) tls: MakeTls,
    /// The connection in use and its number; `None` while reconnecting.
    current: Mutex<Option<(u64, Arc<Client>)>>,
    /// The server process of each connection made: the process id and its
    /// start, by connection number (see [`Link::backend`]).
    backends: Mutex<std::collections::HashMap<u64, Backend>>,
    next_id: AtomicU64,
    sent: AtomicU64,
    /// Requests sent over the connection and not yet answered (or given
    /// up): a request sent now is answered after them.
    in_flight: std::sync::atomic::AtomicUsize,
    lost: Notify,
    /// This session's own close is under way: an end the server reports
    /// now is that close.
    closing: std::sync::atomic::AtomicBool,
    pub(crate) state: Arc<watch::Sender<SessionState>>,
}

impl Link {
    /// A link with no connection yet: [`Link::connect`] makes one, and
    /// [`Link::install`] puts it in use.
    pub(crate) fn new(
        target: Target,
        tls: MakeTls,
        state: Arc<watch::Sender<SessionState>>,
    ) -> Arc<Link> {
        Arc::new(Link {
            target,
            tls,
            current: Mutex::new(None),
            backends: Mutex::new(std::collections::HashMap::new()),
            next_id: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            in_flight: std::sync::atomic::AtomicUsize::new(0),
            lost: Notify::new(),
            closing: std::sync::atomic::AtomicBool::new(false),
            state,
        })
    }

    /// Open one connection to the server, its driver spawned; when the
    /// driver ends, the link drops that connection.
    ///
    /// # Errors
    /// Those of [`open`].
    pub(crate) async fn connect(self: &Arc<Self>) -> Result<(u64, Arc<Client>)> {
        let (client, conn) = open(&self.target, &self.tls).await?;
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let link = Arc::downgrade(self);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(target: "coord", error = %e, "postgres command connection ended");
            }
            if let Some(link) = link.upgrade() {
                link.broken(id);
            }
        });
        let who = "select pid, backend_start from pg_stat_activity where pid = pg_backend_pid()";
        let rows = self
            .bounded(id, client.query_typed(who, &[]), &|e| map(e, ""))
            .await?;
        if let Some(r) = rows.first() {
            let backend = Backend {
                pid: r.get(0),
                start: r.get(1),
            };
            let mut all = self.backends.lock().unwrap_or_else(|p| p.into_inner());
            all.retain(|k, _| *k + 8 > id);
            all.insert(id, backend);
        }
        Ok((id, Arc::new(client)))
    }

    /// The server process serving the connection in use now, if any: a
    /// request sent next goes to it.
    pub(crate) fn backend(&self) -> Option<Backend> {
        let (id, _) = self.client().ok()?;
        self.backends
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .copied()
    }

    /// Make sure nothing sent to `backend` can still land: end that server
    /// process (if it still runs) and wait until it is gone, over the
    /// connection in use. PostgreSQL aborts the transaction of a process
    /// it terminates, unless it had committed already.
    ///
    /// # Errors
    /// `ConnectionLost` (try again once reconnected) and the server's errors.
    pub(crate) async fn end_backend(&self, backend: Backend) -> Result<()> {
        let sql = "select pg_terminate_backend(pid, 10000) from pg_stat_activity \
                   where pid = $1 and backend_start = $2";
        self.query(
            sql,
            &[
                (&backend.pid, Type::INT4),
                (&backend.start, Type::TIMESTAMPTZ),
            ],
            "",
        )
        .await
        .map(|_| ())
    }

    /// Use `client` (number `id`) from now on; the session is connected.
    pub(crate) fn install(&self, id: u64, client: Arc<Client>) {
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) = Some((id, client));
        self.state.send_if_modified(|s| {
            if *s == SessionState::Suspended {
                *s = SessionState::Connected;
                true
            } else {
                false
            }
        });
    }

    /// Connection `id` is broken: stop using it, and wake the reconnector.
    fn broken(&self, id: u64) {
        let mut cur = self.current.lock().unwrap_or_else(|p| p.into_inner());
        if cur.as_ref().is_some_and(|(c, _)| *c == id) {
            *cur = None;
            drop(cur);
            self.state.send_if_modified(|s| {
                if *s == SessionState::Connected {
                    *s = SessionState::Suspended;
                    true
                } else {
                    false
                }
            });
            self.lost.notify_one();
        }
    }

    /// The connection in use, or `ConnectionLost` while there is none.
    fn client(&self) -> Result<(u64, Arc<Client>)> {
        self.current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| Error::ConnectionLost("postgres: reconnecting".into()))
    }

    /// How many requests went out so far.
    pub(crate) fn requests_sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// How many requests are awaiting their answers now.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Run `sql` with `params` over the current connection: its rows.
    ///
    /// # Errors
    /// `ConnectionLost` when there is no connection, the request times
    /// out or the connection breaks (the connection is then dropped and
    /// made again); the server's error, mapped ([`crate::error::map`]),
    /// naming `path`.
    pub(crate) async fn query(
        &self,
        sql: &str,
        params: &[Param<'_>],
        path: &str,
    ) -> Result<Vec<Row>> {
        self.query_mapped(sql, params, &|e| map(e, path)).await
    }

    /// [`Link::query`], the server's errors mapped by `mapper`.
    ///
    /// # Errors
    /// Those of [`Link::query`], the server's mapped by `mapper`.
    pub(crate) async fn query_mapped(
        &self,
        sql: &str,
        params: &[Param<'_>],
        mapper: &Mapper<'_>,
    ) -> Result<Vec<Row>> {
        // A serialization failure or a deadlock applied nothing: send it
        // again, a few times (PostgreSQL picks one victim per deadlock).
        let mut again = 0;
        loop {
            let (id, client) = self.client()?;
            self.sent.fetch_add(1, Ordering::Relaxed);
            let request = client.query_typed(sql, params);
            let _counted = InFlight::count(&self.in_flight);
            match tokio::time::timeout(self.target.request_timeout, request).await {
                Ok(Ok(rows)) => return Ok(rows),
                Ok(Err(e)) if crate::error::is_rolled_back(&e) && again < 5 => {
                    again += 1;
                    tracing::debug!(target: "coord", error = %e, "postgres rolled a request back; sending it again");
                }
                Ok(Err(e)) => {
                    let e = mapper(e);
                    if e.is_retryable() {
                        self.broken(id);
                    }
                    return Err(e);
                }
                Err(_) => {
                    self.broken(id);
                    return Err(self.no_answer());
                }
            }
        }
    }

    fn no_answer(&self) -> Error {
        Error::ConnectionLost(format!(
            "postgres: no answer within {:?}",
            self.target.request_timeout
        ))
    }

    /// Whether there is a connection to send on now.
    pub(crate) fn connected(&self) -> bool {
        self.current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// Await `request` (sent over connection `id`) within the request
    /// timeout; a timeout or a broken connection drops the connection.
    async fn bounded<T>(
        &self,
        id: u64,
        request: impl Future<Output = std::result::Result<T, tokio_postgres::Error>>,
        mapper: &Mapper<'_>,
    ) -> Result<T> {
        match tokio::time::timeout(self.target.request_timeout, request).await {
            Ok(Ok(t)) => Ok(t),
            Ok(Err(e)) => {
                let e = mapper(e);
                if e.is_retryable() {
                    self.broken(id);
                }
                Err(e)
            }
            Err(_) => {
                self.broken(id);
                Err(self.no_answer())
            }
        }
    }

    /// Make the connection again whenever it is lost, until the session is
    /// over: each new one first renews session `sid` (step 3 above).
    pub(crate) async fn reconnector(self: Arc<Self>, sid: i64, lease: Arc<LeaseClock>) {
        let renew = format!("select {}.renew($1)", self.target.schema);
        loop {
            self.lost.notified().await;
            let mut attempt = 0;
            loop {
                if self.state.borrow().is_terminal() {
                    return;
                }
                if self
                    .current
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .is_some()
                {
                    break;
                }
                match self.connect().await {
                    Ok((id, client)) => {
                        let sent = Instant::now();
                        self.sent.fetch_add(1, Ordering::Relaxed);
                        let answer = self
                            .bounded(
                                id,
                                client.query_typed(&renew, &[(&sid, Type::INT8)]),
                                &|e| map(e, ""),
                            )
                            .await;
                        match answer.map(|rows| rows.first().is_some_and(|r| r.get::<_, bool>(0))) {
                            Ok(true) => {
                                lease.renewed(sent);
                                self.install(id, client);
                                tracing::debug!(target: "coord", session = sid, "postgres connection made again");
                                break;
                            }
                            Ok(false) => {
                                self.ended_by_server();
                                return;
                            }
                            Err(e) => {
                                tracing::debug!(target: "coord", error = %e, "postgres renewal after a reconnect failed");
                            }
                        }
                    }
                    Err(e) => {
                        tracing::debug!(target: "coord", error = %e, "postgres reconnect failed");
                    }
                }
                let mut state = self.state.subscribe();
                tokio::select! {
                    () = RECONNECT.sleep(&mut attempt) => {}
                    _ = state.wait_for(|s| s.is_terminal()) => return,
                }
            }
        }
    }

    /// The server says the session is over: `Expired`, unless it already
    /// ended here.
    pub(crate) fn ended_by_server(&self) {
        let end = if self.closing.load(Ordering::SeqCst) {
            SessionState::Closed
        } else {
            SessionState::Expired
        };
        self.end(end);
    }

    /// The session is over with `end`, unless it already ended.
    pub(crate) fn end(&self, end: SessionState) {
        self.state.send_if_modified(|s| {
            if s.is_terminal() {
                false
            } else {
                *s = end;
                true
            }
        });
    }

    /// This session's close is about to be sent.
    pub(crate) fn closing(&self) {
        self.closing.store(true, Ordering::SeqCst);
    }
}

/// Open one connection (TLS if the target asks), its driver not yet
/// running.
///
/// # Errors
/// `ConnectionLost` when the server cannot be reached in the request
/// timeout; `Unauthenticated` for a refused role or password; TLS
/// failures as `ConnectionLost` naming them.
pub(crate) async fn open(
    target: &Target,
    tls: &MakeTls,
) -> Result<(
    Client,
    tokio_postgres::Connection<
        tokio_postgres::Socket,
        crate::tls::TlsStream<tokio_postgres::Socket>,
    >,
)> {
    match tokio::time::timeout(target.request_timeout, target.config.connect(tls.clone())).await {
        Ok(Ok(pair)) => Ok(pair),
        Ok(Err(e)) => Err(match map(e, "") {
            Error::ConnectionLost(m) => Error::ConnectionLost(format!("{}: {m}", target.addrs)),
            e => e,
        }),
        Err(_) => Err(Error::ConnectionLost(format!(
            "{}: no connection within {:?}",
            target.addrs, target.request_timeout
        ))),
    }
}

//! The listening connection: one per process for each server, role,
//! database, TLS setting and schema, shared by every session there.
//!
//! PostgreSQL 15 signals *every* listening backend of a database at each
//! commit that notifies (its `SignalBackends` does not look at channels),
//! and each then forwards the notice to its client: the server's work per
//! change grows with the listening connections, not with the waiters that
//! care. So the sessions of one process listen over one connection.
//!
//! 1. A session attaches its hub ([`attach`]): to the running listener of
//!    its key, waiting (within the request timeout) for its `LISTEN` to be
//!    in place; or, with none, to a new one, whose first connection and
//!    `LISTEN` it makes before it returns (their errors are its own).
//! 2. The listener hands every notice to every attached hub, in commit
//!    order. When its connection is lost every hub hears `down`, and when
//!    a new connection's `LISTEN` is in place every hub hears `up`, as a
//!    listener of its own would tell it ([`crate::watch`], step 2).
//! 3. The last hub to leave stops it. A listener that ends under attached
//!    sessions (its runtime shut down: tests run a runtime each) is seen by
//!    each of them ([`follow`]): its hub hears `down`, and it attaches
//!    again, to a listener on its own runtime, then its hub hears `up`.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use coord_core::{Error, Result, SessionState, TlsOptions};
use futures_util::StreamExt;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio_postgres::AsyncMessage;

use crate::link::{open, RECONNECT};
use crate::options::Target;
use crate::tls::MakeTls;
use crate::watch::{parse, Hub};

/// Who may share a listener: the same servers, role, password, database,
/// TLS options, schema and request timeout (the listener's pings notice a
/// silent connection within it). No `Debug`: the config holds the
/// password.
#[derive(PartialEq)]
struct Key {
    config: tokio_postgres::Config,
    tls: Option<TlsOptions>,
    schema: String,
    request_timeout: Duration,
}

impl Key {
    fn of(target: &Target) -> Key {
        Key {
            config: target.config.clone(),
            tls: target.tls.clone(),
            schema: target.schema.clone(),
            request_timeout: target.request_timeout,
        }
    }
}

/// Whether a listener's `LISTEN` is in place now.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    Connecting,
    Listening,
}

/// The hubs attached to a listener.
#[derive(Default)]
struct Hubs {
    all: Vec<(u64, Arc<Hub>)>,
    next: u64,
    /// The last hub left: the listener stops, and takes no more.
    closed: bool,
}

/// One shared listener. Its task owns the phase's sender: a listener whose
/// task has ended, however, has a closed phase.
pub(crate) struct Listener {
    key: Key,
    hubs: Mutex<Hubs>,
    phase: watch::Receiver<Phase>,
    stop: watch::Sender<bool>,
    /// The connection, while its `LISTEN` is in place (each hub has it too:
    /// [`Hub::side`]).
    client: Mutex<Option<Arc<tokio_postgres::Client>>>,
}

/// The running listeners of this process.
static LISTENERS: Mutex<Vec<Weak<Listener>>> = Mutex::new(Vec::new());

impl Listener {
    fn hubs(&self) -> std::sync::MutexGuard<'_, Hubs> {
        self.hubs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether its task still runs.
    fn running(&self) -> bool {
        self.phase.has_changed().is_ok()
    }

    /// Attach `hub`, unless the listener is stopping: its attachment, and
    /// whether the `LISTEN` is in place now (else every hub hears `up`
    /// when it is).
    fn join(self: &Arc<Self>, hub: &Arc<Hub>) -> Option<(Attachment, bool)> {
        let mut hubs = self.hubs();
        if hubs.closed || !self.running() {
            return None;
        }
        let id = hubs.next;
        hubs.next += 1;
        hubs.all.push((id, Arc::clone(hub)));
        let listening = *self.phase.borrow() == Phase::Listening;
        hub.set_side(self.client());
        Some((
            Attachment {
                listener: Arc::clone(self),
                id,
            },
            listening,
        ))
    }

    fn client(&self) -> Option<Arc<tokio_postgres::Client>> {
        self.client
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Move to `phase` (listening over `client`, or connecting) and tell
    /// every hub, in one step with attaching (so a hub attached while
    /// connecting always hears the `up`).
    fn enter(
        &self,
        tx: &watch::Sender<Phase>,
        phase: Phase,
        client: Option<Arc<tokio_postgres::Client>>,
    ) {
        let hubs = self.hubs();
        *self.client.lock().unwrap_or_else(|p| p.into_inner()) = client.clone();
        tx.send_replace(phase);
        for (_, hub) in &hubs.all {
            hub.set_side(client.clone());
            match phase {
                Phase::Listening => hub.up(),
                Phase::Connecting => hub.down(),
            }
        }
    }

    fn deliver(&self, payload: &str) {
        if let Some((notice, path)) = parse(payload) {
            for (_, hub) in &self.hubs().all {
                hub.deliver(&notice, path);
            }
        }
    }
}

/// A hub's place on a listener; dropping it detaches the hub, and the last
/// one stops the listener.
pub(crate) struct Attachment {
    listener: Arc<Listener>,
    id: u64,
}

impl Drop for Attachment {
    fn drop(&mut self) {
        let mut hubs = self.listener.hubs();
        hubs.all.retain(|(id, _)| *id != self.id);
        if hubs.all.is_empty() {
            hubs.closed = true;
            self.listener.stop.send_replace(true);
        }
    }
}

/// Attach `hub` to this process's listener for `target`, starting one if
/// none runs; returns once its `LISTEN` is in place (step 1).
///
/// # Errors
/// Those of a new listener's first connection ([`open`]) and its `LISTEN`;
/// `ConnectionLost` when the running listener does not listen again within
/// the request timeout.
///
/// # Cancel safety
/// Cancel safe: a hub attached by a dropped call is detached.
pub(crate) async fn attach(target: &Target, tls: &MakeTls, hub: &Arc<Hub>) -> Result<Attachment> {
    let down = || {
        Error::ConnectionLost(format!(
            "{}: the listening connection is down",
            target.addrs
        ))
    };
    loop {
        let key = Key::of(target);
        let joined = {
            let mut all = LISTENERS.lock().unwrap_or_else(|p| p.into_inner());
            all.retain(|l| l.upgrade().is_some_and(|l| l.running()));
            all.iter()
                .filter_map(Weak::upgrade)
                .filter(|l| l.key == key)
                .find_map(|l| l.join(hub))
        };
        let Some((attachment, listening)) = joined else {
            return start(target, tls, hub, key).await;
        };
        if listening {
            return Ok(attachment);
        }
        let mut phase = attachment.listener.phase.clone();
        match tokio::time::timeout(target.request_timeout, async {
            phase.wait_for(|p| *p == Phase::Listening).await.map(drop)
        })
        .await
        {
            Ok(Ok(())) => return Ok(attachment),
            // It ended while connecting: start another.
            Ok(Err(_)) => continue,
            Err(_) => return Err(down()),
        }
    }
}

/// Start a listener for `key` with `hub` attached: registered first (so
/// sessions opening beside this one wait for it rather than start their
/// own), then its first connection and `LISTEN`.
async fn start(target: &Target, tls: &MakeTls, hub: &Arc<Hub>, key: Key) -> Result<Attachment> {
    let (phase_tx, phase_rx) = watch::channel(Phase::Connecting);
    let (stop, stopped) = watch::channel(false);
    let listener = Arc::new(Listener {
        key,
        hubs: Mutex::new(Hubs {
            all: vec![(0, Arc::clone(hub))],
            next: 1,
            closed: false,
        }),
        phase: phase_rx,
        stop,
        client: Mutex::new(None),
    });
    let attachment = Attachment {
        listener: Arc::clone(&listener),
        id: 0,
    };
    LISTENERS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Arc::downgrade(&listener));
    // Until the task owns `phase_tx`, an error here (or this call dropped)
    // drops it: those waiting for this listener start their own.
    let first = open(target, tls).await?;
    let (ready_tx, ready_rx) = oneshot::channel();
    tokio::spawn(run(
        listener,
        target.clone(),
        tls.clone(),
        first,
        phase_tx,
        stopped,
        ready_tx,
    ));
    match ready_rx.await {
        Ok(Ok(())) => Ok(attachment),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(Error::ConnectionLost(format!(
            "{}: the listening connection closed",
            target.shown
        ))),
    }
}

/// A connection and its driver, as [`open`] makes them.
type Opened = (
    tokio_postgres::Client,
    tokio_postgres::Connection<
        tokio_postgres::Socket,
        crate::tls::TlsStream<tokio_postgres::Socket>,
    >,
);

/// The listener's task: listen on connections made again whenever lost,
/// until the last hub leaves (step 2). The first connection's failure goes
/// to `ready` and ends it.
async fn run(
    listener: Arc<Listener>,
    target: Target,
    tls: MakeTls,
    first: Opened,
    phase: watch::Sender<Phase>,
    mut stop: watch::Receiver<bool>,
    ready: oneshot::Sender<Result<()>>,
) {
    let mut ready = Some(ready);
    let mut pending = Some(first);
    let mut attempt = 0;
    loop {
        let conn = match pending.take() {
            Some(c) => Ok(c),
            None => open(&target, &tls).await,
        };
        match conn {
            Ok((client, conn)) => {
                let on = Connection {
                    listener: &listener,
                    target: &target,
                    phase: &phase,
                };
                if on
                    .listen(Arc::new(client), conn, &mut ready, &mut stop)
                    .await
                {
                    attempt = 0;
                }
            }
            Err(e) => {
                tracing::debug!(target: "coord", error = %e, "postgres listening connection failed");
            }
        }
        if let Some(tx) = ready.take() {
            let _ = tx.send(Err(Error::ConnectionLost(format!(
                "{}: the listening connection closed",
                target.shown
            ))));
            return;
        }
        if *stop.borrow() {
            return;
        }
        tokio::select! {
            () = RECONNECT.sleep(&mut attempt) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

/// One connection of a listener.
struct Connection<'a> {
    listener: &'a Listener,
    target: &'a Target,
    phase: &'a watch::Sender<Phase>,
}

impl Connection<'_> {
    /// Listen over this connection until it is lost or the listener stops;
    /// `true` if its `LISTEN` took.
    async fn listen(
        &self,
        client: Arc<tokio_postgres::Client>,
        mut conn: tokio_postgres::Connection<
            tokio_postgres::Socket,
            crate::tls::TlsStream<tokio_postgres::Socket>,
        >,
        ready: &mut Option<oneshot::Sender<Result<()>>>,
        stop: &mut watch::Receiver<bool>,
    ) -> bool {
        let target = self.target;
        let mut messages = futures_util::stream::poll_fn(move |cx| conn.poll_message(cx)).boxed();
        let statement = format!("listen {}", target.schema);
        let listening =
            tokio::time::timeout(target.request_timeout, client.batch_execute(&statement));
        tokio::pin!(listening);
        let mut listened = false;
        // A ping now and then, so a connection cut without a reset is
        // noticed within about a request timeout (a listener otherwise
        // only reads). The ping is the `LISTEN` again (a no-op when in
        // place): `pg_stat_activity.query` then always names a listener.
        let mut ping = tokio::time::interval(target.request_timeout.max(Duration::from_secs(1)));
        ping.tick().await;
        let mut pinging: Option<futures_util::future::BoxFuture<'_, bool>> = None;
        loop {
            tokio::select! {
                r = &mut listening, if !listened => match r {
                    Ok(Ok(())) => {
                        listened = true;
                        self.listener
                            .enter(self.phase, Phase::Listening, Some(Arc::clone(&client)));
                        if let Some(tx) = ready.take() {
                            let _ = tx.send(Ok(()));
                        }
                    }
                    _ => break,
                },
                m = messages.next() => match m {
                    Some(Ok(AsyncMessage::Notification(n))) => self.listener.deliver(n.payload()),
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => break,
                },
                _ = ping.tick(), if listened && pinging.is_none() => {
                    let query = client.simple_query(&statement);
                    let within = target.request_timeout;
                    pinging = Some(Box::pin(async move {
                        matches!(tokio::time::timeout(within, query).await, Ok(Ok(_)))
                    }));
                }
                alive = async {
                    match pinging.as_mut() {
                        Some(p) => p.await,
                        None => std::future::pending().await,
                    }
                }, if pinging.is_some() => {
                    pinging = None;
                    if !alive {
                        break;
                    }
                }
                _ = stop.wait_for(|s| *s) => break,
            }
        }
        if listened {
            self.listener.enter(self.phase, Phase::Connecting, None);
        }
        listened
    }
}

/// Keep `hub` attached until the session's state (`state`) ends: when its
/// listener ends under it (step 3), its hub hears `down`, and it attaches
/// again (retried with a backoff), then its hub hears `up`.
pub(crate) fn follow(
    mut attachment: Attachment,
    target: Target,
    tls: MakeTls,
    hub: Arc<Hub>,
    mut state: watch::Receiver<SessionState>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let mut phase = attachment.listener.phase.clone();
            tokio::select! {
                () = async { while phase.changed().await.is_ok() {} } => {}
                _ = state.wait_for(|s| s.is_terminal()) => return,
            }
            drop(attachment);
            hub.set_side(None);
            hub.down();
            let mut attempt = 0;
            attachment = loop {
                match attach(&target, &tls, &hub).await {
                    Ok(a) => break a,
                    Err(e) => {
                        tracing::debug!(target: "coord", error = %e, "postgres listener: attaching again");
                    }
                }
                tokio::select! {
                    () = RECONNECT.sleep(&mut attempt) => {}
                    _ = state.wait_for(|s| s.is_terminal()) => return,
                }
            };
            hub.up();
        }
    })
}

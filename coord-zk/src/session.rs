//! [`ZkSession`]: one ZooKeeper session, its connection, and the helpers the
//! primitive operations share (retries, parents, finding a lost create).

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use coord_core::backoff::Backoff;
use coord_core::{Created, Error, LeaseClock, Result, SessionId, SessionState};
use tokio::time::Instant;
use zookeeper_client as zk;

use crate::error::{is_connection_error, map_error, Target};
use crate::names;
use crate::options::ZkOptions;
use crate::state::{self, Shared};

/// The pauses before retries after a connection loss: 20 ms, doubling up to
/// 1 s, with jitter.
const BACKOFF: Backoff = Backoff::new(Duration::from_millis(20), Duration::from_secs(1));

/// How many lease pings a session sends per session timeout (see
/// [`ping`]): every `session_timeout / PINGS_PER_TIMEOUT`.
const PINGS_PER_TIMEOUT: u32 = 3;

/// The shortest pause between two lease pings, whatever the timeout.
const MIN_PING_PERIOD: Duration = Duration::from_millis(10);

/// How much longer than a session timeout [`ZkSession::abandon_session`]
/// waits for the server before leaving the session to the server's own
/// timeout.
const ABANDON_GRACE: Duration = Duration::from_secs(1);

/// How many times parents are made again for one create (a container parent
/// can be deleted by the server between our mkdir and our create).
pub(crate) const MAX_PARENT_ROUNDS: usize = 8;

/// Where a session's client lives: `None` once closed.
pub(crate) type ClientSlot = Arc<RwLock<Option<zk::Client>>>;

/// A clone of the client in `slot`, for one request.
pub(crate) fn client_in(slot: &ClientSlot) -> Result<zk::Client, zk::Error> {
    let guard = slot.read().unwrap_or_else(|e| e.into_inner());
    guard.as_ref().cloned().ok_or(zk::Error::ClientClosed)
}

/// One ZooKeeper session: coord's [`coord_core::PrimitiveSession`] on
/// ZooKeeper. Usually held as a [`coord_core::Session`] (see
/// [`crate::connect`]).
///
/// Dropping it closes the session (the server deletes its ephemeral nodes);
/// [`coord_core::Session::close`] does the same and waits for the server.
pub struct ZkSession {
    /// `None` once closed: dropping the last `Client` clone is how the
    /// client library closes a session.
    client: ClientSlot,
    pub(crate) shared: Arc<Shared>,
    id: SessionId,
    credentials: zk::SessionInfo,
    session_timeout: Duration,
    /// How long reads keep retrying through a connection loss.
    retry_budget: Duration,
    requests: AtomicU64,
    /// The client's side of the session's life; renewed by [`ping`].
    lease: Arc<LeaseClock>,
    /// The ACL of every node the session creates ([`ZkOptions::acl`]).
    acls: zk::Acls<'static>,
}

impl std::fmt::Debug for ZkSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZkSession")
            .field("id", &self.id)
            .field("state", &self.shared.get())
            .field("session_timeout", &self.session_timeout)
            .finish()
    }
}

impl Drop for ZkSession {
    /// Take the client out of its slot, so a watch still holding the slot
    /// does not keep the session open: the last handle goes, and the client
    /// closes the session.
    fn drop(&mut self) {
        self.client
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .take();
    }
}

/// A session's id and password: what a second client needs to take the
/// session over (tests use it to expire a session). Treat as a secret.
#[derive(Clone)]
pub struct SessionCredentials(pub(crate) zk::SessionInfo);

impl std::fmt::Debug for SessionCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The password stays out of logs.
        write!(f, "SessionCredentials({})", self.0.id())
    }
}

impl ZkSession {
    /// Open a session on the ensemble `options` names, making the chroot
    /// first if it is missing (see [`ZkOptions::create_chroot`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`], before any I/O, for a session or
    /// connection timeout of zero or over
    /// [`coord_core::limits::MAX_SESSION_TIMEOUT`], an empty digest or SASL
    /// user, a digest user containing `:`, or a creator [`crate::ZkAcl`]
    /// without credentials; also before any network I/O, TLS settings or
    /// files that cannot be used, and a TLS `server_name` (see
    /// [`ZkOptions::tls`]);
    /// [`Error::ConnectionLost`] when no host answered within about the
    /// session timeout, or at once when a plaintext session reached a
    /// TLS-only port (the message says the server may require TLS);
    /// [`Error::Unauthenticated`], at once, when a TLS handshake failed on
    /// the server's certificate (hint: `ca=`) or on the client's (hint:
    /// `cert=`/`key=`); [`Error::SessionExpired`] when the server refused the
    /// session; [`Error::Unauthenticated`] when it refused the SASL
    /// credentials (or required SASL and got none);
    /// [`Error::PermissionDenied`] when the chroot cannot be made under an
    /// existing node's ACL; [`Error::Backend`] for anything else the server
    /// says.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped before it returns, the half-made session is
    /// closed, or left to expire if the handshake was under way.
    pub async fn connect(options: &ZkOptions) -> Result<ZkSession> {
        options.validate()?;
        // TLS files are read before any network I/O.
        let tls = options.load_tls()?;
        // The session lives on the server at least until this instant plus
        // its timeout: the connect request was sent after it.
        let sent = Instant::now();
        let client =
            crate::tls::connect(options, tls.as_ref(), |e| connect_error(options, e)).await?;
        // The negotiated timeout (the client reports the larger of it and
        // its connection timeout, which it keeps below the negotiated one).
        let session_timeout = client.session_timeout();
        let lease = Arc::new(LeaseClock::new(session_timeout, sent));
        let client = match options.chroot() {
            None => client,
            Some(chroot) => {
                if options.creates_chroot() {
                    let persistent = zk::CreateMode::Persistent.with_acls(options.get_acl().acls());
                    let mkdir_sent = Instant::now();
                    match client.mkdir(chroot, &persistent).await {
                        Ok(()) => {}
                        // ZooKeeper checks CREATE on the parent before it
                        // looks for the node: an existing chroot under a
                        // foreign ACL is refused, though there is nothing
                        // to make.
                        Err(zk::Error::NoAuth)
                            if matches!(client.check_stat(chroot).await, Ok(Some(_))) => {}
                        Err(e) => return Err(map_error(e, Target::path(chroot))),
                    }
                    lease.renewed(mkdir_sent);
                }
                client.chroot(chroot.to_owned()).map_err(|_| {
                    Error::InvalidArgument(format!("zookeeper refuses chroot {chroot:?}"))
                })?
            }
        };
        // A handshake that took most of the timeout (hosts tried in turn)
        // leaves little of the lease: renew it before handing the session
        // out, rather than have it given up at once.
        if sent.elapsed() > lease.usable() / 2 {
            let ping_sent = Instant::now();
            client
                .check_stat("/")
                .await
                .map_err(|e| map_error(e, Target::path("/")))?;
            lease.renewed(ping_sent);
        }
        let shared = Shared::new();
        state::follow(shared.clone(), client.state_watcher());
        let credentials = client.session().clone();
        let id = SessionId(client.session_id().to_string());
        tracing::debug!(session = %id, ?session_timeout, "zk session open");
        let slot: ClientSlot = Arc::new(RwLock::new(Some(client)));
        tokio::spawn(ping(
            Arc::downgrade(&slot),
            shared.clone(),
            lease.clone(),
            session_timeout,
        ));
        Ok(ZkSession {
            client: slot,
            shared,
            id,
            credentials,
            session_timeout,
            retry_budget: session_timeout.saturating_mul(2),
            requests: AtomicU64::new(0),
            lease,
            acls: options.get_acl().acls(),
        })
    }

    /// The session's id and password, for a second client to take the
    /// session over (see [`crate::testing::expire`]).
    pub fn session_credentials(&self) -> SessionCredentials {
        SessionCredentials(self.credentials.clone())
    }

    /// The session timeout the server granted.
    pub fn session_timeout(&self) -> Duration {
        self.session_timeout
    }

    /// How many requests this session has sent to the server so far (reads,
    /// writes and multis; not pings, neither the client's nor the lease
    /// pings): a way to count round trips.
    pub fn requests_sent(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    pub(crate) fn id(&self) -> SessionId {
        self.id.clone()
    }

    /// The ACL to create nodes with (see [`crate::ZkAcl`]).
    pub(crate) fn acls(&self) -> zk::Acls<'static> {
        self.acls
    }

    pub(crate) fn lease_clock(&self) -> &LeaseClock {
        &self.lease
    }

    pub(crate) fn raw_session_id(&self) -> i64 {
        self.credentials.id().0
    }

    /// A handle on the client for one request, counted as sent.
    pub(crate) fn client(&self) -> Result<zk::Client, zk::Error> {
        let client = client_in(&self.client)?;
        self.requests.fetch_add(1, Ordering::Relaxed);
        Ok(client)
    }

    /// The slot the client lives in, for a watch that must make a request
    /// later without keeping the session open (a `Client` clone would).
    pub(crate) fn client_slot(&self) -> ClientSlot {
        Arc::clone(&self.client)
    }

    /// A handle for a write: while the connection is down, writes fail at
    /// once with `ConnectionLost` (as the contract says of a suspended
    /// session) rather than wait in the client for the next connection.
    pub(crate) fn writer(&self, target: Target<'_>) -> Result<zk::Client> {
        let client = self.client().map_err(|e| self.map(e, target))?;
        if client.state() == zk::SessionState::Disconnected {
            return Err(Error::ConnectionLost(format!(
                "session {} is suspended: no connection to ZooKeeper",
                self.id
            )));
        }
        Ok(client)
    }

    /// Map a ZooKeeper error; the session's own end wins over what the
    /// request saw (a closed client after an expiry is `SessionExpired`).
    pub(crate) fn map(&self, err: zk::Error, target: Target<'_>) -> Error {
        match map_error(err, target) {
            e if e.is_session_end() => self.shared.ended_error(),
            e => e,
        }
    }

    /// A retry clock for one operation.
    pub(crate) fn retry_clock(&self) -> Retry {
        Retry {
            deadline: after(self.retry_budget),
            attempt: 0,
        }
    }

    /// Wait before retrying after a connection loss: `false` when the budget
    /// is spent or the session is over (then the error stands).
    pub(crate) async fn pause(&self, retry: &mut Retry) -> bool {
        if self.shared.get().is_terminal() || Instant::now() >= retry.deadline {
            return false;
        }
        let wake = after(BACKOFF.next(&mut retry.attempt)).min(retry.deadline);
        // Requests sent while disconnected wait in the client for the next
        // connection, so a plain pause is enough; stop early if the session
        // ends meanwhile.
        let mut rx = self.shared.subscribe();
        let _ = tokio::time::timeout_at(wake, rx.wait_for(|s| s.is_terminal())).await;
        !self.shared.get().is_terminal()
    }

    /// Run a read, retried (bounded, with backoff) through connection losses
    /// while the session lives. `op` gets a fresh client each attempt and
    /// sends its request when first polled, so a read issued right after a
    /// write (before awaiting either) is ordered after it.
    pub(crate) async fn read<T, F, Fut>(&self, mut op: F) -> Result<T, zk::Error>
    where
        F: FnMut(zk::Client) -> Fut,
        Fut: Future<Output = Result<T, zk::Error>>,
    {
        let mut retry = self.retry_clock();
        loop {
            let result = op(self.client()?).await;
            match result {
                Err(e) if is_connection_error(&e) && self.pause(&mut retry).await => {
                    tracing::debug!(error = %e, "zk read retried after a connection loss");
                }
                other => return other,
            }
        }
    }

    /// Make `dir` and its missing ancestors as container nodes (ZooKeeper
    /// deletes a container once its last child is gone, so emptied lock and
    /// queue directories do not pile up). Concurrent makers are fine: an
    /// existing node counts as made, also when the parent's ACL refuses
    /// this identity CREATE (ZooKeeper checks that before it looks for the
    /// node). The directories get the session's ACL ([`crate::ZkAcl`]).
    pub(crate) async fn make_parents(&self, dir: &str) -> Result<()> {
        if dir == "/" {
            return Ok(());
        }
        let container = zk::CreateMode::Container.with_acls(self.acls);
        let mut todo = vec![dir.to_owned()];
        let mut retry = self.retry_clock();
        let mut steps = 0;
        while let Some(path) = todo.last() {
            steps += 1;
            if steps > 4 * MAX_PARENT_ROUNDS + 64 {
                return Err(Error::ConnectionLost(format!(
                    "could not make the parents of {dir}: they keep vanishing"
                )));
            }
            let result = self
                .client()
                .map_err(|e| self.map(e, Target::path(path)))?
                .create(path, &[], &container)
                .await;
            match result {
                Ok(_) | Err(zk::Error::NodeExists) => {
                    todo.pop();
                }
                Err(zk::Error::NoNode) => {
                    let parent = coord_core::path::parent(path);
                    if parent == "/" {
                        // Only a missing chroot gets here.
                        return Err(Error::NotFound { path: "/".into() });
                    }
                    let parent = parent.to_owned();
                    todo.push(parent);
                }
                Err(e) if is_connection_error(&e) && self.pause(&mut retry).await => {}
                Err(zk::Error::NoAuth) if self.node_exists(path).await => {
                    todo.pop();
                }
                Err(e) => return Err(self.map(e, Target::path(path))),
            }
        }
        Ok(())
    }

    /// Whether `path` is there (an `exists`, retried through connection
    /// losses); `false` when that cannot be told.
    async fn node_exists(&self, path: &str) -> bool {
        matches!(
            self.read(|c| async move { c.check_stat(path).await }).await,
            Ok(Some(_))
        )
    }

    /// Look for the node a sequential create made under `dir` whose answer
    /// was lost: the child whose name starts with `name_prefix` (which holds
    /// a unique protected id). `findPrefixInChildren` of the ZooKeeper
    /// recipes' `WriteLock`.
    pub(crate) async fn find_created(
        &self,
        dir: &str,
        name_prefix: &str,
    ) -> Result<Option<Created>> {
        let names = match self
            .read(|c| async move { c.list_children(dir).await })
            .await
        {
            Ok(names) => names,
            Err(zk::Error::NoNode) => return Ok(None),
            Err(e) => return Err(self.map(e, Target::path(dir))),
        };
        let Some(name) = names
            .into_iter()
            .find(|n| n.starts_with(name_prefix) && names::sequence_of(n).is_some())
        else {
            return Ok(None);
        };
        let path = coord_core::path::join(dir, &name);
        let found = self
            .read(|c| {
                let path = path.as_str();
                async move { c.get_data(path).await }
            })
            .await;
        match found {
            Ok((_, stat)) => {
                tracing::debug!(%path, "found the node of a create whose answer was lost");
                Ok(Some(created(
                    path.clone(),
                    names::sequence_of(&name),
                    &stat,
                )))
            }
            // Made, then deleted already: report what it was would need its
            // stat; treat it as never found (a fresh create follows).
            Err(zk::Error::NoNode) => Ok(None),
            Err(e) => Err(self.map(e, Target::path(&path))),
        }
    }

    /// Close the session and wait (up to the session timeout) for the server
    /// to confirm.
    pub(crate) async fn close_session(&self) -> Result<()> {
        self.shared.mark_closing();
        let client = self
            .client
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let Some(client) = client else {
            return Ok(());
        };
        let mut watcher = client.state_watcher();
        // Dropping the last clone makes the client send CloseSession.
        drop(client);
        let confirmed = tokio::time::timeout(
            self.session_timeout,
            state_until(&mut watcher, zk::SessionState::is_terminated),
        )
        .await;
        self.shared.set(SessionState::Closed);
        match confirmed {
            Ok(state) => {
                tracing::debug!(session = %self.id, ?state, "zk session closed");
                Ok(())
            }
            Err(_) => Err(Error::ConnectionLost(format!(
                "could not tell the server to close session {}; it ends when its {:?} timeout runs out",
                self.id, self.session_timeout
            ))),
        }
    }

    /// The client gave the session up: its lease deadline passed with no
    /// newer answer (see [`coord_core::lease`]). The state becomes
    /// `Expired` at once and stays so; the client is taken out of its slot
    /// (every later request fails as on an ended session) and, once the
    /// ZooKeeper client is connected again, dropped: the last handle gone,
    /// the client sends CloseSession and the server deletes the session's
    /// ephemerals at once.
    ///
    /// The wait is bounded by the session timeout (and a grace): by then
    /// the server has ended the session by itself, nothing renewing it.
    /// The client is dropped either way, so a connection made later still
    /// carries the close.
    pub(crate) async fn abandon_session(&self) {
        self.shared.set(SessionState::Expired);
        let client = self
            .client
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let Some(client) = client else {
            return;
        };
        let deadline = after(self.session_timeout.saturating_add(ABANDON_GRACE));
        let mut watcher = client.state_watcher();
        let reached = tokio::time::timeout_at(
            deadline,
            state_until(&mut watcher, |s| {
                s.is_terminated()
                    || matches!(
                        s,
                        zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly
                    )
            }),
        )
        .await;
        // Dropping the last handle makes the client send CloseSession on
        // its connection (or on the next one, while it still tries).
        drop(client);
        match reached {
            Ok(state) if state.is_terminated() => {
                tracing::debug!(session = %self.id, ?state, "abandoned zk session already over");
            }
            Ok(_) => {
                let confirmed = tokio::time::timeout(
                    self.session_timeout,
                    state_until(&mut watcher, zk::SessionState::is_terminated),
                )
                .await;
                match confirmed {
                    Ok(state) => tracing::debug!(
                        session = %self.id,
                        ?state,
                        "abandoned zk session closed on the server"
                    ),
                    Err(_) => tracing::debug!(
                        session = %self.id,
                        "no confirmation of the abandoned zk session's close; \
                         the server ends it by its timeout"
                    ),
                }
            }
            Err(_) => tracing::debug!(
                session = %self.id,
                timeout = ?self.session_timeout,
                "the server stayed out of reach; the abandoned zk session ends by its timeout there"
            ),
        }
    }
}

/// The instant `d` from now, or a far one when that does not fit.
pub(crate) fn after(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d)
        .or_else(|| now.checked_add(FAR))
        .unwrap_or(now)
}

/// Far enough to stand for "never" in a deadline.
const FAR: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// Renew the session's lease: every `session_timeout / 3`, send a cheap read
/// (`exists` on the session's root, `/` under the chroot) and, when the
/// server answers, move the lease deadline to its send time plus the usable
/// part of the timeout. The client's own pings are invisible here; any
/// answered request proves the server heard the session no earlier than it
/// was sent, even one that waited in the client for a connection.
///
/// Holds the client only for the instant it takes to send (through a weak
/// handle on its slot, so dropping every session handle still closes the
/// session); not counted in [`ZkSession::requests_sent`]. Ends when the
/// session ends, is abandoned or closed (its slot emptied), or is dropped.
async fn ping(
    slot: Weak<RwLock<Option<zk::Client>>>,
    shared: Arc<Shared>,
    lease: Arc<LeaseClock>,
    session_timeout: Duration,
) {
    let period = (session_timeout / PINGS_PER_TIMEOUT).max(MIN_PING_PERIOD);
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut states = shared.subscribe();
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = states.wait_for(|s| s.is_terminal()) => return,
        }
        let Some(slot) = slot.upgrade() else { return };
        let Ok(client) = client_in(&slot) else { return };
        drop(slot);
        let sent = Instant::now();
        // The request leaves now; waiting for its answer needs no client.
        let answer = client.check_stat("/");
        drop(client);
        let lease = lease.clone();
        tokio::spawn(async move {
            if let Ok(Ok(_)) = tokio::time::timeout(session_timeout, answer).await {
                lease.renewed(sent);
            }
        });
    }
}

/// The client's state, once it satisfies `done` (at once if it already
/// does).
async fn state_until(
    watcher: &mut zk::StateWatcher,
    done: impl Fn(zk::SessionState) -> bool,
) -> zk::SessionState {
    let mut state = watcher.peek_state();
    while !done(state) {
        state = watcher.changed().await;
    }
    state
}

/// A running retry budget: a deadline and the attempts so far (of
/// [`BACKOFF`]).
#[derive(Debug)]
pub(crate) struct Retry {
    deadline: Instant,
    attempt: u32,
}

/// The [`Created`] for a node at `path` with `stat`.
pub(crate) fn created(path: String, sequence: Option<u64>, stat: &zk::Stat) -> Created {
    Created::new(path, sequence, stamp_of(stat), version_of(stat))
}

/// The stamp: czxid, which increases with every create in the ensemble.
pub(crate) fn stamp_of(stat: &zk::Stat) -> u64 {
    u64::try_from(stat.czxid).unwrap_or(0)
}

/// The data version.
pub(crate) fn version_of(stat: &zk::Stat) -> u64 {
    u64::try_from(stat.version).unwrap_or(0)
}

/// coord's stat of a ZooKeeper stat.
pub(crate) fn stat_of(stat: &zk::Stat) -> coord_core::Stat {
    let owner = session_owner(stat.ephemeral_owner);
    coord_core::Stat::new(
        version_of(stat),
        stamp_of(stat),
        owner.is_some(),
        created_at_of(stat),
    )
    .with_owner(
        // As the owner's `id()` shows it: the client's session id, `0x…`.
        owner.map(|o| SessionId(zk::SessionId(o).to_string())),
    )
}

/// The session owning a node, from its `ephemeralOwner`: `None` for 0 (a
/// persistent node) and for the values ZooKeeper stores there for nodes
/// that no session owns: a container (`i64::MIN`) and the extended types
/// (top byte `0xff`: a TTL node keeps its TTL in the low 40 bits).
pub(crate) fn session_owner(ephemeral_owner: i64) -> Option<i64> {
    let extended = (ephemeral_owner as u64) >> 56 == 0xff;
    (ephemeral_owner != 0 && ephemeral_owner != i64::MIN && !extended).then_some(ephemeral_owner)
}

/// The creation time: `ctime`, milliseconds since the epoch by the clock of
/// the server that applied the create. The root (and a stat the server left
/// out) carries 0: no time.
pub(crate) fn created_at_of(stat: &zk::Stat) -> Option<std::time::SystemTime> {
    let ms = u64::try_from(stat.ctime).ok().filter(|ms| *ms > 0)?;
    std::time::SystemTime::UNIX_EPOCH.checked_add(Duration::from_millis(ms))
}

fn connect_error(options: &ZkOptions, err: zk::Error) -> Error {
    match err {
        zk::Error::Timeout | zk::Error::NoHosts => Error::ConnectionLost(format!(
            "no ZooKeeper server at {} answered within the session timeout ({:?})",
            options.hosts(),
            options.get_session_timeout()
        )),
        other => map_error(other, Target::path("/")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A duration the client cannot take is refused before any I/O: no
    /// connect is tried (the host would make it wait), nothing overflows.
    #[tokio::test]
    async fn connect_refuses_a_session_timeout_out_of_range() {
        // A black-hole address: a connect attempt would hang, not fail.
        let base = ZkOptions::new("192.0.2.1:2181").expect("valid");
        for bad in [
            Duration::ZERO,
            Duration::from_secs(106_751_991_167_301 * 24 * 3600),
            Duration::MAX,
        ] {
            let options = base.clone().session_timeout(bad);
            let result = tokio::time::timeout(Duration::from_secs(1), ZkSession::connect(&options))
                .await
                .expect("refused at once, before any I/O");
            assert!(
                matches!(result, Err(Error::InvalidArgument(_))),
                "{bad:?}: {result:?}"
            );
        }
    }

    /// Only a real session id owns a node: not 0 (persistent), not a
    /// container's `i64::MIN`, not a TTL node's `0xff…` with its TTL.
    #[test]
    fn only_sessions_own_nodes() {
        assert_eq!(session_owner(0), None);
        assert_eq!(session_owner(i64::MIN), None);
        let ttl_node = (0xffu64 << 56 | 2000) as i64;
        assert_eq!(session_owner(ttl_node), None);
        assert_eq!(
            session_owner(0x0100_0123_4567_0001),
            Some(0x0100_0123_4567_0001)
        );
    }

    #[test]
    fn deadlines_never_overflow() {
        let now = Instant::now();
        assert!(after(Duration::MAX) > now);
        assert!(after(Duration::from_millis(5)) >= now + Duration::from_millis(5));
    }
}

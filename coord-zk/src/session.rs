//! [`ZkSession`]: one ZooKeeper session, and the primitive contract on it
//! ([`PrimitiveSession`]); closing and abandoning it.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use coord_core::backend::{lease::LeaseClock, PrimitiveSession};
use coord_core::{
    Child, CreateMode, Created, Error, Fence, Node, Op, OpResult, Result, SessionId, SessionState,
    Stat, Transaction, TreeWatch, TxnResult, Watch,
};
use tokio::sync::watch;
use zookeeper_client as zk;

use crate::create::zk_version;
use crate::error::Target;
use crate::error::BACKEND;
use crate::handle::{after, Handle};
use crate::names;
use crate::stat::stat_of;

/// How much longer than a session timeout [`ZkSession::abandon_session`]
/// waits for the server before leaving the session to the server's own
/// timeout.
const ABANDON_GRACE: Duration = Duration::from_secs(1);

/// One ZooKeeper session: coord's [`coord_core::backend::PrimitiveSession`] on
/// ZooKeeper. Usually held as a [`coord_core::Session`] (see
/// [`crate::connect`]).
///
/// Dropping it closes the session (the server deletes its ephemeral nodes);
/// [`coord_core::Session::close`] does the same and waits for the server.
pub struct ZkSession {
    /// The way to the client for every request.
    pub(crate) handle: Handle,
    /// What a second client needs to take the session over.
    pub(crate) credentials: zk::SessionInfo,
    /// The client's side of the session's life; renewed by the lease pings
    /// ([`crate::keepalive`]).
    pub(crate) lease: Arc<LeaseClock>,
    /// What a connection of its own needs to end the session when this
    /// one's cannot ([`PrimitiveSession::ender`]).
    pub(crate) options: crate::ZkOptions,
}

impl std::fmt::Debug for ZkSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZkSession")
            .field("id", &self.handle.id)
            .field("state", &self.handle.shared.get())
            .field("session_timeout", &self.handle.session_timeout)
            .finish()
    }
}

impl Drop for ZkSession {
    /// Take the client out of its slot, so a watch still holding the slot
    /// does not keep the session open: the last handle goes, and the client
    /// closes the session.
    fn drop(&mut self) {
        drop(self.handle.take_client());
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
    /// The session's id and password, for a second client to take the
    /// session over (see [`crate::testing::expire`]).
    pub fn session_credentials(&self) -> SessionCredentials {
        SessionCredentials(self.credentials.clone())
    }

    /// The session timeout the server granted.
    pub fn session_timeout(&self) -> Duration {
        self.handle.session_timeout
    }

    /// How many requests this session has sent to the server so far (reads,
    /// writes and multis; not pings, neither the client's nor the lease
    /// pings): a way to count round trips.
    pub fn requests_sent(&self) -> u64 {
        self.handle.requests_sent()
    }

    /// Close the session and wait (up to the session timeout) for the server
    /// to confirm.
    pub(crate) async fn close_session(&self) -> Result<()> {
        self.handle.shared.mark_closing();
        let client = self.handle.take_client();
        let Some(client) = client else {
            return Ok(());
        };
        let mut watcher = client.state_watcher();
        // Dropping the last clone makes the client send CloseSession.
        drop(client);
        let confirmed = tokio::time::timeout(
            self.handle.session_timeout,
            state_until(&mut watcher, zk::SessionState::is_terminated),
        )
        .await;
        self.handle.shared.set(SessionState::Closed);
        match confirmed {
            Ok(state) => {
                tracing::debug!(session = %self.handle.id, ?state, "zk session closed");
                Ok(())
            }
            Err(_) => Err(Error::ConnectionLost(format!(
                "could not tell the server to close session {}; it ends when its {:?} timeout runs out",
                self.handle.id, self.handle.session_timeout
            ))),
        }
    }

    /// The client gave the session up: its lease deadline passed with no
    /// newer answer (see [`coord_core::backend::lease`]). The state becomes
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
        self.handle.shared.set(SessionState::Expired);
        let client = self.handle.take_client();
        let Some(client) = client else {
            return;
        };
        let deadline = after(self.handle.session_timeout.saturating_add(ABANDON_GRACE));
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
                tracing::debug!(session = %self.handle.id, ?state, "abandoned zk session already over");
            }
            Ok(_) => {
                let confirmed = tokio::time::timeout(
                    self.handle.session_timeout,
                    state_until(&mut watcher, zk::SessionState::is_terminated),
                )
                .await;
                match confirmed {
                    Ok(state) => tracing::debug!(
                        session = %self.handle.id,
                        ?state,
                        "abandoned zk session closed on the server"
                    ),
                    Err(_) => tracing::debug!(
                        session = %self.handle.id,
                        "no confirmation of the abandoned zk session's close; \
                         the server ends it by its timeout"
                    ),
                }
            }
            Err(_) => tracing::debug!(
                session = %self.handle.id,
                timeout = ?self.handle.session_timeout,
                "the server stayed out of reach; the abandoned zk session ends by its timeout there"
            ),
        }
    }
}

/// How a takeover by [`end_over_new_connection`] went.
pub(crate) enum Ended {
    /// The server refused it: the session was over already.
    Expired,
    /// Taken over and closed (the server confirmed, or the wait for it ran
    /// out).
    Closed,
}

/// End the session `credentials` name over a connection of its own: a
/// second client, with `options` (credentials, TLS), takes the session
/// over (the server drops the first one's connection) and closes it. The
/// takeover's handshake must finish within `connect_within`. With
/// `one_try`, each host is tried once (see below); without, the client
/// retries until 7/5 of the session timeout.
///
/// # Errors
/// The takeover's failure, as text.
pub(crate) async fn end_over_new_connection(
    options: &crate::ZkOptions,
    credentials: &zk::SessionInfo,
    connect_within: Duration,
    one_try: bool,
) -> std::result::Result<Ended, String> {
    let tls = options.load_tls().map_err(|e| e.to_string())?;
    let mut connector = options
        .connector()
        .with_connection_timeout(connect_within)
        .with_session(credentials.clone());
    if one_try {
        // One try per host, then back to the caller: kicked out mid-way by
        // the first client taking the session back, the caller waits a
        // moment (letting that client settle) before the next try. Retried
        // inside the client instead, the takeover raced the first client's
        // own instant reconnects for seconds (up to 31 s measured).
        connector = connector.with_fail_eagerly();
    }
    let client = match crate::tls::dial(connector, options.hosts(), tls.as_ref()).await {
        Err(zk::Error::SessionExpired) => return Ok(Ended::Expired),
        Err(e) => return Err(e.to_string()),
        Ok(client) => client,
    };
    let mut watcher = client.state_watcher();
    // Dropping the only handle sends CloseSession.
    drop(client);
    let _ = tokio::time::timeout(
        Duration::from_secs(5),
        state_until(&mut watcher, zk::SessionState::is_terminated),
    )
    .await;
    Ok(Ended::Closed)
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

#[async_trait]
impl PrimitiveSession for ZkSession {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    fn id(&self) -> SessionId {
        self.handle.id.clone()
    }

    fn state(&self) -> watch::Receiver<SessionState> {
        self.handle.shared.subscribe()
    }

    /// Missing parents are made as CONTAINER nodes. A sequential create
    /// whose name starts `_c_<uuid>-` is, after a lost answer, found again
    /// by that prefix before any retry. The request is sent when the future
    /// is first polled.
    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<Created> {
        self.handle.create(path, data, mode).await
    }

    async fn get(&self, path: &str) -> Result<Option<Node>> {
        match self
            .handle
            .read(|c| async move { c.get_data(path).await })
            .await
        {
            Ok((data, stat)) => Ok(Some(Node::new(data, stat_of(&stat)))),
            Err(zk::Error::NoNode) => Ok(None),
            Err(e) => Err(self.handle.map(e, Target::path(path))),
        }
    }

    async fn set(&self, path: &str, data: &[u8], version: Option<u64>) -> Result<Stat> {
        let expected = zk_version(path, version)?;
        let target = Target::versioned(path, version);
        let client = self.handle.writer(target)?;
        match client.set_data(path, data, expected).await {
            Ok(stat) => Ok(stat_of(&stat)),
            Err(e) => Err(self.handle.map(e, target)),
        }
    }

    async fn delete(&self, path: &str, version: Option<u64>) -> Result<()> {
        let expected = zk_version(path, version)?;
        let target = Target::versioned(path, version);
        let client = self.handle.writer(target)?;
        client
            .delete(path, expected)
            .await
            .map_err(|e| self.handle.map(e, target))
    }

    /// One getChildren. Sent when first polled: polled right after a
    /// `create` (before awaiting it), it sees that create.
    async fn children(&self, dir: &str) -> Result<Vec<Child>> {
        self.handle
            .read(|c| async move { c.list_children(dir).await })
            .await
            .map(names::into_children)
            .map_err(|e| self.handle.map(e, Target::path(dir)))
    }

    /// getChildren with a watch: the server sets the watch with the read, so
    /// no change between them is missed.
    async fn children_watch(&self, dir: &str) -> Result<(Vec<Child>, Watch)> {
        self.handle.children_watch(dir).await
    }

    /// getData with a watch, as Curator does: on a missing node getData
    /// fails with NoNode and leaves no watch (exists would leave one). The
    /// watch re-arms itself on a data change; a node found with another
    /// czxid means ours was deleted.
    async fn watch_gone(&self, path: &str) -> Result<Option<Watch>> {
        self.handle.watch_gone(path).await
    }

    /// getData with a watch: the server sets the watch with the read, so
    /// no change after the read is missed. A data watch fires at the node's
    /// next set (`NodeDataChanged`, whatever the data) or its deletion
    /// (`NodeDeleted`, also at its session's end); a change to a child or
    /// a sibling does not reach it.
    ///
    /// Where this session's tree watch covers exactly `path`, no watch is
    /// set on the server: the tree watch's signal fires it (see
    /// `paths.rs`).
    async fn get_watch(&self, path: &str) -> Result<Option<(Node, Watch)>> {
        self.handle.get_watch(path).await
    }

    /// ZooKeeper 3.6's persistent recursive watch (`addWatch`), which
    /// fires for every create, set and delete at or under `path`. While the
    /// connection is down the server keeps nothing for it (ZOOKEEPER-4698:
    /// events of that time are never sent), and zookeeper-client 0.11 does
    /// not set persistent watches again on the new connection (its
    /// SetWatches request leaves them out). So after every reconnection the
    /// watch is added again, then [`coord_core::TreeChange::Resync`] is sent. A server
    /// before 3.6 answers `Unimplemented`: `NotSupported`.
    async fn watch_tree(&self, path: &str) -> Result<TreeWatch> {
        self.handle.watch_tree(path).await
    }

    /// ZooKeeper's multi can check a node's data version, not its czxid. So
    /// the fence is read first (`exists`): missing, or a czxid other than
    /// the fence's stamp, is `LockLost`. Then `multi(check(fence, version
    /// read), op)`: the check fails if the fence node was deleted or its
    /// data changed meanwhile (a changed version is read again).
    ///
    /// The one gap: a fence node deleted and re-made at the same path with
    /// the same data version between the read and the multi passes the
    /// check. Lock nodes are sequential, their paths never repeat, so a lock
    /// holder's fence has no such gap.
    async fn guarded(&self, fence: &Fence, op: Op) -> Result<OpResult> {
        self.handle.guarded(fence, op).await
    }

    async fn transaction(&self, txn: &Transaction) -> Result<Vec<TxnResult>> {
        self.handle.transaction(txn).await
    }

    async fn close(&self) -> Result<()> {
        self.close_session().await
    }

    /// Renewed by the session's lease pings (an `exists` on its root every
    /// third of the session timeout), with their send times.
    fn requests_sent(&self) -> Option<u64> {
        Some(self.handle.requests_sent())
    }

    fn lease(&self) -> &LeaseClock {
        &self.lease
    }

    /// The state becomes `Expired` (and stays so); once the client is
    /// connected again the session is closed, so the server deletes its
    /// ephemerals at once. Waits at most about the session timeout: by then
    /// the server has ended the session by itself.
    async fn abandon(&self) {
        self.abandon_session().await;
    }

    /// A second client takes the session over with its id and password,
    /// and closes it (as `coord_zk::testing::expire` does, once).
    fn ender(&self) -> Option<coord_core::backend::SessionEnder> {
        let options = self.options.clone();
        let credentials = self.credentials.clone();
        let id = self.handle.id.clone();
        Some(Box::pin(async move {
            let within = Duration::from_millis(500);
            // The first client is gone here: nothing races the takeover.
            match end_over_new_connection(&options, &credentials, within, false).await {
                Ok(_) => {
                    tracing::debug!(session = %id, "zk session ended over a connection of its own");
                    Ok(())
                }
                Err(e) => Err(Error::ConnectionLost(format!(
                    "could not end session {id} over a connection of its own: {e}"
                ))),
            }
        }))
    }
}

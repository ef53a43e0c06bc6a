//! [`Handle`]: a session's way to the zookeeper client for one request,
//! and what every operation shares: counting requests, retrying reads
//! through connection losses, mapping errors, making parents, finding a
//! create whose answer was lost.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use coord_core::backend::Backoff;
use coord_core::{Created, Error, Result, SessionId};
use tokio::time::Instant;
use zookeeper_client as zk;

use crate::error::{is_connection_error, map_error, Target};
use crate::names;
use crate::shared::Shared;
use crate::stat::created;

/// The pauses before retries after a connection loss: 20 ms, doubling up to
/// 1 s, with jitter.
const BACKOFF: Backoff = Backoff::new(Duration::from_millis(20), Duration::from_secs(1));

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

/// What every operation of a session works through: the client's slot and
/// the session's shared state, identity and limits.
pub(crate) struct Handle {
    /// `None` once closed: dropping the last `Client` clone is how the
    /// client library closes a session.
    client: ClientSlot,
    pub(crate) shared: Arc<Shared>,
    pub(crate) id: SessionId,
    /// The session id as the server stores it in `ephemeralOwner`.
    raw_id: i64,
    /// The session timeout the server granted.
    pub(crate) session_timeout: Duration,
    /// How long reads keep retrying through a connection loss.
    retry_budget: Duration,
    requests: AtomicU64,
    /// The ACL of every node the session creates ([`crate::ZkOptions::with_acl`]).
    pub(crate) acls: zk::Acls<'static>,
}

impl Handle {
    /// The handle of the session `client` opened, whose state `shared` follows.
    pub(crate) fn new(client: zk::Client, shared: Arc<Shared>, acls: zk::Acls<'static>) -> Self {
        // The negotiated timeout (the client reports the larger of it and
        // its connection timeout, which it keeps below the negotiated one).
        let session_timeout = client.session_timeout();
        Handle {
            id: SessionId(client.session_id().to_string()),
            raw_id: client.session().id().0,
            client: Arc::new(RwLock::new(Some(client))),
            shared,
            session_timeout,
            retry_budget: session_timeout.saturating_mul(2),
            requests: AtomicU64::new(0),
            acls,
        }
    }

    /// A handle on the client's slot that does not keep the session open,
    /// for the lease pings.
    pub(crate) fn weak_slot(&self) -> std::sync::Weak<RwLock<Option<zk::Client>>> {
        Arc::downgrade(&self.client)
    }

    /// How many requests were sent through [`Handle::client`] so far.
    pub(crate) fn requests_sent(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// The session id as the server stores it in `ephemeralOwner`.
    pub(crate) fn raw_session_id(&self) -> i64 {
        self.raw_id
    }

    /// Take the client out of its slot: every later request fails as on
    /// an ended session, and dropping what is returned (the last handle)
    /// closes the session.
    pub(crate) fn take_client(&self) -> Option<zk::Client> {
        self.client
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .take()
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

/// A running retry budget: a deadline and the attempts so far (of
/// [`BACKOFF`]).
#[derive(Debug)]
pub(crate) struct Retry {
    deadline: Instant,
    attempt: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_never_overflow() {
        let now = Instant::now();
        assert!(after(Duration::MAX) > now);
        assert!(after(Duration::from_millis(5)) >= now + Duration::from_millis(5));
    }
}

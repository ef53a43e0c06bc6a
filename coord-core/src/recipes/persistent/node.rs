//! [`PersistentNode`]: a node that exists whenever its client has a live
//! session (Curator's `PersistentNode`); the handle over the task in
//! `keep.rs`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use super::keep::{Command, Keeper};
use super::mode::PersistentMode;
use super::presence::{again, Presence, PresenceWatcher, Shown};
use crate::client::Client;
use crate::error::{Error, Result};
use crate::path;

/// A node that exists whenever its [`Client`] has a live session, with
/// the data given (Curator's `PersistentNode`), made by
/// [`PersistentNode::start`]. A service registers itself with one and
/// stays registered across the ends of its sessions.
///
/// # What is re-established
/// A background task keeps the node. On each new session of the client
/// (each [`Generation`](crate::client::Generation)) it makes the node
/// again, with the data as it is then (the last
/// [`set_data`](PersistentNode::set_data)'s): at the same path
/// ([`PersistentMode::Ephemeral`], [`PersistentMode::PersistentWithTtl`])
/// or under a new unique name ([`PersistentMode::EphemeralSequential`]).
/// While the session lives it keeps it there:
/// - deleted by someone else, it is made again (at once, on the same
///   session);
/// - an ephemeral node of the last session that the server has not yet
///   ended (the client gave the session up at its lease deadline, before
///   the server's timeout) is waited for to go before the new one is
///   made: never two of this node's at once;
/// - [`set_data`](PersistentNode::set_data) writes the node now if it is
///   there, and the data is kept for every later make;
/// - a TTL node is written again every third of its TTL.
///
/// Lost connections and server errors are retried (with
/// [`Backoff::RECIPES`](crate::backend::backoff::Backoff::RECIPES) on the
/// session, and the client's own backoff between sessions); only an error
/// no retry mends ends the task (a TTL node on a server without them, an
/// ACL that refuses it), reported as [`Presence::Failed`].
///
/// # What is reported
/// [`Presence`], through [`PersistentNode::watch`], [`presence`](PersistentNode::presence),
/// [`path`](PersistentNode::path) and [`wait_present`](PersistentNode::wait_present):
/// `Present { path, generation }` once the node is made on a session,
/// `Absent` as soon as it is lost (its session ended here, at the latest
/// at the session's lease deadline; or it was deleted), and always before
/// the next `Present`. `Absent` means "not kept": an ephemeral node of a
/// session the client gave up may still be on the server until the server
/// ends that session, and a TTL node stays until its TTL runs out.
///
/// # Ending
/// [`PersistentNode::close`] deletes the node (retrying through lost
/// connections until it is gone or the session is over) and stops the
/// task. Dropping the handle stops the task too; the node is deleted in
/// the background (as a dropped guard's), or goes with its session.
/// Closing the client ends the task: an ephemeral node goes with the
/// closed session, a TTL node after its TTL.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> coord_core::Result<()> {
/// use std::time::Duration;
/// use coord_core::client::{Client, ClientOptions};
/// use coord_core::recipes::{PersistentMode, PersistentNode, Presence};
/// let store = coord_mem::MemStore::new();
/// let client = store.client(Duration::from_secs(10), ClientOptions::default());
/// let node = PersistentNode::start(&client, "/services/web/host-1", "10.0.0.1:80", PersistentMode::Ephemeral)?;
/// let path = node.wait_present(Duration::from_secs(5)).await?;
/// let mut presence = node.watch();
/// assert!(matches!(presence.next().await, Some(Presence::Present { generation: 1, .. })));
/// // The session ends on the server; the node comes back on the next.
/// store.expire(&client.session().await?.id());
/// assert!(matches!(presence.next().await, Some(Presence::Absent)));
/// assert!(matches!(presence.next().await, Some(Presence::Present { generation: 2, .. })));
/// assert_eq!(node.path(), Some(path));
/// node.close().await?;
/// client.close().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping a persistent node stops keeping it, and deletes it"]
#[derive(Debug)]
pub struct PersistentNode {
    shown: watch::Receiver<Shown>,
    data: Arc<Mutex<Vec<u8>>>,
    cmds: mpsc::UnboundedSender<Command>,
    task: Option<JoinHandle<Result<()>>>,
    mode: PersistentMode,
}

impl PersistentNode {
    /// Start keeping a node at `path` (for
    /// [`PersistentMode::EphemeralSequential`], under its parent, named
    /// after its last segment) with `data` (any bytes, as every recipe's
    /// data) on every session of `client`. It returns at once; the node is
    /// made in the background ([`PersistentNode::wait_present`] waits for
    /// it).
    ///
    /// # Errors
    /// Before any I/O: [`Error::InvalidPath`] for a bad path (also `/`, and
    /// a sequential node's name made too long by its protected prefix),
    /// [`Error::InvalidArgument`] for data over the limit or a TTL out of
    /// range (at least 150 ms, at most [`MAX_NODE_TTL`](crate::MAX_NODE_TTL));
    /// [`Error::SessionClosed`] if the client is closed.
    ///
    /// # Panics
    /// Outside a tokio runtime: the keeper is a task on it.
    pub fn start(
        client: &Client,
        path: &str,
        data: impl AsRef<[u8]>,
        mode: PersistentMode,
    ) -> Result<PersistentNode> {
        let data = data.as_ref();
        mode.validate(path)?;
        path::validate_data(data)?;
        if client.is_closed() {
            return Err(Error::SessionClosed);
        }
        let data = Arc::new(Mutex::new(data.to_vec()));
        let (shown_tx, shown) = watch::channel(Shown::new());
        let (cmds, rx) = mpsc::unbounded_channel();
        let keeper = Keeper::new(
            client.clone(),
            path.to_owned(),
            mode,
            Arc::clone(&data),
            shown_tx,
            rx,
        );
        let task = tokio::spawn(keeper.run());
        Ok(PersistentNode {
            shown,
            data,
            cmds,
            task: Some(task),
            mode,
        })
    }

    /// The node's path while it is there ([`Presence::Present`]).
    pub fn path(&self) -> Option<String> {
        self.shown.borrow().presence.path().map(str::to_owned)
    }

    /// Whether the node is there now.
    pub fn is_present(&self) -> bool {
        matches!(self.shown.borrow().presence, Presence::Present { .. })
    }

    /// The presence now (what [`PersistentNode::watch`] would report).
    pub fn presence(&self) -> Presence {
        self.shown.borrow().presence.clone()
    }

    /// The data the node is kept with: the last
    /// [`set_data`](PersistentNode::set_data)'s, or the data it was
    /// started with.
    pub fn data(&self) -> Vec<u8> {
        self.data.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Its mode.
    pub fn mode(&self) -> PersistentMode {
        self.mode
    }

    /// Change the node's data (any bytes): kept for every later make of
    /// the node, and written into the node now if it is there. Returns
    /// once written, or at once when the node is not there (it is made
    /// with this data).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for data over the limit, before
    /// anything changes; the failure that ended the node
    /// ([`Presence::Failed`]); [`Error::SessionClosed`] once the node's
    /// task is over (closed, or its client closed); a backend error of the
    /// write (the data is kept all the same).
    ///
    /// # Cancel safety
    /// Cancel safe in effect: once polled, the data is kept and the write
    /// goes on in the node's task.
    pub async fn set_data(&self, data: impl AsRef<[u8]>) -> Result<()> {
        let data = data.as_ref();
        path::validate_data(data)?;
        *self.data.lock().unwrap_or_else(|e| e.into_inner()) = data.to_vec();
        let (tx, rx) = oneshot::channel();
        self.cmds
            .send(Command::SetData(tx))
            .map_err(|_| Error::SessionClosed)?;
        rx.await.unwrap_or(Err(Error::SessionClosed))
    }

    /// Follow the node's presence; see [`PresenceWatcher`].
    pub fn watch(&self) -> PresenceWatcher {
        PresenceWatcher::new(self.shown.clone())
    }

    /// Wait until the node is there, at most `timeout`; its path.
    ///
    /// # Errors
    /// [`Error::Timeout`] when it is not there in time (the task goes on
    /// trying); [`Error::InvalidArgument`] for a timeout over
    /// [`MAX_TIMEOUT`](crate::limits::MAX_TIMEOUT); the failure that ended
    /// the node ([`Presence::Failed`]); [`Error::SessionClosed`] once the
    /// task is over.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn wait_present(&self, timeout: Duration) -> Result<String> {
        let (deadline, timeout) = crate::limits::deadline(timeout)?;
        let mut rx = self.shown.clone();
        let seen = tokio::time::timeout_at(
            deadline,
            rx.wait_for(|s| !matches!(s.presence, Presence::Absent)),
        )
        .await
        .map_err(|_| Error::Timeout(timeout))?;
        match seen.as_deref().map(|s| &s.presence) {
            Ok(Presence::Present { path, .. }) => Ok(path.clone()),
            Ok(Presence::Failed(e)) => Err(again(e)),
            Ok(Presence::Absent) | Err(_) => Err(Error::SessionClosed),
        }
    }

    /// Delete the node and stop keeping it. Through lost connections the
    /// delete is retried until the node is gone or the session is over
    /// (then an ephemeral node went with it; a TTL node goes after its
    /// TTL). Not there now (between sessions), nothing is deleted.
    ///
    /// # Errors
    /// The failure that ended the node ([`Presence::Failed`]); a backend
    /// error of the delete that retrying cannot mend.
    ///
    /// # Cancel safety
    /// Cancel safe in effect: once called, the close goes on in the task.
    pub async fn close(mut self) -> Result<()> {
        let _ = self.cmds.send(Command::Close);
        match self.task.take() {
            Some(task) => task
                .await
                .unwrap_or_else(|e| Err(Error::backend("coord", e))),
            None => Ok(()),
        }
    }
}

//! [`SharedValue`]: bytes with a version that many sessions read, set and
//! compare-and-set; and [`Versioned`], a value with the version it was read
//! or written at.

use std::fmt;
use std::sync::Arc;

use tokio::sync::watch;

use crate::backend::backoff::Backoff;
use crate::backend::node::{CreateMode, Node};
use crate::error::{Error, Result};
use crate::machinery::retry::{backoff, pause};
use crate::path;
use crate::session::Session;

/// A value and the version of its node when it was read or written
/// (Curator `VersionedValue`): give the version back to `try_set` to write
/// only if nobody wrote since. Versions are opaque: compare them for
/// equality only.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Versioned<T> {
    /// The value.
    pub value: T,
    /// The node's data version ([`Stat::version`](crate::Stat::version)).
    pub version: u64,
}

/// A value many sessions share: the bytes of one persistent node, with its
/// version (Curator `SharedValue`; an etcd STM key). Made by
/// [`SharedValue::new`]`(session, path)`; read it with
/// [`SharedValue::get`], write it with [`SharedValue::set`] or, only if
/// nobody wrote since a read, [`SharedValue::try_set`]; follow it with
/// [`SharedValue::watch`], which never misses the latest value.
///
/// The node holds the bytes as given, nothing added, so any client of the
/// server reads and writes the same value: on ZooKeeper it is the node a
/// Curator `SharedValue` on that path uses. As in Curator, the first read
/// makes a missing node with the initial value ([`SharedValue::with_initial`],
/// Curator's `seedValue`; empty by default), so there is always a version
/// to compare with; a `set` makes a missing node too (Curator's `setValue`
/// fails there). A deleted node is made again by the next `get` or `set`;
/// a watcher reports it missing, then its return.
///
/// Typed values: [`TypedSharedValue`](super::TypedSharedValue) (JSON with
/// the `serde` feature, or any [`Codec`](super::Codec));
/// [`SharedCount`](super::SharedCount) for Curator's `SharedCount`.
///
/// A write whose answer is lost to a dropped connection is never repeated
/// over someone else's later write: the recipe reads the node again, writes
/// again only if it is still at the version the write expected, and
/// otherwise fails with [`Error::OutcomeUnknown`] (the write may or may not
/// have landed).
///
/// ```
/// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
/// use coord_core::recipes::SharedValue;
/// let flags = SharedValue::new(&session, "/config/flags")?.with_initial("off");
/// let now = flags.get().await?; // made with the initial value if missing
/// assert_eq!(now.value, b"off");
/// // Written only if nobody wrote since that read.
/// if flags.try_set(now.version, "on").await? {
///     println!("switched on");
/// }
/// let mut changes = flags.watch();
/// // The value now; each later `next` waits for a change.
/// let latest = changes.next().await.transpose()?;
/// # let _ = latest;
/// flags.close(); // ends every watcher of this value
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SharedValue {
    session: Session,
    node: String,
    initial: Arc<[u8]>,
    /// `true` once [`SharedValue::close`] was called, on any clone.
    closed: Arc<watch::Sender<bool>>,
}

impl fmt::Debug for SharedValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The data is the user's and may be a secret: its length only.
        f.debug_struct("SharedValue")
            .field("session", &self.session)
            .field("node", &self.node)
            .field("initial_len", &self.initial.len())
            .field("closed", &*self.closed.borrow())
            .finish()
    }
}

impl SharedValue {
    /// The shared value at `path`, initially empty (see
    /// [`SharedValue::with_initial`]). Nothing is read or written yet.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or `/`.
    pub fn new(session: &Session, path: &str) -> Result<Self> {
        path::validate_non_root(path)?;
        Ok(SharedValue {
            session: session.clone(),
            node: path.to_owned(),
            initial: Arc::from(&b""[..]),
            closed: Arc::new(watch::channel(false).0),
        })
    }

    /// Make `data` the initial value: what a read writes into a missing
    /// node (Curator's `seedValue`). Every session should agree on it.
    pub fn with_initial(mut self, data: impl AsRef<[u8]>) -> Self {
        self.initial = Arc::from(data.as_ref());
        self
    }

    /// The value's node.
    pub fn path(&self) -> &str {
        &self.node
    }

    /// The session this value reads and writes through.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// End this value's use: every watcher made from it or a clone ends
    /// (its pending or next `next` returns [`Error::SessionClosed`], then
    /// `None`), and every later call of it or a clone fails with
    /// [`Error::InvalidArgument`]. The node stays; nothing is written
    /// (Curator's `close`).
    pub fn close(&self) {
        self.closed.send_replace(true);
    }

    /// Whether [`SharedValue::close`] was called on this value or a clone.
    pub fn is_closed(&self) -> bool {
        *self.closed.borrow()
    }

    /// What a watcher waits on to end.
    pub(super) fn closed_watch(&self) -> watch::Receiver<bool> {
        self.closed.subscribe()
    }

    fn check_open(&self) -> Result<()> {
        if self.is_closed() {
            return Err(Error::InvalidArgument(format!(
                "the shared value {} was closed",
                self.node
            )));
        }
        Ok(())
    }

    /// The value and its version. A missing node is made, holding the
    /// initial value, so there is always a version to compare with.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] after [`SharedValue::close`]; the
    /// session's end; backend errors. A lost connection is retried until
    /// the session ends.
    ///
    /// # Cancel safety
    /// Cancel safe: at most it made the node with the initial value.
    pub async fn get(&self) -> Result<Versioned<Vec<u8>>> {
        self.check_open()?;
        self.read().await
    }

    /// Read the node, creating it with the initial value when missing;
    /// retryable errors are retried.
    pub(crate) async fn read(&self) -> Result<Versioned<Vec<u8>>> {
        let mut attempt = 0;
        loop {
            match self.session.get(&self.node).await {
                Ok(Some(node)) => {
                    return Ok(Versioned {
                        value: node.data,
                        version: node.stat.version,
                    })
                }
                Ok(None) => match self
                    .session
                    .create(&self.node, &self.initial, CreateMode::Persistent)
                    .await
                {
                    Ok(c) => {
                        return Ok(Versioned {
                            value: self.initial.to_vec(),
                            version: c.version,
                        })
                    }
                    // Someone else made it, or our lost create did: read it.
                    Err(Error::AlreadyExists { .. }) => {}
                    Err(e) if e.is_retryable() => pause(&self.session, &mut attempt).await,
                    Err(e) => return Err(e),
                },
                Err(e) if e.is_retryable() => backoff(&mut attempt).await,
                Err(e) => return Err(e),
            }
        }
    }

    /// Set the value, whatever it was (Curator's `setValue`); a missing
    /// node is made. Returns the new version.
    ///
    /// It is a compare-and-set against the version just read, retried on
    /// conflicts, so a write whose answer was lost is never repeated over
    /// someone else's later write (which would undo it).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] after [`SharedValue::close`] or for data
    /// over the node size limit; the session's end; backend errors. A lost
    /// connection is retried while a read shows the write did not land;
    /// when the node moved meanwhile, [`Error::OutcomeUnknown`].
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the value may or may not have been set.
    pub async fn set(&self, data: impl AsRef<[u8]>) -> Result<u64> {
        self.check_open()?;
        let data = data.as_ref();
        let mut attempt = 0;
        loop {
            match self.read_node().await? {
                Some(node) => {
                    if let Some(version) = self.try_write(node.stat.version, data).await? {
                        return Ok(version);
                    }
                }
                None => match self
                    .session
                    .create(&self.node, data, CreateMode::Persistent)
                    .await
                {
                    Ok(c) => return Ok(c.version),
                    // Made meanwhile (by someone, or by our create whose
                    // answer was lost): set it over.
                    Err(Error::AlreadyExists { .. }) => continue,
                    Err(e) if e.is_retryable() => {
                        // Did the create land? Made with our data: yes
                        // (or someone set the same, which is as good).
                        // Missing: no, try again. Anything else: unknown.
                        pause(&self.session, &mut attempt).await;
                        match self.read_node().await? {
                            None => continue,
                            Some(node) if node.data == data => return Ok(node.stat.version),
                            other => return Err(self.unknown(other.as_ref())),
                        }
                    }
                    Err(e) => return Err(e),
                },
            }
            Backoff::RECIPES.sleep(&mut attempt).await;
        }
    }

    /// Set the value to `data` only if the node is still at `version` (as
    /// read by [`SharedValue::get`], seen by a watcher or returned by a
    /// write): Curator's `trySetValue`, etcd's compare on the mod revision.
    /// `Ok(true)` when it was set; `Ok(false)` when someone wrote since (or
    /// the node was deleted): read again and decide again.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] after [`SharedValue::close`] or for data
    /// over the node size limit; the session's end; backend errors. A lost
    /// connection whose write may have landed is
    /// [`Error::OutcomeUnknown`], as for [`SharedValue::set`].
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the value may or may not have been set.
    pub async fn try_set(&self, version: u64, data: impl AsRef<[u8]>) -> Result<bool> {
        self.check_open()?;
        Ok(self.try_write(version, data.as_ref()).await?.is_some())
    }

    /// Write `data` if the node is at `version`: `Some(new version)`, or
    /// `None` when it is not (a conflict). Retries a lost connection when
    /// a read shows the write did not land.
    pub(crate) async fn try_write(&self, version: u64, data: &[u8]) -> Result<Option<u64>> {
        let mut attempt = 0;
        loop {
            match self.session.set(&self.node, data, Some(version)).await {
                Ok(stat) => return Ok(Some(stat.version)),
                Err(Error::VersionMismatch { .. }) | Err(Error::NotFound { .. }) => {
                    return Ok(None)
                }
                Err(e) if e.is_retryable() => {
                    pause(&self.session, &mut attempt).await;
                    // Did it land? Unchanged version: no, write again.
                    match self.read_node().await? {
                        Some(node) if node.stat.version == version => {}
                        other => return Err(self.unknown(other.as_ref())),
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The error of a write whose answer was lost while the node (now
    /// `node`, or gone) moved: whether it landed cannot be known. The data
    /// is not shown (it may be a secret).
    fn unknown(&self, node: Option<&Node>) -> Error {
        let now = match node {
            Some(n) => format!("it now holds {} bytes", n.data.len()),
            None => "it is now gone".to_owned(),
        };
        Error::OutcomeUnknown {
            path: self.node.clone(),
            detail: format!(
                "the answer to our write of the shared value was lost, and the node has \
                 changed since ({now}); the write was not repeated"
            ),
        }
    }

    /// Read the raw node, retrying retryable errors.
    async fn read_node(&self) -> Result<Option<Node>> {
        let mut attempt = 0;
        loop {
            match self.session.get(&self.node).await {
                Ok(n) => return Ok(n),
                Err(e) if e.is_retryable() => backoff(&mut attempt).await,
                Err(e) => return Err(e),
            }
        }
    }
}

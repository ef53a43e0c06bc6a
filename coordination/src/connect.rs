//! [`connect`] and [`Connector`]: open a session from a URL.

use std::sync::OnceLock;
use std::time::Duration;

use coord_core::{Client, ClientOptions, Session};
use coord_mem::MemStore;

use crate::backend::Backend;
use crate::error::ConnectError;
use crate::url::{self, Target};

static DEFAULT_STORE: OnceLock<MemStore> = OnceLock::new();

/// The process-wide in-memory store that `mem://` connects to.
///
/// Every `mem://` session of the process lives in this one store, so
/// recipes on sessions opened by different parts of a program see each
/// other, exactly as processes sharing a ZooKeeper would. Nothing outside
/// the process can see it. Use it for its fault hooks (expire or suspend a
/// session: see [`MemStore`]); for an isolated store, make your own
/// [`MemStore::new`] and call [`MemStore::open`].
pub fn default_mem_store() -> &'static MemStore {
    DEFAULT_STORE.get_or_init(MemStore::new)
}

/// A parsed coord URL plus options: opens as many sessions as asked.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), coordination::ConnectError> {
/// use std::time::Duration;
/// let connector = coordination::Connector::new("mem://")?.with_session_timeout(Duration::from_secs(5));
/// let a = connector.connect().await?;
/// let b = connector.connect().await?;
/// assert_ne!(a.id(), b.id());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Connector {
    backend: Backend,
    target: Target,
    session_timeout: Option<Duration>,
    shown: String,
}

impl Connector {
    /// Parse and check `url` (see the [crate docs](crate#urls)), without
    /// any I/O.
    ///
    /// # Errors
    /// [`ConnectError::InvalidUrl`], [`ConnectError::UnsupportedScheme`],
    /// [`ConnectError::BackendNotCompiled`].
    pub fn new(url: &str) -> Result<Self, ConnectError> {
        let p = url::parse(url)?;
        Ok(Connector {
            backend: p.backend,
            target: p.target,
            session_timeout: p.session_timeout,
            shown: p.shown,
        })
    }

    /// How long the server keeps a session (and its ephemeral nodes: lock
    /// holds, leadership, membership) after its client stops answering.
    /// Overrides the URL's `session_timeout`. Each backend has its default
    /// (10 s on all five) and its bounds: ZooKeeper clamps it to the
    /// server's `minSessionTimeout..=maxSessionTimeout`, etcd rounds it up
    /// to whole seconds, Redis and PostgreSQL need at least 300 ms. coord refuses zero
    /// and anything over [`coord_core::limits::MAX_SESSION_TIMEOUT`] (a
    /// day): [`Connector::connect`] then fails with
    /// [`ConnectError::InvalidOption`], before any I/O.
    pub fn with_session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = Some(timeout);
        self
    }

    /// The backend the URL names.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The URL, with any password replaced by `***`.
    pub fn url(&self) -> &str {
        &self.shown
    }

    /// Open a session.
    ///
    /// `mem://` sessions live in [`default_mem_store`]. Every session runs
    /// on the tokio runtime this is called on (its keep-alive is a task
    /// there): that runtime must outlive the session.
    ///
    /// # Errors
    /// [`ConnectError::InvalidOption`] for a session timeout the backend
    /// cannot use (before any I/O); [`ConnectError::Connect`] with the
    /// backend's error when it cannot open a session, within the session
    /// timeout: a connection not made is
    /// [`coord_core::Error::ConnectionLost`] naming the address and what
    /// listens there (nothing, TLS where none was asked or the reverse, a
    /// server of another kind) with the fix.
    ///
    /// # Cancel safety
    /// Cancel safe in effect: dropped before it returns, no session
    /// outlives its timeout (ZooKeeper's is closed; an etcd lease, a
    /// Redis session key or a PostgreSQL session row granted meanwhile is
    /// no longer kept alive and expires).
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub async fn connect(&self) -> Result<Session, ConnectError> {
        if let Some(t) = self.session_timeout {
            url::check_session_timeout(self.backend, t).map_err(|reason| {
                ConnectError::InvalidOption {
                    url: self.shown.clone(),
                    reason,
                }
            })?;
        }
        let timeout = self.session_timeout;
        let opened: coord_core::Result<Session> = match &self.target {
            Target::Mem => {
                let store = default_mem_store();
                Ok(match timeout {
                    Some(t) => store.open_with_session_timeout(t),
                    None => store.open(),
                })
            }
            #[cfg(feature = "zk")]
            Target::Zk(o) => {
                let o = match timeout {
                    Some(t) => o.clone().with_session_timeout(t),
                    None => o.clone(),
                };
                coord_zk::connect(o).await
            }
            #[cfg(feature = "etcd")]
            Target::Etcd(o) => {
                let o = match timeout {
                    Some(t) => o.clone().with_session_timeout(t),
                    None => o.clone(),
                };
                coord_etcd::connect(o).await
            }
            #[cfg(feature = "redis")]
            Target::Redis(o) => {
                let o = match timeout {
                    Some(t) => o.clone().with_session_timeout(t),
                    None => o.clone(),
                };
                coord_redis::connect(o).await
            }
            #[cfg(feature = "pg")]
            Target::Pg(o) => {
                let o = match timeout {
                    Some(t) => o.clone().with_session_timeout(t),
                    None => o.clone(),
                };
                coord_pg::connect(o).await
            }
        };
        opened.map_err(|source| ConnectError::Connect {
            url: self.shown.clone(),
            source,
        })
    }
}

impl Connector {
    /// A supervised [`Client`] on this URL: it opens a session now (so a
    /// wrong URL, credential or address fails here, as [`Connector::connect`]
    /// does), then keeps one live, opening the next after each one ends
    /// (see [`Client`]).
    ///
    /// # Errors
    /// As [`Connector::connect`], for the first session only; the client
    /// retries every later one itself.
    ///
    /// # Cancel safety
    /// Cancel safe in effect: dropped before it returns, the first
    /// session is closed.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub async fn client(&self, options: ClientOptions) -> Result<Client, ConnectError> {
        let first = self.connect().await?;
        let first = std::sync::Mutex::new(Some(first));
        let connector = self.clone();
        let client = Client::start(
            move || {
                let ready = first.lock().unwrap_or_else(|e| e.into_inner()).take();
                let connector = connector.clone();
                async move {
                    match ready {
                        Some(s) => Ok(s),
                        None => connector.connect().await.map_err(coord_core::Error::from),
                    }
                }
            },
            options,
        );
        Ok(client)
    }
}

impl std::fmt::Debug for Connector {
    /// Shows the URL with its password replaced by `***` (the backends'
    /// options would show it).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("backend", &self.backend)
            .field("url", &self.shown)
            .field("session_timeout", &self.session_timeout)
            .finish()
    }
}

impl std::str::FromStr for Connector {
    type Err = ConnectError;
    fn from_str(url: &str) -> Result<Self, ConnectError> {
        Connector::new(url)
    }
}

/// Open a session on the backend `url` names (see the
/// [crate docs](crate#urls) for the URL forms and their query parameters).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), coordination::ConnectError> {
/// let session = coordination::connect("mem://").await?;
/// assert_eq!(session.backend(), "mem");
/// # Ok(()) }
/// ```
///
/// # Errors
/// Before any I/O: [`ConnectError::InvalidUrl`] for a malformed URL,
/// [`ConnectError::UnsupportedScheme`], [`ConnectError::BackendNotCompiled`]
/// naming the cargo feature to enable. Then [`ConnectError::Connect`] when
/// the backend cannot open a session.
///
/// # Cancel safety
/// Cancel safe, as [`Connector::connect`].
///
/// # Panics
/// Outside a tokio runtime.
pub async fn connect(url: &str) -> Result<Session, ConnectError> {
    Connector::new(url)?.connect().await
}

/// A supervised [`Client`] on the backend `url` names, with the default
/// [`ClientOptions`]: see [`Connector::client`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = coordination::client("mem://").await?;
/// let session = client.session().await?;
/// assert_eq!(session.backend(), "mem");
/// client.close().await?;
/// # Ok(()) }
/// ```
///
/// # Errors
/// As [`connect`], for the first session.
///
/// # Cancel safety
/// Cancel safe, as [`Connector::client`].
///
/// # Panics
/// Outside a tokio runtime.
pub async fn client(url: &str) -> Result<Client, ConnectError> {
    Connector::new(url)?.client(ClientOptions::default()).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn mem_sessions_share_the_default_store() -> Result<(), Box<dyn std::error::Error>> {
        let a = connect("mem://").await?;
        let b = connect("mem://?session_timeout=2s").await?;
        a.create("/connect-test/x", b"1", coord_core::CreateMode::Ephemeral)
            .await?;
        assert!(b.exists("/connect-test/x").await?);
        assert!(default_mem_store().expire(&a.id()));
        assert!(!b.exists("/connect-test/x").await?);
        Ok(())
    }

    #[tokio::test]
    async fn bad_options_fail_before_io() -> Result<(), ConnectError> {
        let r = Connector::new("mem://")?
            .with_session_timeout(Duration::ZERO)
            .connect()
            .await;
        assert!(matches!(r, Err(ConnectError::InvalidOption { .. })));
        for too_long in [
            Duration::MAX,
            coord_core::limits::MAX_SESSION_TIMEOUT + Duration::from_nanos(1),
        ] {
            let r = Connector::new("mem://")?
                .with_session_timeout(too_long)
                .connect()
                .await;
            assert!(
                matches!(&r, Err(ConnectError::InvalidOption { reason, .. }) if reason.contains("maximum")),
                "{too_long:?}: {:?}",
                r.map(|s| s.id())
            );
        }
        Ok(())
    }

    #[test]
    fn debug_hides_passwords() -> Result<(), ConnectError> {
        let c = Connector::new("mem://?session_timeout=1s")?;
        assert!(format!("{c:?}").contains("mem://"));
        #[cfg(feature = "redis")]
        {
            let c = Connector::new("redis://app:s3cret@h:6379")?;
            assert!(!format!("{c:?}").contains("s3cret"), "{c:?}");
            // Reserved characters, raw: the user info still ends at the
            // last '@'.
            let c = Connector::new("redis://app:s3/cr#et?x@h:6379")?;
            for shown in [format!("{c:?}"), c.url().to_owned()] {
                assert!(!shown.contains("s3") && !shown.contains("et?x"), "{shown}");
            }
            assert_eq!(c.url(), "redis://app:***@h:6379");
        }
        #[cfg(feature = "pg")]
        for url in [
            "postgres://app:s3cret@h/db",
            "postgresql://app:s3/cr#et?x@h:5432/db?sslmode=disable",
        ] {
            let c = Connector::new(url)?;
            for shown in [format!("{c:?}"), c.url().to_owned()] {
                assert!(!shown.contains("s3") && !shown.contains("et?x"), "{shown}");
            }
        }
        Ok(())
    }

    #[test]
    fn errors_convert_to_core_errors() {
        let e = Connector::new("nope").err().map(coord_core::Error::from);
        assert!(matches!(e, Some(coord_core::Error::InvalidArgument(_))));
    }
}

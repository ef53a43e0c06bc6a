//! How to reach a ZooKeeper ensemble: [`ZkOptions`].

use std::time::Duration;

use coord_core::{limits, Error, Result};

/// Where and how to connect: the ensemble's hosts, an optional chroot, the
/// session timeout.
///
/// ```
/// # fn main() -> coord_core::Result<()> {
/// use std::time::Duration;
/// let options = coord_zk::ZkOptions::new("zk1:2181,zk2:2181,zk3:2181/myapp")?
///     .session_timeout(Duration::from_secs(10));
/// assert_eq!(options.hosts(), "zk1:2181,zk2:2181,zk3:2181");
/// assert_eq!(options.chroot(), Some("/myapp"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZkOptions {
    hosts: String,
    chroot: Option<String>,
    session_timeout: Duration,
    connection_timeout: Option<Duration>,
    create_chroot: bool,
}

/// The session timeout asked for unless set: the server clamps it to its
/// `minSessionTimeout..=maxSessionTimeout` (by default 2 to 20 ticks).
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

impl ZkOptions {
    /// Parse a ZooKeeper connect string: comma-separated `host:port` pairs,
    /// optionally followed by a chroot path that every path of the session
    /// is taken relative to (`h1:2181,h2:2181/app`), as the Java client
    /// takes it.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when there are no hosts or a host is
    /// empty; [`Error::InvalidPath`] for a chroot that breaks
    /// [`coord_core::path`]'s rules.
    pub fn new(connect: &str) -> Result<Self> {
        let (hosts, chroot) = match connect.find('/') {
            Some(i) => (&connect[..i], Some(&connect[i..])),
            None => (connect, None),
        };
        if hosts.is_empty() || hosts.split(',').any(|h| h.trim().is_empty()) {
            return Err(Error::InvalidArgument(format!(
                "zookeeper connect string {connect:?} needs host:port[,host:port…][/chroot]"
            )));
        }
        let options = ZkOptions {
            hosts: hosts.to_owned(),
            chroot: None,
            session_timeout: DEFAULT_SESSION_TIMEOUT,
            connection_timeout: None,
            create_chroot: true,
        };
        match chroot {
            Some(c) => options.with_chroot(c),
            None => Ok(options),
        }
    }

    /// Root every path of the session at `chroot` (`/` for none).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path that breaks [`coord_core::path`]'s
    /// rules.
    pub fn with_chroot(mut self, chroot: &str) -> Result<Self> {
        coord_core::path::validate(chroot)?;
        self.chroot = (chroot != "/").then(|| chroot.to_owned());
        Ok(self)
    }

    /// The session timeout to ask the server for. The server clamps it to
    /// its configured bounds; ephemeral nodes outlive a crashed client by
    /// about this long. Zero, or over
    /// [`coord_core::limits::MAX_SESSION_TIMEOUT`], is refused by
    /// [`crate::connect`] with [`Error::InvalidArgument`] before any I/O.
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// How long a silent connection is given before it is declared lost and
    /// another host tried (default: 2/5 of the session timeout); it also
    /// bounds each attempt to connect. ZooKeeper's own name, kept because
    /// it is not etcd's `connect_timeout` (which bounds connecting only).
    /// Zero, or over [`coord_core::limits::MAX_SESSION_TIMEOUT`], is refused
    /// by [`crate::connect`] with [`Error::InvalidArgument`] before any I/O.
    pub fn connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = Some(timeout);
        self
    }

    /// Whether [`crate::connect`] makes a missing chroot node (persistent)
    /// before rooting the session there. Default `true`; with `false`, a
    /// missing chroot makes every operation fail with `NotFound`.
    pub fn create_chroot(mut self, create: bool) -> Self {
        self.create_chroot = create;
        self
    }

    /// The hosts, as given (`h1:2181,h2:2181`).
    pub fn hosts(&self) -> &str {
        &self.hosts
    }

    /// The chroot, if any.
    pub fn chroot(&self) -> Option<&str> {
        self.chroot.as_deref()
    }

    /// The session timeout asked for (the server may clamp it: see
    /// [`ZkOptions::session_timeout`]).
    pub fn get_session_timeout(&self) -> Duration {
        self.session_timeout
    }

    /// The connection timeout, if one was set (see
    /// [`ZkOptions::connection_timeout`]).
    pub fn get_connection_timeout(&self) -> Option<Duration> {
        self.connection_timeout
    }

    /// Refuse durations the client cannot work with, before any I/O: a
    /// session timeout of zero or over
    /// [`coord_core::limits::MAX_SESSION_TIMEOUT`] (the ZooKeeper client
    /// sends it as an `i32` of milliseconds and multiplies it), and the
    /// same for a connection timeout.
    pub(crate) fn validate(&self) -> Result<()> {
        limits::check_session_timeout(self.session_timeout)?;
        if let Some(timeout) = self.connection_timeout {
            if timeout.is_zero() {
                return Err(Error::InvalidArgument(
                    "a connection timeout of zero cannot work".into(),
                ));
            }
            limits::check("a connection timeout", timeout, limits::MAX_SESSION_TIMEOUT)?;
        }
        Ok(())
    }

    /// The client's connector; call [`ZkOptions::validate`] first.
    pub(crate) fn connector(&self) -> zookeeper_client::Connector {
        let mut connector =
            zookeeper_client::Client::connector().with_session_timeout(self.session_timeout);
        if let Some(timeout) = self.connection_timeout {
            connector = connector.with_connection_timeout(timeout);
        }
        connector
    }

    pub(crate) fn creates_chroot(&self) -> bool {
        self.create_chroot
    }
}

impl std::str::FromStr for ZkOptions {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        ZkOptions::new(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hosts_and_chroot() {
        let o = ZkOptions::new("h1:2181,h2:2182/app/x").expect("valid");
        assert_eq!(o.hosts(), "h1:2181,h2:2182");
        assert_eq!(o.chroot(), Some("/app/x"));
        let o = ZkOptions::new("127.0.0.1:2181").expect("valid");
        assert_eq!(o.hosts(), "127.0.0.1:2181");
        assert_eq!(o.chroot(), None);
        let o = ZkOptions::new("h:1/").expect("valid");
        assert_eq!(o.chroot(), None);
    }

    #[test]
    fn refuses_durations_the_client_cannot_take() {
        let base = ZkOptions::new("127.0.0.1:2181").expect("valid");
        assert!(base.validate().is_ok());
        // `--session-timeout 106751991167301d` once overflowed in the client.
        let huge = Duration::from_secs(106_751_991_167_301 * 24 * 3600);
        for bad in [
            Duration::ZERO,
            huge,
            Duration::MAX,
            limits::MAX_SESSION_TIMEOUT + Duration::from_millis(1),
        ] {
            let o = base.clone().session_timeout(bad);
            assert!(
                matches!(o.validate(), Err(Error::InvalidArgument(_))),
                "session timeout {bad:?}"
            );
            let o = base.clone().connection_timeout(bad);
            assert!(
                matches!(o.validate(), Err(Error::InvalidArgument(_))),
                "connection timeout {bad:?}"
            );
        }
        let o = base
            .clone()
            .session_timeout(limits::MAX_SESSION_TIMEOUT)
            .connection_timeout(limits::MAX_SESSION_TIMEOUT);
        assert!(o.validate().is_ok());
        // The largest accepted timeout fits the client's i32 milliseconds.
        assert!(i32::try_from(limits::MAX_SESSION_TIMEOUT.as_millis()).is_ok());
    }

    #[test]
    fn rejects_bad_strings() {
        assert!(matches!(ZkOptions::new(""), Err(Error::InvalidArgument(_))));
        assert!(matches!(
            ZkOptions::new("/app"),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            ZkOptions::new("h1:1,,h2:2"),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            ZkOptions::new("h:1/app/"),
            Err(Error::InvalidPath { .. })
        ));
        assert!(matches!(
            ZkOptions::new("h:1/a//b"),
            Err(Error::InvalidPath { .. })
        ));
    }
}

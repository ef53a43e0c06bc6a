//! How to reach a ZooKeeper ensemble: [`ZkOptions`].

use std::time::Duration;

use coord_core::{limits, Error, Result, TlsOptions};

use crate::auth::{Credentials, ZkAcl};

/// Where and how to connect: the ensemble's hosts, an optional chroot, the
/// session timeout, credentials ([`ZkOptions::with_digest`],
/// [`ZkOptions::with_sasl_digest`]) and the ACL of the nodes coord creates
/// ([`ZkOptions::with_acl`]). `Debug` never shows a password.
///
/// ```
/// # fn main() -> coord_core::Result<()> {
/// use std::time::Duration;
/// let options = coord_zk::ZkOptions::new("zk1:2181,zk2:2181,zk3:2181/myapp")
///     .with_session_timeout(Duration::from_secs(10));
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
    digest: Option<Credentials>,
    sasl: Option<Credentials>,
    acl: Option<ZkAcl>,
    tls: Option<TlsOptions>,
}

/// The session timeout asked for unless set: the server clamps it to its
/// `minSessionTimeout..=maxSessionTimeout` (by default 2 to 20 ticks).
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

impl ZkOptions {
    /// Options for a ZooKeeper connect string: comma-separated `host:port`
    /// pairs, optionally followed by a chroot path that every path of the
    /// session is taken relative to (`h1:2181,h2:2181/app`), as the Java
    /// client takes it. Checked by [`ZkOptions::validate`] (which
    /// [`crate::connect`] runs before any I/O), not here.
    pub fn new(connect: &str) -> Self {
        let (hosts, chroot) = match connect.find('/') {
            Some(i) => (&connect[..i], Some(&connect[i..])),
            None => (connect, None),
        };
        let options = ZkOptions {
            hosts: hosts.to_owned(),
            chroot: None,
            session_timeout: DEFAULT_SESSION_TIMEOUT,
            connection_timeout: None,
            create_chroot: true,
            digest: None,
            sasl: None,
            acl: None,
            tls: None,
        };
        match chroot {
            Some(c) => options.with_chroot(c),
            None => options,
        }
    }

    /// Root every path of the session at `chroot` (`/` for none). A path
    /// that breaks [`coord_core::path`]'s rules is refused by
    /// [`ZkOptions::validate`] with [`Error::InvalidPath`].
    pub fn with_chroot(mut self, chroot: &str) -> Self {
        self.chroot = (chroot != "/").then(|| chroot.to_owned());
        self
    }

    /// The session timeout to ask the server for. The server clamps it to
    /// its configured bounds; ephemeral nodes outlive a crashed client by
    /// about this long. Zero, or over
    /// [`coord_core::limits::MAX_SESSION_TIMEOUT`], is refused by
    /// [`crate::connect`] with [`Error::InvalidArgument`] before any I/O.
    pub fn with_session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// How long a silent connection is given before it is declared lost and
    /// another host tried (default: 2/5 of the session timeout); it also
    /// bounds each attempt to connect. ZooKeeper's own name, kept because
    /// it is not etcd's `connect_timeout` (which bounds connecting only).
    /// Zero, or over [`coord_core::limits::MAX_SESSION_TIMEOUT`], is refused
    /// by [`crate::connect`] with [`Error::InvalidArgument`] before any I/O.
    pub fn with_connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = Some(timeout);
        self
    }

    /// Whether [`crate::connect`] makes a missing chroot node (persistent)
    /// before rooting the session there. Default `true`; with `false`, a
    /// missing chroot makes every operation fail with `NotFound`.
    pub fn with_create_chroot(mut self, create: bool) -> Self {
        self.create_chroot = create;
        self
    }

    /// Authenticate the session with ZooKeeper's `digest` scheme as
    /// `user` (an `addauth digest user:password` sent on every connection,
    /// reconnections included). The session's identity is then
    /// `digest:user:<hash of password>`, which the creator ACLs of
    /// [`ZkAcl`] name.
    ///
    /// ZooKeeper accepts any digest credentials: a wrong password is not
    /// refused at connect, it is another identity, refused
    /// ([`Error::PermissionDenied`]) by the nodes the right one created.
    /// An empty `user`, or one containing `:`, is refused by
    /// [`crate::connect`] with [`Error::InvalidArgument`] before any I/O.
    pub fn with_digest(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.digest = Some(Credentials::new(user.into(), password.into()));
        self
    }

    /// Authenticate the session with SASL DIGEST-MD5 as `user` (a user of
    /// the server's JAAS `Server` section, `DigestLoginModule`), on every
    /// connection. The session's identity is then `sasl:user`, which the
    /// creator ACLs of [`ZkAcl`] name. A wrong password or an unknown user
    /// makes [`crate::connect`] fail with [`Error::Unauthenticated`]; so does
    /// a server without SASL when it requires it. An empty `user` is
    /// refused with [`Error::InvalidArgument`] before any I/O.
    pub fn with_sasl_digest(
        mut self,
        user: impl Into<String>,
        password: impl Into<String>,
    ) -> Self {
        self.sasl = Some(Credentials::new(user.into(), password.into()));
        self
    }

    /// The ACL of every node coord creates (see [`ZkAcl`]). Default:
    /// [`ZkAcl::CreatorAllWorldRead`] with credentials (digest or SASL),
    /// [`ZkAcl::Open`] without. A creator ACL with neither credentials nor
    /// a TLS client certificate (which ZooKeeper's x509 provider turns into
    /// an identity) is refused by [`crate::connect`] with
    /// [`Error::InvalidArgument`] before any I/O (ZooKeeper would refuse
    /// every create with `InvalidACL`).
    pub fn with_acl(mut self, acl: ZkAcl) -> Self {
        self.acl = Some(acl);
        self
    }

    /// Reach every host of the connect string through TLS (rustls with the
    /// ring provider): the server's certificate must chain to `tls.ca` (a
    /// PEM file), or without one to the public web roots (Mozilla's list,
    /// built in; the system's store is never read), and carry the host of
    /// the address connected to (a DNS name or an IP address); with
    /// `tls.cert` and `tls.key` the session presents a client certificate
    /// (mutual TLS, ZooKeeper's `ssl.clientAuth=need`). The server needs a
    /// secure client port (`secureClientPort`, Netty).
    ///
    /// The files are read when the session connects, before any network
    /// I/O; [`crate::connect`] refuses, with [`Error::InvalidArgument`], a
    /// file it cannot read or use, and `tls.server_name`: the zookeeper
    /// client checks the certificate against each host and cannot check
    /// another name (connect by a name the certificate carries instead). A
    /// handshake the server or the client refuses is
    /// [`Error::Unauthenticated`], with a hint naming `ca=` or `cert=`/`key=`.
    pub fn with_tls(mut self, tls: TlsOptions) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The TLS settings, if [`ZkOptions::with_tls`] was set.
    pub fn tls(&self) -> Option<&TlsOptions> {
        self.tls.as_ref()
    }

    /// Read the TLS files, if TLS is set, and build the client's TLS
    /// options; call [`ZkOptions::validate`] first. File I/O only.
    pub(crate) fn load_tls(&self) -> Result<Option<crate::tls::LoadedTls>> {
        self.tls
            .as_ref()
            .map(|tls| crate::tls::load(tls, &self.hosts))
            .transpose()
    }

    /// The ACL nodes are created with: the one set by [`ZkOptions::with_acl`],
    /// or the default for these credentials.
    pub fn acl(&self) -> ZkAcl {
        self.acl.unwrap_or(if self.has_credentials() {
            ZkAcl::CreatorAllWorldRead
        } else {
            ZkAcl::Open
        })
    }

    /// The digest user, if [`ZkOptions::with_digest`] was set.
    pub fn digest_user(&self) -> Option<&str> {
        self.digest.as_ref().map(|c| c.user.as_str())
    }

    /// The SASL user, if [`ZkOptions::with_sasl_digest`] was set.
    pub fn sasl_user(&self) -> Option<&str> {
        self.sasl.as_ref().map(|c| c.user.as_str())
    }

    /// Whether the session will carry an identity (digest or SASL).
    pub fn has_credentials(&self) -> bool {
        self.digest.is_some() || self.sasl.is_some()
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
    /// [`ZkOptions::with_session_timeout`]).
    pub fn session_timeout(&self) -> Duration {
        self.session_timeout
    }

    /// The connection timeout, if one was set (see
    /// [`ZkOptions::with_connection_timeout`]).
    pub fn connection_timeout(&self) -> Option<Duration> {
        self.connection_timeout
    }

    /// Check the options, without I/O: [`crate::connect`] runs this first.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the connect string has no hosts or
    /// an empty one; a session timeout of zero or over
    /// [`coord_core::limits::MAX_SESSION_TIMEOUT`] (the ZooKeeper client
    /// sends it as an `i32` of milliseconds and multiplies it), and the same
    /// for a connection timeout; an empty digest or SASL user, a digest user
    /// containing `:`; TLS settings that cannot work (see
    /// [`ZkOptions::with_tls`]); a creator [`ZkAcl`] without an identity.
    /// [`Error::InvalidPath`] for a chroot that breaks
    /// [`coord_core::path`]'s rules.
    pub fn validate(&self) -> Result<()> {
        if self.hosts.is_empty() || self.hosts.split(',').any(|h| h.trim().is_empty()) {
            return Err(Error::InvalidArgument(format!(
                "zookeeper connect string {:?} needs host:port[,host:port…][/chroot]",
                format!(
                    "{}{}",
                    self.hosts,
                    self.chroot.as_deref().unwrap_or_default()
                )
            )));
        }
        if let Some(chroot) = &self.chroot {
            coord_core::path::validate(chroot)?;
        }
        limits::check_session_timeout(self.session_timeout)?;
        if let Some(timeout) = self.connection_timeout {
            if timeout.is_zero() {
                return Err(Error::InvalidArgument(
                    "a connection timeout of zero cannot work".into(),
                ));
            }
            limits::check("a connection timeout", timeout, limits::MAX_SESSION_TIMEOUT)?;
        }
        if let Some(digest) = &self.digest {
            digest.check_digest()?;
        }
        if let Some(sasl) = &self.sasl {
            sasl.check_sasl()?;
        }
        if let Some(tls) = &self.tls {
            crate::tls::check(tls, &self.hosts)?;
        }
        // A client certificate is an identity too (ZooKeeper's x509
        // provider names the session by it), so a creator ACL set
        // explicitly is let through with one.
        let has_certificate = self.tls.as_ref().is_some_and(|t| t.cert.is_some());
        if self.acl().needs_identity() && !self.has_credentials() && !has_certificate {
            return Err(Error::InvalidArgument(format!(
                "zookeeper ACL {:?} names the creator, but the session has no credentials \
                 (set digest or SASL credentials or a client certificate, or use ZkAcl::Open)",
                self.acl()
            )));
        }
        Ok(())
    }

    /// The client's connector; call [`ZkOptions::validate`] first.
    pub(crate) fn connector(&self) -> zookeeper_client::Connector {
        let connector = self.connector_without_digest();
        match &self.digest {
            Some(digest) => connector.with_auth("digest", &digest.digest_auth()),
            None => connector,
        }
    }

    /// The digest credentials as `addauth` sends them, if
    /// [`ZkOptions::with_digest`] was set.
    pub(crate) fn digest_auth(&self) -> Option<Vec<u8>> {
        self.digest.as_ref().map(Credentials::digest_auth)
    }

    /// [`ZkOptions::connector`] without the digest credentials, for a new
    /// session: they are sent once it is made ([`ZkOptions::digest_auth`];
    /// see [`crate::ZkSession::connect`]).
    pub(crate) fn connector_without_digest(&self) -> zookeeper_client::Connector {
        let mut connector =
            zookeeper_client::Client::connector().with_session_timeout(self.session_timeout);
        if let Some(timeout) = self.connection_timeout {
            connector = connector.with_connection_timeout(timeout);
        }
        if let Some(sasl) = &self.sasl {
            connector = connector.with_sasl(zookeeper_client::SaslOptions::digest_md5(
                sasl.user.clone(),
                sasl.password.0.clone(),
            ));
        }
        connector
    }

    pub(crate) fn creates_chroot(&self) -> bool {
        self.create_chroot
    }
}

impl std::str::FromStr for ZkOptions {
    type Err = Error;
    /// [`ZkOptions::new`], then [`ZkOptions::validate`].
    fn from_str(s: &str) -> Result<Self> {
        let options = ZkOptions::new(s);
        options.validate()?;
        Ok(options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hosts_and_chroot() {
        let o = ZkOptions::new("h1:2181,h2:2182/app/x");
        assert_eq!(o.hosts(), "h1:2181,h2:2182");
        assert_eq!(o.chroot(), Some("/app/x"));
        let o = ZkOptions::new("127.0.0.1:2181");
        assert_eq!(o.hosts(), "127.0.0.1:2181");
        assert_eq!(o.chroot(), None);
        let o = ZkOptions::new("h:1/");
        assert_eq!(o.chroot(), None);
    }

    #[test]
    fn refuses_durations_the_client_cannot_take() {
        let base = ZkOptions::new("127.0.0.1:2181");
        assert!(base.validate().is_ok());
        // `--session-timeout 106751991167301d` once overflowed in the client.
        let huge = Duration::from_secs(106_751_991_167_301 * 24 * 3600);
        for bad in [
            Duration::ZERO,
            huge,
            Duration::MAX,
            limits::MAX_SESSION_TIMEOUT + Duration::from_millis(1),
        ] {
            let o = base.clone().with_session_timeout(bad);
            assert!(
                matches!(o.validate(), Err(Error::InvalidArgument(_))),
                "session timeout {bad:?}"
            );
            let o = base.clone().with_connection_timeout(bad);
            assert!(
                matches!(o.validate(), Err(Error::InvalidArgument(_))),
                "connection timeout {bad:?}"
            );
        }
        let o = base
            .clone()
            .with_session_timeout(limits::MAX_SESSION_TIMEOUT)
            .with_connection_timeout(limits::MAX_SESSION_TIMEOUT);
        assert!(o.validate().is_ok());
        // The largest accepted timeout fits the client's i32 milliseconds.
        assert!(i32::try_from(limits::MAX_SESSION_TIMEOUT.as_millis()).is_ok());
    }

    #[test]
    fn credentials_and_acls() {
        let base = ZkOptions::new("127.0.0.1:2181");
        assert_eq!(base.acl(), ZkAcl::Open);
        assert!(!base.has_credentials());
        let digest = base.clone().with_digest("alice", "s3cret-pw");
        assert_eq!(digest.acl(), ZkAcl::CreatorAllWorldRead);
        assert_eq!(digest.digest_user(), Some("alice"));
        assert!(digest.validate().is_ok());
        let sasl = base.clone().with_sasl_digest("bob", "s3cret-pw");
        assert_eq!(sasl.acl(), ZkAcl::CreatorAllWorldRead);
        assert_eq!(sasl.sasl_user(), Some("bob"));
        assert_eq!(
            digest.clone().with_acl(ZkAcl::CreatorAll).acl(),
            ZkAcl::CreatorAll
        );
        assert_eq!(digest.clone().with_acl(ZkAcl::Open).acl(), ZkAcl::Open);
        for shown in [format!("{digest:?}"), format!("{sasl:?}")] {
            assert!(!shown.contains("s3cret-pw"), "{shown}");
        }
        // A creator ACL needs an identity; bad users are refused.
        for bad in [
            base.clone().with_acl(ZkAcl::CreatorAll),
            base.clone().with_acl(ZkAcl::CreatorAllWorldRead),
            base.clone().with_digest("", "s3cret-pw"),
            base.clone().with_digest("a:b", "s3cret-pw"),
            base.clone().with_sasl_digest("", "s3cret-pw"),
        ] {
            match bad.validate() {
                Err(Error::InvalidArgument(m)) => assert!(!m.contains("s3cret-pw"), "{m}"),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
        // A client certificate is an identity: an explicit creator ACL is
        // let through, the default stays open.
        let cert = base
            .clone()
            .with_tls(TlsOptions::new().with_identity("client.pem", "client-key.pem"));
        assert_eq!(cert.acl(), ZkAcl::Open);
        assert!(cert.with_acl(ZkAcl::CreatorAll).validate().is_ok());
    }

    #[test]
    fn rejects_bad_strings() {
        assert!(matches!(
            ZkOptions::new("").validate(),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            ZkOptions::new("/app").validate(),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            ZkOptions::new("h1:1,,h2:2").validate(),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            ZkOptions::new("h:1/app/").validate(),
            Err(Error::InvalidPath { .. })
        ));
        assert!(matches!(
            ZkOptions::new("h:1/a//b").validate(),
            Err(Error::InvalidPath { .. })
        ));
    }
}

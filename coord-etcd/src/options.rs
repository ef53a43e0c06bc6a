//! [`EtcdOptions`]: where the cluster is and how sessions behave.

use std::time::Duration;

use coord_core::limits::MAX_SESSION_TIMEOUT;
use coord_core::{Error, Result, TlsOptions};

/// The session timeout (the lease TTL) used unless
/// [`EtcdOptions::with_session_timeout`] says otherwise.
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one request may take before it counts as a lost connection,
/// unless [`EtcdOptions::with_request_timeout`] says otherwise.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest request or connect timeout accepted: an hour. A request
/// that may take longer than that is not waited for, it is lost.
pub const MAX_REQUEST_TIMEOUT: Duration = Duration::from_secs(3600);

/// How to reach an etcd cluster and how sessions on it behave.
///
/// ```
/// use std::time::Duration;
/// use coord_etcd::EtcdOptions;
///
/// let options = EtcdOptions::new(["http://10.0.0.1:2379", "http://10.0.0.2:2379"])
///     .with_namespace("/myapp")
///     .with_session_timeout(Duration::from_secs(15));
/// assert_eq!(options.endpoints().len(), 2);
/// ```
#[derive(Clone)]
pub struct EtcdOptions {
    endpoints: Vec<String>,
    namespace: String,
    session_timeout: Duration,
    request_timeout: Duration,
    connect_timeout: Duration,
    user: Option<(String, String)>,
    tls: Option<TlsOptions>,
}

/// Shows everything but the password.
impl std::fmt::Debug for EtcdOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdOptions")
            .field("endpoints", &self.endpoints)
            .field("namespace", &self.namespace)
            .field("session_timeout", &self.session_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("user", &self.user.as_ref().map(|(user, _)| user))
            .field("tls", &self.tls)
            .finish()
    }
}

impl EtcdOptions {
    /// Options for the cluster at `endpoints`: `http://host:port`,
    /// `https://host:port` or `host:port`, one per member (the client
    /// balances over them and fails over when one goes away). An
    /// `https://` endpoint turns TLS on (with the public roots unless
    /// [`EtcdOptions::with_tls`] says otherwise); with TLS on, every endpoint is
    /// reached over TLS, whatever its scheme.
    pub fn new<I, S>(endpoints: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        EtcdOptions {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            namespace: String::new(),
            session_timeout: DEFAULT_SESSION_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            connect_timeout: DEFAULT_REQUEST_TIMEOUT,
            user: None,
            tls: None,
        }
    }

    /// Options from a comma-separated endpoint list
    /// (`http://a:2379,http://b:2379`), as in `ETCDCTL_ENDPOINTS`.
    pub fn from_endpoint_list(list: &str) -> Self {
        Self::new(
            list.split(',')
                .map(str::trim)
                .filter(|e| !e.is_empty())
                .map(str::to_owned),
        )
    }

    /// Options from a URL `etcd://host[:port][,host[:port]…][/namespace]`,
    /// as `coordination::connect` takes it: one host per member (port 2379 when
    /// omitted; `[::1]:2379` for IPv6), and an optional key namespace.
    ///
    /// ```
    /// let o = coord_etcd::EtcdOptions::from_url("etcd://10.0.0.1:2379,10.0.0.2/myapp")?;
    /// assert_eq!(o.endpoints(), ["http://10.0.0.1:2379", "http://10.0.0.2:2379"]);
    /// assert_eq!(o.namespace(), "/myapp");
    /// # Ok::<(), coord_core::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] saying what is wrong: another scheme, no
    /// host, an empty host, a port that is not a port number, credentials, a
    /// query or a fragment (use the builder methods for those settings).
    pub fn from_url(url: &str) -> Result<Self> {
        let bad = |why: &str| Error::InvalidArgument(format!("etcd URL {url:?}: {why}"));
        let rest = url
            .strip_prefix("etcd://")
            .ok_or_else(|| bad("it must start with etcd://"))?;
        if rest.contains(['?', '#']) {
            return Err(bad("a query or fragment is not supported"));
        }
        let (hosts, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        if hosts.contains('@') {
            return Err(bad(
                "credentials in the URL are not supported; use EtcdOptions::with_user",
            ));
        }
        let endpoints = coord_core::backend::host::host_list(hosts, 2379)
            .map_err(|why| bad(&why))?
            .into_iter()
            .map(|host| format!("http://{host}"));
        Ok(Self::new(endpoints).with_namespace(path.trim_end_matches('/')))
    }

    /// Prefix every key with `namespace`: the path `/a/b` becomes the key
    /// `<namespace>/a/b`. A trailing `/` is ignored. Default: none, so
    /// paths are keys as they are.
    pub fn with_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// The session timeout: the TTL of the session's lease (default
    /// [`DEFAULT_SESSION_TIMEOUT`], 10 s). etcd counts whole seconds, so it
    /// is rounded up to the next whole second (1.2 s asks for a 2 s lease),
    /// and the server may raise it to its minimum. Ephemeral nodes outlive a
    /// crashed client by at most this long. A session whose keep-alives go
    /// unanswered for 90 % of it (from the send time of the last answered
    /// one) counts as lost on the client, before the server can drop the
    /// lease (see [`coord_core::backend::lease`]). Zero or over
    /// [`coord_core::limits::MAX_SESSION_TIMEOUT`] is refused by
    /// [`crate::connect`](fn@crate::connect) with [`Error::InvalidArgument`] before any I/O.
    pub fn with_session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// How long one request may take before it fails with
    /// [`coord_core::Error::ConnectionLost`] (default
    /// [`DEFAULT_REQUEST_TIMEOUT`], 5 s). Zero or over
    /// [`MAX_REQUEST_TIMEOUT`] is refused by [`crate::connect`](fn@crate::connect).
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// How long connecting to an endpoint may take (default 5 s). Zero or
    /// over [`MAX_REQUEST_TIMEOUT`] is refused by [`crate::connect`](fn@crate::connect).
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Authenticate as `user` (etcd's auth must be enabled on the server).
    pub fn with_user(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.user = Some((user.into(), password.into()));
        self
    }

    /// Reach the members over TLS (rustls): trust the authorities of
    /// `tls.ca` (without it, the public web roots built into this crate,
    /// Mozilla's list through `webpki-roots`; no system store is read),
    /// present `tls.cert` and `tls.key` when the server requires client
    /// certificates (mutual TLS), and check the server's certificate
    /// against `tls.server_name` (default: the endpoint's host, a DNS name
    /// or an IP address). Endpoints given as `http://` are dialled as
    /// `https://`. The files are read by [`crate::connect`](fn@crate::connect), before any
    /// I/O.
    ///
    /// ```
    /// use coord_core::TlsOptions;
    /// use coord_etcd::EtcdOptions;
    ///
    /// let options = EtcdOptions::new(["10.0.0.1:2379"]).with_tls(
    ///     TlsOptions::new()
    ///         .with_ca("/etc/etcd/ca.pem")
    ///         .with_identity("/etc/etcd/client.pem", "/etc/etcd/client-key.pem"),
    /// );
    /// assert!(options.tls().is_some());
    /// ```
    pub fn with_tls(mut self, tls: TlsOptions) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The TLS settings given with [`EtcdOptions::with_tls`], if any (an
    /// `https://` endpoint alone turns TLS on with the defaults, but sets
    /// none here).
    pub fn tls(&self) -> Option<&TlsOptions> {
        self.tls.as_ref()
    }

    /// The user name given with [`EtcdOptions::with_user`], if any (the password
    /// is not shown).
    pub fn user(&self) -> Option<&str> {
        self.user.as_ref().map(|(user, _)| user.as_str())
    }

    /// The TLS settings in effect: those given, or the defaults when an
    /// endpoint is `https://`; `None`: plaintext.
    pub(crate) fn effective_tls(&self) -> Option<TlsOptions> {
        self.tls.clone().or_else(|| {
            self.endpoints
                .iter()
                .any(|e| e.starts_with("https://"))
                .then(TlsOptions::new)
        })
    }

    /// The endpoints as the client dials them: with TLS on, `https://`
    /// (an `http://` one is rewritten, one without a scheme gets it);
    /// without, as given.
    pub(crate) fn dial_endpoints(&self, tls: bool) -> Vec<String> {
        self.endpoints
            .iter()
            .map(|e| {
                if !tls {
                    e.clone()
                } else if let Some(rest) = e.strip_prefix("http://") {
                    format!("https://{rest}")
                } else if e.starts_with("https://") {
                    e.clone()
                } else {
                    format!("https://{e}")
                }
            })
            .collect()
    }

    /// The endpoints.
    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    /// The key namespace as given.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The session timeout as given (see [`EtcdOptions::with_session_timeout`]
    /// for how it is rounded when the lease is granted).
    pub fn session_timeout(&self) -> Duration {
        self.session_timeout
    }

    /// The request timeout.
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// The connect timeout.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// The etcd key that holds the node at `path` under these options (for
    /// tools such as `etcdctl lock <key>` that work on the same nodes).
    /// The root `/` has no key; this gives the namespace for it.
    pub fn key_of(&self, path: &str) -> String {
        if path == "/" {
            return self.namespace.trim_end_matches('/').to_owned();
        }
        crate::keys::KeySpace::new(&self.namespace).key(path)
    }

    /// The lease TTL asked for: the session timeout rounded up to whole
    /// seconds.
    pub(crate) fn lease_ttl_secs(&self) -> i64 {
        let secs = self
            .session_timeout
            .as_nanos()
            .div_ceil(1_000_000_000)
            .max(1);
        i64::try_from(secs).unwrap_or(i64::MAX)
    }

    /// The client crate's connect options, with the TLS material read by
    /// [`TlsOptions::load`] (`None`: plaintext).
    pub(crate) fn client_options(
        &self,
        tls: Option<&coord_core::backend::TlsMaterial>,
    ) -> Result<etcd_client::ConnectOptions> {
        let mut o = etcd_client::ConnectOptions::new()
            .with_connect_timeout(self.connect_timeout)
            // HTTP/2 pings find a dead connection under a long watch. etcd
            // refuses pings more often than every 5 s (too_many_pings).
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5));
        if let Some((user, password)) = &self.user {
            // etcd's tokens expire (after --auth-token-ttl of disuse, or
            // the JWT's lifetime): the client authenticates again and
            // resends the request refused with "invalid auth token".
            o = o
                .with_user(user.clone(), password.clone())
                .with_auto_token_refresh(true);
        }
        if let Some(material) = tls {
            o = with_tls(o, material, self.connect_timeout)?;
        }
        Ok(o)
    }

    /// Refuse options that cannot work, before any I/O: bad TLS settings
    /// ([`TlsOptions::validate`]), no endpoint, a
    /// session timeout of zero or over [`MAX_SESSION_TIMEOUT`], a request or connect
    /// timeout of zero or over [`MAX_REQUEST_TIMEOUT`]. Within these bounds
    /// no arithmetic on them can overflow.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.endpoints.is_empty() {
            return Err(Error::InvalidArgument(
                "etcd: at least one endpoint is needed".into(),
            ));
        }
        let bounded = |what: &str, value: Duration, max: Duration| {
            if value.is_zero() {
                Err(Error::InvalidArgument(format!(
                    "etcd: the {what} must be positive"
                )))
            } else if value > max {
                Err(Error::InvalidArgument(format!(
                    "etcd: the {what} of {value:?} is longer than the maximum of {max:?}"
                )))
            } else {
                Ok(())
            }
        };
        bounded("session timeout", self.session_timeout, MAX_SESSION_TIMEOUT)?;
        bounded("request timeout", self.request_timeout, MAX_REQUEST_TIMEOUT)?;
        bounded("connect timeout", self.connect_timeout, MAX_REQUEST_TIMEOUT)?;
        if let Some(tls) = &self.tls {
            tls.validate()?;
        }
        Ok(())
    }
}

/// Hand the TLS material to the client (tonic's rustls, ring provider).
#[cfg(feature = "tls")]
fn with_tls(
    options: etcd_client::ConnectOptions,
    material: &coord_core::backend::TlsMaterial,
    handshake_timeout: Duration,
) -> Result<etcd_client::ConnectOptions> {
    use etcd_client::{Certificate, Identity, TlsOptions as ClientTls};
    let mut tls = ClientTls::new()
        .timeout(handshake_timeout)
        .assume_http2(true);
    tls = match &material.ca {
        Some(ca) => tls.ca_certificate(Certificate::from_pem(ca)),
        None => tls.with_webpki_roots(),
    };
    if let Some((cert, key)) = &material.identity {
        tls = tls.identity(Identity::from_pem(cert, key));
    }
    if let Some(name) = &material.server_name {
        tls = tls.domain_name(name.clone());
    }
    Ok(options.with_tls(tls))
}

/// Built without the `tls` feature: TLS is refused before any I/O.
#[cfg(not(feature = "tls"))]
fn with_tls(
    _: etcd_client::ConnectOptions,
    _: &coord_core::backend::TlsMaterial,
    _: Duration,
) -> Result<etcd_client::ConnectOptions> {
    Err(Error::InvalidArgument(
        "etcd: TLS was asked for, but coord-etcd was built without its `tls` feature".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_builder() {
        let o = EtcdOptions::new(["127.0.0.1:2379"]);
        assert_eq!(o.lease_ttl_secs(), 10);
        assert_eq!(o.key_of("/a/b"), "/a/b");
        let o = o
            .with_namespace("/ns/")
            .with_session_timeout(Duration::from_millis(2500));
        assert_eq!(o.lease_ttl_secs(), 3);
        assert_eq!(o.key_of("/a/b"), "/ns/a/b");
        assert_eq!(o.key_of("/"), "/ns");
        assert!(o.validate().is_ok());
    }

    #[test]
    fn endpoint_lists_split_on_commas() {
        let o = EtcdOptions::from_endpoint_list(" http://a:1, http://b:2 ,");
        assert_eq!(o.endpoints(), ["http://a:1", "http://b:2"]);
    }

    #[test]
    fn urls() {
        let o = EtcdOptions::from_url("etcd://a:1,b,[::1]:3,[::2]/ns/x/").expect("url");
        assert_eq!(
            o.endpoints(),
            [
                "http://a:1",
                "http://b:2379",
                "http://[::1]:3",
                "http://[::2]:2379"
            ]
        );
        assert_eq!(o.namespace(), "/ns/x");
        let o = EtcdOptions::from_url("etcd://h").expect("url");
        assert_eq!(o.namespace(), "");
        assert_eq!(
            EtcdOptions::from_url("etcd://h/").expect("url").namespace(),
            ""
        );
        for bad in [
            "zk://h:2181",
            "etcd://",
            "etcd:///ns",
            "etcd://a,,b",
            "etcd://h:port",
            "etcd://h:",
            "etcd://u:p@h",
            "etcd://h?ttl=3",
            "etcd://[::1",
        ] {
            assert!(
                matches!(EtcdOptions::from_url(bad), Err(Error::InvalidArgument(_))),
                "{bad} was accepted"
            );
        }
    }

    #[test]
    fn bad_options_are_refused() {
        let refused = |o: EtcdOptions| matches!(o.validate(), Err(Error::InvalidArgument(_)));
        let o = || EtcdOptions::new(["x:1"]);
        assert!(refused(EtcdOptions::new(Vec::<String>::new())));
        assert!(refused(o().with_session_timeout(Duration::ZERO)));
        assert!(refused(o().with_session_timeout(
            MAX_SESSION_TIMEOUT + Duration::from_nanos(1)
        )));
        assert!(refused(o().with_session_timeout(Duration::MAX)));
        assert!(refused(o().with_request_timeout(Duration::ZERO)));
        assert!(refused(o().with_request_timeout(Duration::MAX)));
        assert!(refused(o().with_request_timeout(
            MAX_REQUEST_TIMEOUT + Duration::from_nanos(1)
        )));
        assert!(refused(o().with_connect_timeout(Duration::ZERO)));
        assert!(refused(o().with_connect_timeout(Duration::MAX)));
        // The largest accepted values work, and their arithmetic holds.
        let max = o()
            .with_session_timeout(MAX_SESSION_TIMEOUT)
            .with_request_timeout(MAX_REQUEST_TIMEOUT)
            .with_connect_timeout(MAX_REQUEST_TIMEOUT);
        assert!(max.validate().is_ok());
        assert_eq!(max.lease_ttl_secs(), 24 * 3600);
        // A sub-second TTL is rounded up to a whole second.
        assert_eq!(
            o().with_session_timeout(Duration::from_nanos(1))
                .lease_ttl_secs(),
            1
        );
    }

    #[test]
    fn the_password_stays_out_of_debug() {
        let o = EtcdOptions::new(["x:1"]).with_user("alice", "hunter2-secret");
        let shown = format!("{o:?}");
        assert!(shown.contains("alice"), "{shown}");
        assert!(!shown.contains("hunter2"), "{shown}");
    }

    #[test]
    fn tls_turns_endpoints_to_https() {
        let o = EtcdOptions::from_url("etcd://10.0.0.1:2379,h").expect("url");
        assert!(o.effective_tls().is_none());
        assert_eq!(
            o.dial_endpoints(false),
            ["http://10.0.0.1:2379", "http://h:2379"]
        );
        let o = o.with_tls(TlsOptions::new().with_ca("/ca.pem"));
        assert_eq!(
            o.tls().and_then(|t| t.ca.as_deref()),
            Some("/ca.pem".as_ref())
        );
        assert!(o.effective_tls().is_some());
        assert_eq!(
            o.dial_endpoints(true),
            ["https://10.0.0.1:2379", "https://h:2379"]
        );
        let mixed = EtcdOptions::new(["a:1", "https://b:2"]);
        assert_eq!(mixed.effective_tls(), Some(TlsOptions::new()));
        assert!(mixed.tls().is_none());
        assert_eq!(mixed.dial_endpoints(true), ["https://a:1", "https://b:2"]);
    }

    #[test]
    fn tls_settings_are_checked_and_shown_without_secrets() {
        let o = EtcdOptions::new(["x:1"])
            .with_user("alice", "hunter2-secret")
            .with_tls(TlsOptions::new().with_identity("/c.pem", "/k.pem"));
        assert!(o.validate().is_ok());
        let shown = format!("{o:?}");
        assert!(shown.contains("/k.pem"), "{shown}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert_eq!(o.user(), Some("alice"));
        let mut tls = TlsOptions::new().with_identity("/c.pem", "/k.pem");
        tls.key = None;
        let half = EtcdOptions::new(["x:1"]).with_tls(tls);
        assert!(matches!(half.validate(), Err(Error::InvalidArgument(m)) if m.starts_with("tls:")));
    }
}

//! [`connect`]: opening a ZooKeeper session, with a diagnosis of why a
//! connection failed when the client does not say.
//!
//! The client keeps a failed handshake to itself (it retries, then reports
//! a lost connection or a timeout). So the client is first opened with one
//! quick round over the hosts; when it fails, one probe connection with the
//! session's own settings asks the server directly (coord-core's shared
//! TLS probe), and a refused certificate, a refused (or missing) client
//! certificate, or a plaintext client at a TLS-only port becomes a typed
//! error at once. Anything else (no server listening, a slow ensemble) gets
//! the client's usual connection attempts, for about the session timeout; a
//! TLS session whose handshake the server just dropped (as a plaintext port
//! does, but also an overloaded server) gets them too, and their error then
//! says the port may not have TLS.

use std::sync::Arc;
use std::time::Duration;

use coord_core::backend::tls_probe;
use coord_core::backend::{lease::LeaseClock, TlsMaterial};
use coord_core::{Error, Result};
use tokio::time::Instant;
use zookeeper_client as zk;

use crate::error::{classify, map_error, Finding, Target};
use crate::handle::Handle;
use crate::keepalive::ping;
use crate::options::ZkOptions;
use crate::session::ZkSession;
use crate::shared::{self, Shared};
use crate::tls::{dial, LoadedTls};

/// How long diagnosing a failed connection may take, all hosts together.
const PROBE_BUDGET: Duration = Duration::from_secs(2);

/// How many hosts a diagnosis asks, at most.
const PROBE_HOSTS: usize = 3;

/// Open a ZooKeeper session as a [`coord_core::Session`].
///
/// # Errors
/// As [`ZkSession::connect`].
///
/// # Cancel safety
/// Cancel safe: dropped before it returns, the session being opened is
/// closed.
pub async fn connect(options: ZkOptions) -> Result<coord_core::Session> {
    let session = ZkSession::connect(options).await?;
    Ok(coord_core::Session::new(Arc::new(session)))
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
    /// [`ZkOptions::with_tls`]);
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
    pub async fn connect(options: ZkOptions) -> Result<ZkSession> {
        options.validate()?;
        // TLS files are read before any network I/O.
        let tls = options.load_tls()?;
        // The session lives on the server at least until this instant plus
        // its timeout: the connect request was sent after it.
        let sent = Instant::now();
        let client = open_client(&options, tls.as_ref(), |e| connect_error(&options, e)).await?;
        // The negotiated timeout (the client reports the larger of it and
        // its connection timeout, which it keeps below the negotiated one).
        let session_timeout = client.session_timeout();
        let lease = Arc::new(LeaseClock::new(session_timeout, sent));
        let client = match options.chroot() {
            None => client,
            Some(chroot) => {
                if options.creates_chroot() {
                    let persistent = zk::CreateMode::Persistent.with_acls(options.acl().acls());
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
        shared::follow(shared.clone(), client.state_watcher());
        let credentials = client.session().clone();
        let handle = Handle::new(client, shared, options.acl().acls());
        tracing::debug!(session = %handle.id, ?session_timeout, "zk session open");
        tokio::spawn(ping(
            handle.weak_slot(),
            handle.shared.clone(),
            lease.clone(),
            session_timeout,
        ));
        Ok(ZkSession {
            handle,
            credentials,
            lease,
            options: options.clone(),
        })
    }
}

fn connect_error(options: &ZkOptions, err: zk::Error) -> Error {
    match err {
        zk::Error::Timeout | zk::Error::NoHosts => Error::ConnectionLost(format!(
            "no ZooKeeper server at {} answered within the session timeout ({:?})",
            options.hosts(),
            options.session_timeout()
        )),
        other => map_error(other, Target::path("/")),
    }
}

/// Open the session's client: one round over the hosts; when every host
/// failed, a diagnosis (see the module doc), then, unless it found the
/// cause, the client's usual attempts. `map` maps the client's error.
async fn open_client(
    options: &ZkOptions,
    tls: Option<&LoadedTls>,
    map: impl Fn(zk::Error) -> Error,
) -> Result<zk::Client> {
    let first = dial(
        options.connector().with_fail_eagerly(),
        options.hosts(),
        tls,
    )
    .await;
    let suspicion = match first {
        Ok(client) => return Ok(client),
        Err(zk::Error::NoHosts) => {
            match diagnose(options.hosts(), tls.map(|t| &t.material)).await {
                Some(Finding::Certain(err)) => return Err(err),
                Some(Finding::Suspected(note)) => Some(note),
                None => None,
            }
        }
        Err(e) => return Err(map(e)),
    };
    dial(options.connector(), options.hosts(), tls)
        .await
        .map_err(|e| match (map(e), suspicion) {
            (Error::ConnectionLost(m), Some(note)) => Error::ConnectionLost(format!("{m}; {note}")),
            (other, _) => other,
        })
}

/// Ask the hosts (a few, within [`PROBE_BUDGET`]) why a connection failed:
/// the typed error, or `None` when no probe found a cause.
async fn diagnose(hosts: &str, material: Option<&TlsMaterial>) -> Option<Finding> {
    let probe = async {
        for host_port in hosts.split(',').map(str::trim).take(PROBE_HOSTS) {
            let found = match material {
                Some(material) => tls_refusal(host_port, material).await,
                None => plaintext_at_tls_port(host_port).await,
            };
            if found.is_some() {
                return found;
            }
        }
        None
    };
    tokio::time::timeout(PROBE_BUDGET, probe)
        .await
        .ok()
        .flatten()
}

/// Handshake with `host_port` using the session's TLS settings, then read
/// the server's first word (under TLS 1.3 a server refuses a client
/// certificate after the client's handshake is over, with an alert): the
/// refusal as a typed error, or `None`.
async fn tls_refusal(host_port: &str, material: &TlsMaterial) -> Option<Finding> {
    let text = tls_probe::refusal(host_port, material, &[]).await?;
    classify(host_port, &text.to_ascii_lowercase())
}

/// Whether the server at `host_port` answers a TLS ClientHello in TLS: the
/// error for a plaintext session at a TLS-only port, or `None`.
async fn plaintext_at_tls_port(host_port: &str) -> Option<Finding> {
    tls_probe::speaks_tls(host_port, &[]).await.then(|| {
        Finding::Certain(Error::ConnectionLost(format!(
            "the ZooKeeper server at {host_port} speaks TLS only: the server may require TLS \
             (`?tls=true` in the URL, ZkOptions::tls)"
        )))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A duration the client cannot take is refused before any I/O: no
    /// connect is tried (the host would make it wait), nothing overflows.
    #[tokio::test]
    async fn connect_refuses_a_session_timeout_out_of_range() {
        // A black-hole address: a connect attempt would hang, not fail.
        let base = ZkOptions::new("192.0.2.1:2181");
        for bad in [
            Duration::ZERO,
            Duration::from_secs(106_751_991_167_301 * 24 * 3600),
            Duration::MAX,
        ] {
            let options = base.clone().with_session_timeout(bad);
            let result = tokio::time::timeout(Duration::from_secs(1), ZkSession::connect(options))
                .await
                .expect("refused at once, before any I/O");
            assert!(
                matches!(result, Err(Error::InvalidArgument(_))),
                "{bad:?}: {result:?}"
            );
        }
    }
}

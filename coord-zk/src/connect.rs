//! [`connect`]: opening a ZooKeeper session, within the session timeout,
//! with a diagnosis of why a connection failed when the client does not
//! say.
//!
//! The client keeps a failed handshake to itself (it retries, then reports
//! a lost connection or a timeout). So the client is first opened with one
//! quick round over the hosts; when it fails, probes ask the hosts
//! directly: under TLS, one connection with the session's own settings
//! (coord-core's shared TLS probe) turns a refused certificate, or a
//! refused (or missing) client certificate, into a typed error at once;
//! then coord-core's sniff asks what listens there at all, and a server of
//! another kind (etcd, Redis), a TLS-only port for a plaintext session or a
//! plaintext ZooKeeper for a TLS one ends the connect at once, naming the
//! address and the fix. Anything else (nothing listening, a slow
//! ensemble) gets the client's usual connection attempts until the session
//! timeout less the probes' share, and their error says what the probes
//! saw (connection refused, say).

use std::sync::Arc;
use std::time::Duration;

use coord_core::backend::sniff::{self, Asked, Kind};
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
use crate::shared::Shared;
use crate::states;
use crate::tls::{dial, LoadedTls};

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
    /// first if it is missing (see [`ZkOptions::with_create_chroot`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`], before any I/O, for a session or
    /// connection timeout of zero or over
    /// [`coord_core::limits::MAX_SESSION_TIMEOUT`], an empty digest or SASL
    /// user, a digest user containing `:`, or a creator [`crate::ZkAcl`]
    /// without credentials; also before any network I/O, TLS settings or
    /// files that cannot be used, and a TLS `server_name` (see
    /// [`ZkOptions::with_tls`]);
    /// [`Error::ConnectionLost`], within the session timeout, naming the
    /// address and what to fix: at once for a server of another kind
    /// (etcd, Redis), a TLS-only port reached in plaintext (the message
    /// says the server may require TLS) or a plaintext ZooKeeper reached
    /// through TLS; after the client's attempts when no host answered
    /// (saying, e.g., that nothing listens there);
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
        let client = open_client(&options, tls.as_ref()).await?;
        // The digest credentials go once the session is made, before
        // anything else. Sent with the ConnectRequest (the client's way),
        // the server answers them at once, but a new session's
        // ConnectResponse only once the session is committed: the auth
        // answer can come first, and the client takes it for a broken
        // ConnectResponse and drops the connection (on a loaded server,
        // one attempt after another, until the connect gives up). The
        // client sends them again on every reconnection, where a
        // standalone server answers the ConnectResponse first.
        if let Some(auth) = options.digest_auth() {
            client
                .auth("digest", &auth)
                .await
                .map_err(|e| map_error(e, Target::path("/")))?;
        }
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
        let states = client.state_watcher();
        let credentials = client.session().clone();
        let handle = Handle::new(client, shared, options.acl().acls());
        states::follow(
            handle.shared.clone(),
            states,
            handle.weak_slot(),
            lease.clone(),
        );
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

/// What a ZooKeeper connect asks of the server, for the sniff's hint.
fn asked(tls: bool) -> Asked {
    Asked {
        kind: Kind::ZooKeeper,
        tls,
        tls_on: "the server may require TLS (`?tls=true` in the URL, ZkOptions::with_tls)",
        tls_off: "drop tls=true (ZkOptions without with_tls)",
    }
}

/// The error for attempts that gave up (the client's `Timeout` or
/// `NoHosts`, or the deadline) after `tried`.
fn gave_up(options: &ZkOptions, tried: Duration) -> Error {
    // Whole milliseconds: the nanoseconds are noise in a message.
    let tried = Duration::from_millis(u64::try_from(tried.as_millis()).unwrap_or(u64::MAX));
    Error::ConnectionLost(format!(
        "no ZooKeeper server at {} answered within {tried:?} (of the session timeout, {:?})",
        options.hosts(),
        options.session_timeout()
    ))
}

/// Open the session's client, within the session timeout: one round over
/// the hosts; when every host failed, a diagnosis (see the module doc),
/// then, unless it found the cause, the client's usual attempts until the
/// session timeout less the diagnosis's share
/// ([`sniff::split_budget`]).
async fn open_client(options: &ZkOptions, tls: Option<&LoadedTls>) -> Result<zk::Client> {
    let started = Instant::now();
    let (attempts, budget) = sniff::split_budget(options.session_timeout());
    let until = started + attempts;
    let eager = dial(
        options.connector_without_digest().with_fail_eagerly(),
        options.hosts(),
        tls,
    );
    let suspicion = match tokio::time::timeout_at(until, eager).await {
        Ok(Ok(client)) => return Ok(client),
        Ok(Err(zk::Error::NoHosts)) | Err(_) => {
            match diagnose(options.hosts(), tls.map(|t| &t.material), budget).await {
                Some(Finding::Certain(err)) => return Err(err),
                Some(Finding::Suspected(note)) => Some(note),
                None => None,
            }
        }
        Ok(Err(e)) => return Err(map_error(e, Target::path("/"))),
    };
    let attempt = dial(options.connector_without_digest(), options.hosts(), tls);
    let err = match tokio::time::timeout_at(until, attempt).await {
        Ok(Ok(client)) => return Ok(client),
        Ok(Err(zk::Error::Timeout | zk::Error::NoHosts)) | Err(_) => {
            gave_up(options, started.elapsed())
        }
        Ok(Err(e)) => map_error(e, Target::path("/")),
    };
    Err(match (err, suspicion) {
        (Error::ConnectionLost(m), Some(note)) => Error::ConnectionLost(format!("{m}; {note}")),
        (other, _) => other,
    })
}

/// Ask the hosts (the first [`PROBE_HOSTS`], within `budget`) why a
/// connection failed: under TLS, whether the server refused a
/// certificate (half the budget); then what listens there at all
/// (coord-core's sniff): nothing, a server of another kind, TLS for a
/// plaintext session or plaintext for a TLS one. `None` when no probe
/// found a cause.
async fn diagnose(
    hosts: &str,
    material: Option<&TlsMaterial>,
    budget: Duration,
) -> Option<Finding> {
    let addrs: Vec<String> = hosts
        .split(',')
        .map(|h| h.trim().to_owned())
        .take(PROBE_HOSTS)
        .collect();
    let mut suspicion = None;
    if let Some(material) = material {
        let refusals = async {
            for host_port in &addrs {
                match tls_refusal(host_port, material).await {
                    Some(Finding::Certain(err)) => return Some(Finding::Certain(err)),
                    Some(Finding::Suspected(note)) => return Some(Finding::Suspected(note)),
                    None => {}
                }
            }
            None
        };
        match tokio::time::timeout(budget / 2, refusals)
            .await
            .ok()
            .flatten()
        {
            Some(Finding::Certain(err)) => return Some(Finding::Certain(err)),
            Some(Finding::Suspected(note)) => suspicion = Some(note),
            None => {}
        }
    }
    let left = match material {
        Some(_) => budget / 2,
        None => budget,
    };
    let hint = sniff::diagnose(&addrs, &asked(material.is_some()), left).await;
    match (hint, suspicion) {
        (Some(h), Some(note)) if h.certain => Some(Finding::Certain(Error::ConnectionLost(
            format!("{note}; {}", h.text),
        ))),
        (Some(h), None) if h.certain => Some(Finding::Certain(Error::ConnectionLost(h.text))),
        (Some(h), Some(note)) => Some(Finding::Suspected(format!("{note}; {}", h.text))),
        (Some(h), None) => Some(Finding::Suspected(h.text)),
        (None, note) => note.map(Finding::Suspected),
    }
}

/// Handshake with `host_port` using the session's TLS settings, then read
/// the server's first word (under TLS 1.3 a server refuses a client
/// certificate after the client's handshake is over, with an alert): the
/// refusal as a typed error, or `None`.
async fn tls_refusal(host_port: &str, material: &TlsMaterial) -> Option<Finding> {
    let text = tls_probe::refusal(host_port, material, &[]).await?;
    classify(host_port, &text.to_ascii_lowercase())
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

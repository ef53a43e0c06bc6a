//! [`connect`]: open a session on an etcd cluster (connect, grant its
//! lease, start the keep-alive).

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64};
use std::sync::Arc;
use std::time::{Duration, Instant};

use coord_core::backend::lease::LeaseClock;
use coord_core::backend::Backoff;
use coord_core::{Result, Session, SessionState};
use etcd_client::Client;
use tokio::sync::watch;

use crate::error;
use crate::etcd_session::EtcdSession;
use crate::keepalive::keep_alive;
use crate::keys::KeySpace;
use crate::options::EtcdOptions;
use crate::shared::Shared;

/// Open a session on the etcd cluster described by `options`: connect,
/// grant a lease whose TTL is the session timeout and keep it alive in the
/// background.
///
/// ```no_run
/// # async fn demo() -> coord_core::Result<()> {
/// use coord_core::CreateMode;
/// use coord_etcd::EtcdOptions;
///
/// let session = coord_etcd::connect(EtcdOptions::new(["http://127.0.0.1:2379"])).await?;
/// session.create("/jobs/nightly", b"owner-1", CreateMode::Ephemeral).await?;
/// session.close().await?;
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] for options that cannot work, before any I/O
/// (no endpoint; a session timeout of zero or over
/// [`coord_core::limits::MAX_SESSION_TIMEOUT`]; a request or connect
/// timeout of zero or over [`crate::MAX_REQUEST_TIMEOUT`]; bad TLS
/// settings, or a TLS file that cannot be read or holds no PEM block of
/// its kind);
/// [`Error::Unauthenticated`] when the server refuses the user name or
/// password, wants credentials, or the TLS handshake fails on trust: its
/// certificate is not trusted (hint: `ca=`), does not carry the name
/// checked (`server_name=`), or it refuses our client certificate or its
/// absence (`cert=`/`key=`);
/// [`Error::ConnectionLost`] when no endpoint answers within the
/// request timeout or the session timeout, whichever is shorter, or one
/// side speaks TLS and the other does not, or a server of another kind
/// (ZooKeeper, Redis) answers there: the message names the endpoint and
/// what to fix (nothing listening, TLS, the other server's scheme);
/// [`Error::Backend`] for anything else the client or the server says (a
/// malformed endpoint, say).
///
/// # Cancel safety
/// Cancel safe in effect: dropped after the lease was granted, nothing keeps
/// the lease alive and the server drops it after its TTL.
///
/// [`Error::InvalidArgument`]: coord_core::Error::InvalidArgument
/// [`Error::Unauthenticated`]: coord_core::Error::Unauthenticated
/// [`Error::ConnectionLost`]: coord_core::Error::ConnectionLost
/// [`Error::Backend`]: coord_core::Error::Backend
pub async fn connect(options: EtcdOptions) -> Result<Session> {
    options.validate()?;
    // The TLS files are read before any I/O: a bad one is InvalidArgument.
    let tls = options.effective_tls();
    let material = tls.as_ref().map(coord_core::TlsOptions::load).transpose()?;
    let client_options = options.client_options(material.as_ref())?;
    let endpoints = options.dial_endpoints(material.is_some());
    let timeout = options.request_timeout();
    // One deadline for the whole connect (the client's own connect, then
    // the lease), within the session timeout less the share of the sniff
    // that explains a failure.
    let (attempts, budget) = sniff_budget(options.session_timeout());
    let limit = timeout.min(attempts);
    let started = Instant::now();
    let deadline = started.checked_add(limit).unwrap_or(started);
    let fail = |e: Option<etcd_client::Error>| {
        let endpoints = &endpoints;
        let material = material.as_ref();
        async move {
            let err = error::map_connect(e, endpoints, material, limit, budget).await;
            named(err, endpoints)
        }
    };
    let redial = (endpoints.clone(), client_options.clone());
    let client = match tokio::time::timeout(
        limit,
        Client::connect(&endpoints, Some(client_options)),
    )
    .await
    {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return Err(fail(Some(e)).await),
        Err(_) => return Err(fail(None).await),
    };
    // Granting twice would leak a lease, so only a request that never left
    // (a member the client cannot connect to) is sent again.
    // A fixed pause (first = cap), jittered.
    const GRANT_RETRY: Backoff =
        Backoff::new(Duration::from_millis(100), Duration::from_millis(100));
    let mut attempt = 0;
    let (grant, sent) = loop {
        let mut lease_client = client.lease_client();
        let left = deadline.saturating_duration_since(Instant::now());
        let sent = tokio::time::Instant::now();
        match tokio::time::timeout(left, lease_client.grant(options.lease_ttl_secs(), None)).await {
            Ok(Ok(g)) => break (g, sent),
            // A TLS handshake refused or a protocol mismatch: trying again
            // cannot help, say what to fix at once.
            Ok(Err(e)) if error::tls_error(&e, material.is_some()).is_some() => {
                return Err(fail(Some(e)).await)
            }
            Ok(Err(e))
                if error::never_sent(&e)
                    && deadline.saturating_duration_since(Instant::now()) > GRANT_RETRY.cap() =>
            {
                tokio::time::sleep(GRANT_RETRY.next(&mut attempt)).await;
            }
            // Unreachable everywhere: say why (refused, no route, …).
            Ok(Err(e)) => return Err(fail(Some(e)).await),
            Err(_) => return Err(fail(None).await),
        }
    };
    // The TTL the server granted (it may raise a short one to its minimum),
    // kept within what coord accepts whatever the server says.
    let granted = u64::try_from(grant.ttl()).unwrap_or(0).max(1);
    let ttl = Duration::from_secs(granted).min(coord_core::limits::MAX_SESSION_TIMEOUT);
    let (state, _) = watch::channel(SessionState::Connected);
    let shared = Arc::new(Shared {
        client,
        keys: KeySpace::new(options.namespace()),
        lease: grant.id(),
        ttl,
        clock: LeaseClock::new(ttl, sent),
        request_timeout: timeout,
        state,
        seen: AtomicI64::new(0),
        closing: AtomicBool::new(false),
        beat_now: tokio::sync::Notify::new(),
        requests: AtomicU64::new(0),
        authenticates: options.user().is_some(),
        auth_epoch: AtomicU64::new(0),
        auth_refresh: tokio::sync::Mutex::new(()),
        redial,
    });
    tracing::debug!(lease = %format!("{:x}", grant.id()), ?ttl, "etcd session opened");
    let keep_alive = tokio::spawn(keep_alive(shared.clone()));
    Ok(Session::new(Arc::new(EtcdSession::new(shared, keep_alive))))
}

/// The session timeout split between the connect's attempts and the
/// sniff that explains their failure (coord-core's `split_budget`; without
/// the `tls` feature there is no sniff).
fn sniff_budget(session_timeout: Duration) -> (Duration, Duration) {
    #[cfg(feature = "tls")]
    return coord_core::backend::sniff::split_budget(session_timeout);
    #[cfg(not(feature = "tls"))]
    return (session_timeout, Duration::ZERO);
}

/// `err`, a connect's error, naming the endpoints tried where it does
/// not already (with the `tls` feature, which brings coord-core's sniff).
fn named(err: coord_core::Error, endpoints: &[String]) -> coord_core::Error {
    #[cfg(feature = "tls")]
    {
        let shown: Vec<&str> = endpoints
            .iter()
            .map(|e| crate::probe::host_port(e))
            .collect();
        coord_core::backend::sniff::naming(err, &shown.join(", "))
    }
    #[cfg(not(feature = "tls"))]
    {
        let _ = endpoints;
        err
    }
}

#[cfg(test)]
mod tests {
    use coord_core::Error;

    use super::*;

    /// Refused before any I/O: the endpoint is never dialled.
    #[tokio::test]
    async fn connect_refuses_bad_durations_without_io() {
        for o in [
            EtcdOptions::new(["http://127.0.0.1:1"]).with_session_timeout(Duration::MAX),
            EtcdOptions::new(["http://127.0.0.1:1"]).with_request_timeout(Duration::MAX),
            EtcdOptions::new(["http://127.0.0.1:1"]).with_session_timeout(Duration::ZERO),
        ] {
            assert!(matches!(connect(o).await, Err(Error::InvalidArgument(_))));
        }
    }
}

//! [`connect`]: open a session.

use std::sync::Arc;
use std::time::Duration;

use coord_core::{Error, Result, Session};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::Value;
use tokio::time::Instant;

use crate::background::{heartbeat, notice_loop};
use crate::core::{millis, Core};
use crate::error::{self, KeyspaceEventsError, BACKEND};
use crate::notices::Hub;
use crate::options::{KeyspaceEvents, RedisOptions};
use crate::scripts;
use crate::session::RedisSession;

/// Open a session on the Redis server `options` names (a URL converts):
/// its own command connection (multiplexed, reconnecting) and its own
/// pub/sub connection, a session key whose TTL is the session timeout, and
/// the heartbeat that keeps it.
///
/// ```no_run
/// # async fn demo() -> coord_core::Result<()> {
/// let session = coord_redis::connect("redis://127.0.0.1:6379").await?;
/// session.ensure_dir("/jobs").await?;
/// session.close().await?;
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] for a bad URL or namespace, a session timeout
/// out of [`crate::MIN_SESSION_TIMEOUT`]..=[`crate::MAX_SESSION_TIMEOUT`] or
/// a zero or absurd request timeout, bad TLS settings or an unreadable
/// TLS file (see [`RedisOptions::tls`]; `server_name` other than the URL's
/// host is refused too) — all before any I/O;
/// [`Error::ConnectionLost`] when the server cannot be reached (without
/// TLS, when it closes the connection at once or does not answer, the
/// message says it may require TLS);
/// [`Error::Unauthenticated`] when it wants a password it did not get, or
/// refuses the user name or password, and when TLS fails on a
/// certificate: the server's not trusted or not valid for the host (the
/// hint names `ca=`), the client's missing or refused (it names `cert=` and
/// `key=`); [`Error::PermissionDenied`] when the
/// ACL user lacks a command, key or channel coord needs;
/// [`Error::Backend`] with a [`KeyspaceEventsError`] when keyspace
/// notifications for expired keys are off and may not be turned on (see
/// [`KeyspaceEvents`]: `CONFIG` is used where allowed, else a notice is
/// observed; it is never required).
///
/// # Cancel safety
/// Cancel safe: dropped before it returns, no session is left behind but
/// (at worst) a session key that expires after the TTL.
pub async fn connect(options: impl Into<RedisOptions>) -> Result<Session> {
    let (session, _core) = open(options.into()).await?;
    Ok(session)
}

pub(crate) async fn open(options: RedisOptions) -> Result<(Session, Arc<Core>)> {
    options.validate()?;
    let client = client(&options)?;
    let db = client.get_connection_info().redis_settings().db();
    let ttl = options.session_timeout;
    let request_timeout = options.effective_request_timeout();
    let config = ConnectionManagerConfig::new()
        .set_number_of_retries(3)
        .set_max_delay(Duration::from_millis(500))
        .set_connection_timeout(Some(request_timeout))
        .set_response_timeout(Some(request_timeout));
    let mut conn = ConnectionManager::new_with_config(client.clone(), config)
        .await
        .map_err(|e| match options.uses_tls() {
            true => error::map(e, None),
            false => error::plain_connect(e, request_timeout),
        })?;
    ensure_keyspace_events(
        &mut conn,
        &client,
        &options.key_prefix(),
        options.keyspace_events,
    )
    .await?;

    let prefix = options.key_prefix();
    let sid = uuid::Uuid::new_v4().simple().to_string();
    let hub = Hub::new(
        client,
        format!("__keyspace@{db}__:{prefix}s:*"),
        format!("{prefix}ended"),
        request_timeout,
    );
    // Listening before the session exists: no notice of its end is missed.
    let stream = hub.connect().await?;
    // The lease counts from the moment the request that creates the key
    // leaves (the server sets the TTL no earlier than that).
    let sent = Instant::now();
    let core = Arc::new(Core::new(sid.clone(), &options, conn, hub, sent));
    let ttl_ms = millis(ttl).to_string();
    match core.maintain(&scripts::OPEN, &ttl_ms).await {
        Ok(Value::Int(1)) => {}
        Ok(other) => return Err(error::unexpected("open", &other)),
        Err(e) => return Err(error::map(e, None)),
    }
    let tasks = vec![
        tokio::spawn(heartbeat(Arc::clone(&core))),
        tokio::spawn(notice_loop(Arc::clone(&core), stream)),
    ];
    // Sessions that died while nobody listened: reap them now.
    core.spawn_sweep();
    tracing::debug!(session = %sid, "redis session open");
    let session = Session::new(Arc::new(RedisSession {
        core: Arc::clone(&core),
        tasks,
    }));
    Ok((session, core))
}

/// The client every connection of a session is opened with (commands,
/// pub/sub, the keyspace probe, the test hooks): plain, or TLS with the
/// files of [`RedisOptions::tls`] read here, before any I/O.
pub(crate) fn client(options: &RedisOptions) -> Result<redis::Client> {
    use redis::{ConnectionAddr, IntoConnectionInfo};

    let info = options
        .url
        .as_str()
        .into_connection_info()
        .map_err(|e| Error::InvalidArgument(format!("redis URL: {e}")))?;
    let (host, port) = match info.addr() {
        ConnectionAddr::TcpTls { insecure: true, .. } => {
            return Err(Error::InvalidArgument(
                "redis URL: `#insecure` (no certificate check) is not supported".into(),
            ))
        }
        ConnectionAddr::TcpTls { host, port, .. } | ConnectionAddr::Tcp(host, port) => {
            (host.clone(), *port)
        }
        ConnectionAddr::Unix(_) if options.uses_tls() => {
            return Err(Error::InvalidArgument(
                "redis: TLS over a unix socket is not supported".into(),
            ))
        }
        ConnectionAddr::Unix(_) => return redis::Client::open(info).map_err(invalid_url),
        _ => {
            return Err(Error::InvalidArgument(
                "redis URL: unsupported kind of address".into(),
            ))
        }
    };
    if !options.uses_tls() {
        return redis::Client::open(info).map_err(invalid_url);
    }
    let tls = options.tls.clone().unwrap_or_default();
    if let Some(name) = &tls.server_name {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if !name.eq_ignore_ascii_case(bare) {
            return Err(Error::InvalidArgument(format!(
                "tls: server_name {name:?} is not supported on Redis (the redis client checks \
                 the server's certificate against the URL's host, {host:?}); connect by a \
                 name or address the certificate carries instead"
            )));
        }
    }
    let material = tls.load()?;
    // rustls needs a process-wide provider; coord uses ring (the only one
    // it compiles in). An application's own choice, made earlier, stands.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let certificates = redis::TlsCertificates {
        client_tls: material.identity.map(|(cert, key)| redis::ClientTlsConfig {
            client_cert: cert.into_bytes(),
            client_key: key.into_bytes(),
        }),
        root_cert: material.ca.map(String::into_bytes),
    };
    let info = info.set_addr(ConnectionAddr::TcpTls {
        host,
        port,
        insecure: false,
        tls_params: None,
    });
    // Its errors name what failed to parse, never the key's contents.
    redis::Client::build_with_tls(info, certificates)
        .map_err(|e| Error::InvalidArgument(format!("tls: {e}")))
}

fn invalid_url(e: redis::RedisError) -> Error {
    Error::InvalidArgument(format!("redis URL: {e}"))
}

fn has_expired_events(flags: &str) -> bool {
    flags.contains('K') && (flags.contains('x') || flags.contains('A'))
}

/// How long [`observe_expired_notice`] waits for the notice.
const PROBE_PATIENCE: Duration = Duration::from_secs(1);

/// Check (and per `mode`, turn on) the server's keyspace notifications for
/// expired keys: at connect, and again whenever the pub/sub link comes
/// back, since a server restarted with its config file forgets a
/// `CONFIG SET`.
///
/// `CONFIG` is a fast path, never a requirement: where it is refused (an
/// ACL user without admin rights, the norm on managed Redis, or `CONFIG`
/// renamed away), the check watches a scratch key of coord's namespace
/// (`<prefix>probe:<uuid>`) expire and waits up to [`PROBE_PATIENCE`] for
/// its keyspace notice. A server that wants a password it did not get
/// fails with [`Error::Unauthenticated`], never with a notifications error.
pub(crate) async fn ensure_keyspace_events(
    conn: &mut ConnectionManager,
    client: &redis::Client,
    prefix: &str,
    mode: KeyspaceEvents,
) -> Result<()> {
    if mode == KeyspaceEvents::Assume {
        return Ok(());
    }
    let current = redis::cmd("CONFIG")
        .arg("GET")
        .arg("notify-keyspace-events")
        .query_async::<Vec<String>>(conn)
        .await;
    let current = match current {
        Ok(pair) => pair.get(1).cloned().unwrap_or_default(),
        Err(e) if error::is_transport(&e) || is_credentials(&e) => return Err(error::map(e, None)),
        Err(e) => {
            // No CONFIG for this user: look for a notice instead.
            if observe_expired_notice(conn, client, prefix).await? {
                tracing::debug!(
                    "CONFIG GET refused; redis keyspace notifications for expired keys observed"
                );
                return Ok(());
            }
            return Err(Error::backend(
                BACKEND,
                KeyspaceEventsError {
                    current: None,
                    wanted: "Kx".into(),
                    reason: Some(format!(
                        "CONFIG GET was refused ({}) and a scratch key's expiry sent no \
                         keyspace notice within {PROBE_PATIENCE:?}",
                        e.detail().unwrap_or("no detail")
                    )),
                },
            ));
        }
    };
    if has_expired_events(&current) {
        return Ok(());
    }
    let mut wanted = current.clone();
    for f in ['K', 'x'] {
        if !wanted.contains(f) {
            wanted.push(f);
        }
    }
    if mode == KeyspaceEvents::Require {
        return Err(Error::backend(
            BACKEND,
            KeyspaceEventsError {
                current: Some(current),
                wanted,
                reason: None,
            },
        ));
    }
    let set = redis::cmd("CONFIG")
        .arg("SET")
        .arg("notify-keyspace-events")
        .arg(&wanted)
        .query_async::<()>(conn)
        .await;
    match set {
        Ok(()) => {
            tracing::info!(%wanted, "enabled redis keyspace notifications (notify-keyspace-events)");
            Ok(())
        }
        Err(e) if error::is_transport(&e) || is_credentials(&e) => Err(error::map(e, None)),
        Err(e) => Err(Error::backend(
            BACKEND,
            KeyspaceEventsError {
                current: Some(current),
                wanted,
                reason: Some(format!(
                    "CONFIG SET failed: {}",
                    e.detail().unwrap_or("no detail")
                )),
            },
        )),
    }
}

/// A missing or refused password (not an ACL refusing `CONFIG`).
fn is_credentials(e: &redis::RedisError) -> bool {
    matches!(error::auth_error(e), Some(Error::Unauthenticated { .. }))
}

/// Whether the server sends the keyspace notice of an expired key: a
/// scratch key of coord's namespace is set with a 1 ms TTL, then read
/// (which expires it at once) until gone, while a pub/sub connection of
/// its own listens on its keyspace channel for `expired`, for at most
/// [`PROBE_PATIENCE`].
async fn observe_expired_notice(
    conn: &mut ConnectionManager,
    client: &redis::Client,
    prefix: &str,
) -> Result<bool> {
    use futures_util::StreamExt;

    let db = client.get_connection_info().redis_settings().db();
    let key = format!("{prefix}probe:{}", uuid::Uuid::new_v4().simple());
    let channel = format!("__keyspace@{db}__:{key}");
    let probe = async {
        let pubsub = client
            .get_async_pubsub()
            .await
            .map_err(|e| error::map(e, None))?;
        let (mut sink, mut stream) = pubsub.split();
        sink.subscribe(&channel)
            .await
            .map_err(|e| error::map(e, None))?;
        redis::cmd("SET")
            .arg(&key)
            .arg(1)
            .arg("PX")
            .arg(1)
            .query_async::<()>(conn)
            .await
            .map_err(|e| error::map(e, None))?;
        let expire = async {
            loop {
                tokio::time::sleep(Duration::from_millis(5)).await;
                let exists = redis::cmd("EXISTS")
                    .arg(&key)
                    .query_async::<i64>(&mut *conn)
                    .await
                    .map_err(|e| error::map(e, None))?;
                if exists == 0 {
                    return Ok::<_, Error>(());
                }
            }
        };
        expire.await?;
        while let Some(msg) = stream.next().await {
            if msg.get_payload_bytes() == b"expired" {
                return Ok(true);
            }
        }
        Ok(false)
    };
    match tokio::time::timeout(PROBE_PATIENCE, probe).await {
        Ok(seen) => seen,
        Err(_) => Ok(false),
    }
}

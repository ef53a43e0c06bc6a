//! [`connect`]: opening a session, and the `redis` client every connection
//! of a session is opened with.

use std::sync::Arc;
use std::time::Duration;

use coord_core::backend::host::{host_of, HostPort};
use coord_core::backend::sniff::{self, Asked, Kind};
use coord_core::{Error, Result, Session};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::Value;
use tokio::time::Instant;

use crate::error;
use crate::keepalive::heartbeat;
use crate::keyspace::ensure_keyspace_events;
use crate::notices::Hub;
use crate::options::RedisOptions;
use crate::scripts;
use crate::session::RedisSession;
use crate::shared::{millis, Shared};
use crate::watch::notice_loop;

/// Open a session on the Redis server `options` names:
/// its own command connection (multiplexed, reconnecting) and its own
/// pub/sub connection, a session key whose TTL is the session timeout, and
/// the heartbeat that keeps it.
///
/// ```no_run
/// # async fn demo() -> coord_core::Result<()> {
/// let options = coord_redis::RedisOptions::new("redis://127.0.0.1:6379");
/// let session = coord_redis::connect(options).await?;
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
/// TLS file (see [`RedisOptions::with_tls`]; `server_name` other than the URL's
/// host is refused too) — all before any I/O;
/// [`Error::ConnectionLost`], within the session timeout, when no
/// connection is made: the message names the address and what listens
/// there (nothing, a TLS-only port for `redis://`, a plaintext Redis for
/// `rediss://`, a server of another kind) with the fix;
/// [`Error::Unauthenticated`] when it wants a password it did not get, or
/// refuses the user name or password, and when TLS fails on a
/// certificate: the server's not trusted or not valid for the host (the
/// hint names `ca=`), the client's missing or refused (it names `cert=` and
/// `key=`); [`Error::PermissionDenied`] when the
/// ACL user lacks a command, key or channel coord needs;
/// [`Error::Backend`] with a [`crate::KeyspaceEventsError`] when keyspace
/// notifications for expired keys are off and may not be turned on (see
/// [`crate::KeyspaceEvents`]: `CONFIG` is used where allowed, else a notice is
/// observed; it is never required).
///
/// # Cancel safety
/// Cancel safe: dropped before it returns, no session is left behind but
/// (at worst) a session key that expires after the TTL.
pub async fn connect(options: RedisOptions) -> Result<Session> {
    let (session, _core) = open(options).await?;
    Ok(session)
}

pub(crate) async fn open(options: RedisOptions) -> Result<(Session, Arc<Shared>)> {
    options.validate()?;
    let client = client(&options)?;
    let db = client.get_connection_info().redis_settings().db();
    let ttl = options.session_timeout;
    let request_timeout = options.request_timeout();
    let config = ConnectionManagerConfig::new()
        .set_number_of_retries(3)
        .set_max_delay(Duration::from_millis(500))
        .set_connection_timeout(Some(request_timeout))
        .set_response_timeout(Some(request_timeout));
    let mut conn = first_connection(&options, &client, config).await?;
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
    let core = Arc::new(Shared::new(sid.clone(), &options, conn, hub, sent));
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

/// What a Redis connect asks of the server, for the sniff's hint.
fn asked(options: &RedisOptions) -> Asked {
    Asked {
        kind: Kind::Redis,
        tls: options.uses_tls(),
        tls_on: "it requires TLS: connect with rediss:// (or ?tls=true; RedisOptions::with_tls)",
        tls_off: "connect with redis:// (no TLS)",
    }
}

/// `host:port` of the server the client connects to; `None` for a unix
/// socket.
fn address(client: &redis::Client) -> Option<String> {
    use redis::ConnectionAddr;
    match client.get_connection_info().addr() {
        ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => Some(
            HostPort {
                host: host_of(host),
                port: Some(*port),
            }
            .with_default_port(*port),
        ),
        _ => None,
    }
}

/// The session's command connection, or why there is none, within the
/// session timeout.
///
/// The client's own attempts (the first and three retries, each within
/// the request timeout) could take four times the request timeout, and a
/// TLS handshake with a plaintext Redis hangs for each of them (Redis
/// waits for the end of a line that the ClientHello never sends). So the
/// attempts get the session timeout less the sniff's share
/// ([`sniff::split_budget`]); and a connection still not made after that
/// share is sniffed meanwhile: a decisive finding (TLS on a plaintext
/// port, or the reverse, a server of another kind) ends the connect at
/// once. When the attempts fail, the sniff says why, naming the address.
async fn first_connection(
    options: &RedisOptions,
    client: &redis::Client,
    config: ConnectionManagerConfig,
) -> Result<ConnectionManager> {
    let (attempts, budget) = sniff::split_budget(options.session_timeout);
    let asked = asked(options);
    let addr = address(client);
    let shown = addr.clone().unwrap_or_else(|| "the unix socket".to_owned());
    let diagnose = || async {
        match &addr {
            Some(addr) => sniff::diagnose(std::slice::from_ref(addr), &asked, budget).await,
            None => None,
        }
    };
    let connecting = tokio::time::timeout(
        attempts,
        ConnectionManager::new_with_config(client.clone(), config),
    );
    tokio::pin!(connecting);
    let early = async {
        tokio::time::sleep(budget).await;
        diagnose().await
    };
    let mut hint = None;
    let outcome = tokio::select! {
        outcome = &mut connecting => outcome,
        found = early => match found {
            Some(h) if h.certain => return Err(Error::ConnectionLost(h.text)),
            found => {
                hint = found;
                connecting.await
            }
        },
    };
    let err = match outcome {
        Ok(Ok(conn)) => return Ok(conn),
        Ok(Err(e)) if !error::is_transport(&e) || error::tls_error(&e).is_some() => {
            return Err(sniff::naming(error::map(e, None), &shown))
        }
        Ok(Err(e)) => e.to_string(),
        Err(_) => format!("no connection within {attempts:?}"),
    };
    let hint = match hint {
        Some(h) => Some(h),
        None => diagnose().await,
    };
    Err(Error::ConnectionLost(match hint {
        Some(h) => format!("{} (redis: {err})", h.text),
        None => format!("Redis at {shown}: {err}"),
    }))
}

/// The client every connection of a session is opened with (commands,
/// pub/sub, the keyspace probe, the test hooks): plain, or TLS with the
/// files of [`RedisOptions::with_tls`] read here, before any I/O.
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
        let bare = coord_core::backend::host::host_of(&host);
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

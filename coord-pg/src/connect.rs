//! Opening a session:
//!
//! 1. Check the options (no I/O) and read the TLS files.
//! 2. Open the command connection; make or upgrade the schema if it is not
//!    this coord's version ([`crate::schema`]).
//! 3. Attach the session's hub to the process's listening connection for
//!    this server and schema ([`crate::listener`]; made, with its
//!    `LISTEN`, when none runs) before the session exists, so no change
//!    made by or for the session is ever missed by its watches.
//! 4. Open the session on the server (`<schema>.open`): the lease starts at
//!    that request's send time; start the heartbeat and the reconnector.

use std::sync::Arc;

use coord_core::backend::lease::LeaseClock;
use coord_core::{Error, Result, Session, SessionId, SessionState};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_postgres::types::Type;

use crate::error::BACKEND;
use crate::link::Link;
use crate::listener::{attach, follow};
use crate::options::PgOptions;
use crate::session::PgSession;
use crate::tls::MakeTls;
use crate::watch::Hub;

/// Open a session on the server `options` names.
///
/// # Errors
/// `InvalidArgument` for options coord refuses ([`PgOptions::validate`]),
/// TLS files that cannot be read, or a schema made by a newer coord;
/// `ConnectionLost` when the server cannot be reached within the request
/// timeout (a TLS handshake that fails says why); `Unauthenticated` for a
/// refused role or password; `PermissionDenied` when the role may not make
/// coord's schema.
///
/// # Cancel safety
/// Cancel safe: a session whose open is dropped is never handed out, and
/// the server ends it after its timeout.
pub async fn connect(options: PgOptions) -> Result<Session> {
    let target = options.target()?;
    let timeout_ms = i32::try_from(target.session_timeout.as_millis())
        .map_err(|_| Error::InvalidArgument("a session timeout over 24 days".into()))?;
    let tls = MakeTls::new(target.tls.as_ref())?;
    let (state_tx, state_rx) = watch::channel(SessionState::Connected);
    let state = Arc::new(state_tx);
    let link = Link::new(target.clone(), tls.clone(), Arc::clone(&state));
    let (id, client) = link.connect().await?;
    crate::schema::ensure(&client, &target.schema).await?;
    let hub = Arc::new(Hub::default());
    let attachment = attach(&target, &tls, &hub).await?;
    let sent = Instant::now();
    let open = format!("select id from {}.open($1)", target.schema);
    let rows = client
        .query_typed(&open, &[(&timeout_ms, Type::INT4)])
        .await
        .map_err(|e| crate::error::map(e, ""))?;
    let sid: i64 = rows
        .first()
        .map(|r| r.get(0))
        .ok_or_else(|| Error::ConnectionLost("postgres: open answered no session".into()))?;
    link.install(id, client);
    let listener = follow(attachment, target.clone(), tls, Arc::clone(&hub), state_rx);
    let lease = Arc::new(LeaseClock::new(target.session_timeout, sent));
    let session = PgSession::start(
        link,
        sid,
        SessionId(format!("{BACKEND}-{sid}")),
        lease,
        hub,
        listener,
    );
    Ok(Session::new(Arc::new(session)))
}

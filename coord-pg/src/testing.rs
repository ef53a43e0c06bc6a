//! Test hooks: end a session on the server now, as its expiry would, so a
//! test need not wait out a session timeout.

use coord_core::{Error, Result, SessionId};
use tokio_postgres::types::Type;

use crate::error::{map, BACKEND};
use crate::link::open;
use crate::options::PgOptions;
use crate::tls::MakeTls;

/// End session `id` on the server now, as its expiry would: its
/// ephemeral nodes go (with their change notices), and its holder learns
/// of it at its next request or heartbeat. Over a connection of its own.
///
/// # Errors
/// `InvalidArgument` for an id that is not a coord-pg session's, or
/// options [`PgOptions::validate`] refuses; `NotFound` when the server
/// has no such session (ended already); `ConnectionLost` and the server's
/// errors.
///
/// # Cancel safety
/// Cancel safe: dropped before its answer, the session may or may not
/// have been ended.
pub async fn expire(options: &PgOptions, id: &SessionId) -> Result<()> {
    let sid: i64 = id
        .0
        .strip_prefix(&format!("{BACKEND}-"))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Error::InvalidArgument(format!("not a postgres session id: {}", id.0)))?;
    let target = options.target()?;
    let tls = MakeTls::new(target.tls.as_ref())?;
    let (client, conn) = open(&target, &tls).await?;
    let sql = format!("select {}.expire($1)", target.schema);
    let params: [crate::link::Param<'_>; 1] = [(&sid, Type::INT8)];
    let request = client.query_typed(&sql, &params);
    let ended = tokio::select! {
        r = request => r.map_err(|e| map(e, ""))?,
        _ = conn => return Err(Error::ConnectionLost("postgres: the connection closed".into())),
    };
    if ended.first().is_some_and(|r| r.get::<_, bool>(0)) {
        Ok(())
    } else {
        Err(Error::NotFound {
            path: format!("session {}", id.0),
        })
    }
}

//! Test hooks: not part of the API; used by this crate's tests and the
//! conformance harness.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use coord_core::{Result, Session, SessionId};

use crate::options::RedisOptions;
use crate::session::end_over_new_connection;
use crate::shared::Shared;

/// End session `id` on the server now, as its key expiring would: delete
/// the key and reap its ephemeral nodes (one script, on a connection of its
/// own). Returns once that is done; the session itself learns of it from
/// the `ended` notice (or its next heartbeat).
///
/// # Errors
/// Connection and server errors.
///
/// # Cancel safety
/// Not cancel safe: the session may or may not have been ended.
pub async fn expire(options: &RedisOptions, id: &SessionId) -> Result<()> {
    let client = crate::connect::client(options)?;
    end_over_new_connection(&client, &options.key_prefix(), "", &id.0).await
}

/// The `redis` client a session with `options` opens its connections with
/// (TLS and credentials included), for tests that talk to the server
/// directly.
///
/// # Errors
/// [`coord_core::Error::InvalidArgument`] for a bad URL or TLS setting, or
/// an unreadable TLS file (no I/O to the server).
pub fn client(options: &RedisOptions) -> Result<redis::Client> {
    crate::connect::client(options)
}

/// Hooks into one session, from [`connect_with_hooks`].
pub struct Hooks {
    core: Arc<Shared>,
}

impl Hooks {
    /// Behave like a crashed process: stop the heartbeat now, and do not
    /// end the session when it is dropped or given up at its lease
    /// deadline. Its key then expires after the TTL, and its ephemeral
    /// nodes are reaped.
    pub fn crash(&self) {
        self.core.crashed.store(true, Ordering::SeqCst);
    }

    /// How many change channels the session's pub/sub connection has
    /// subscribed for waiters right now.
    ///
    /// # Errors
    /// None: it only counts.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn subscribed_channels(&self) -> usize {
        self.core.hub.subscribed_count().await
    }
}

/// [`crate::connect`], plus [`Hooks`] into the session.
///
/// # Errors
/// As [`crate::connect`].
///
/// # Cancel safety
/// As [`crate::connect`].
pub async fn connect_with_hooks(options: RedisOptions) -> Result<(Session, Hooks)> {
    let (session, core) = crate::connect::open(options).await?;
    Ok((session, Hooks { core }))
}

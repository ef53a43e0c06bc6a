//! Hooks for tests: expiring a session from outside. Not part of the API.

use std::time::Duration;

use coord_core::{Error, Result};

use crate::session::{end_over_new_connection, Ended};
use crate::{SessionCredentials, ZkOptions};

/// Make the server end the session `credentials` name, as if it had
/// missed its timeout: a second client, with the same `options`
/// (credentials and TLS), takes the session over (the
/// server drops the first one's connection) and closes it. The first
/// client learns of it when it reconnects and is told the session has
/// expired, as after a real expiry.
///
/// The first client reconnects at once and may take the session back
/// before the close lands; so this repeats until a takeover is refused
/// because the session is gone. Returns once the server has ended it.
///
/// # Errors
/// [`Error::InvalidArgument`] for timeouts out of range or TLS files
/// that cannot be used (as [`crate::connect`]);
/// [`Error::ConnectionLost`] when that does not
/// happen within 60 s.
///
/// # Cancel safety
/// Cancel safe; the session may or may not be ended.
pub async fn expire(options: &ZkOptions, credentials: &SessionCredentials) -> Result<()> {
    options.validate()?;
    // The TLS files are checked first: a bad one is InvalidArgument.
    options.load_tls()?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut last = String::from("never tried");
    // A fixed step (first = cap), jittered.
    let retry =
        coord_core::backend::Backoff::new(Duration::from_millis(50), Duration::from_millis(50));
    let mut attempt = 0;
    // The takeover's handshake gets 0.5 s, then twice as long after each
    // failed try, up to 4 s: a server slowed down by a loaded machine may
    // take longer than that to answer a reattached session.
    let mut connect_within = Duration::from_millis(500);
    while tokio::time::Instant::now() < deadline {
        match end_over_new_connection(options, &credentials.0, connect_within, true).await {
            Ok(Ended::Expired) => return Ok(()),
            // Closed; the first client may have taken it back meanwhile:
            // the next round tells.
            Ok(Ended::Closed) => {}
            Err(e) => {
                // Most likely the first client took the session back
                // mid-handshake, or the server was slow: try again.
                connect_within = (connect_within * 2).min(Duration::from_secs(4));
                last = e;
                retry.sleep(&mut attempt).await;
            }
        }
    }
    Err(Error::ConnectionLost(format!(
        "expire: the session is still alive after 60 s (last error: {last})"
    )))
}

//! Hooks for tests: expiring a session from outside. Not part of the API.

use std::time::Duration;

use coord_core::{Error, Result};
use zookeeper_client as zk;

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
    let tls = options.load_tls()?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut last = String::from("never tried");
    // A fixed step (first = cap), jittered.
    let retry =
        coord_core::backend::Backoff::new(Duration::from_millis(50), Duration::from_millis(50));
    let mut attempt = 0;
    while tokio::time::Instant::now() < deadline {
        let connector = options
            .connector()
            .with_connection_timeout(Duration::from_millis(500))
            .with_session(credentials.0.clone());
        let connected = crate::tls::dial(connector, options.hosts(), tls.as_ref()).await;
        let client = match connected {
            Err(zk::Error::SessionExpired) => return Ok(()),
            Err(e) => {
                // Most likely the first client took the session back
                // mid-handshake: try again.
                last = e.to_string();
                retry.sleep(&mut attempt).await;
                continue;
            }
            Ok(client) => client,
        };
        let mut watcher = client.state_watcher();
        // Dropping the only handle sends CloseSession.
        drop(client);
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            let mut state = watcher.peek_state();
            while !state.is_terminated() {
                state = watcher.changed().await;
            }
        })
        .await;
    }
    Err(Error::ConnectionLost(format!(
        "expire: the session is still alive after 60 s (last error: {last})"
    )))
}

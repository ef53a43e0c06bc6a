//! Sessions opened through one connector and kept, so that whoever opened
//! them can close them all at the end.

use std::sync::Mutex;

use coord::{ConnectError, Connector, Session};

/// The sessions opened through one [`Connector`], each kept until
/// [`Sessions::take_all`] hands them over to be closed.
pub struct Sessions {
    connector: Connector,
    kept: Mutex<Vec<Session>>,
}

impl Sessions {
    /// None yet; sessions will be opened through `connector`.
    pub fn new(connector: Connector) -> Self {
        Sessions {
            connector,
            kept: Mutex::new(Vec::new()),
        }
    }

    /// The connector sessions are opened through.
    pub fn connector(&self) -> &Connector {
        &self.connector
    }

    /// Open a session and keep it.
    pub async fn open(&self) -> Result<Session, ConnectError> {
        let session = self.connector.connect().await?;
        if let Ok(mut all) = self.kept.lock() {
            all.push(session.clone());
        }
        Ok(session)
    }

    /// Every session kept so far, no longer kept: the caller closes them.
    pub fn take_all(&self) -> Vec<Session> {
        self.kept
            .lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default()
    }
}

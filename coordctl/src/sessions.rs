//! Sessions (and supervised clients) opened through one connector and
//! kept, so that whoever opened them can close them all at the end.

use std::sync::Mutex;

use coordination::{Client, ClientOptions, ConnectError, Connector, Session};

/// The sessions and clients opened through one [`Connector`], each kept
/// until [`Sessions::take_all`] (or [`Sessions::take_clients`]) hands them
/// over to be closed.
pub struct Sessions {
    connector: Connector,
    kept: Mutex<Vec<Session>>,
    clients: Mutex<Vec<Client>>,
}

impl Sessions {
    /// None yet; sessions will be opened through `connector`.
    pub fn new(connector: Connector) -> Self {
        Sessions {
            connector,
            kept: Mutex::new(Vec::new()),
            clients: Mutex::new(Vec::new()),
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

    /// Open a supervised client (its first session now) and keep it.
    pub async fn client(&self) -> Result<Client, ConnectError> {
        let client = self.connector.client(ClientOptions::default()).await?;
        if let Ok(mut all) = self.clients.lock() {
            all.push(client.clone());
        }
        Ok(client)
    }

    /// Every client kept so far, no longer kept: the caller closes them.
    pub fn take_clients(&self) -> Vec<Client> {
        self.clients
            .lock()
            .map(|mut c| std::mem::take(&mut *c))
            .unwrap_or_default()
    }

    /// Every session kept so far, no longer kept: the caller closes them.
    pub fn take_all(&self) -> Vec<Session> {
        self.kept
            .lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default()
    }
}

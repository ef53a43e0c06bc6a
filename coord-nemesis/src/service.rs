//! What the long-lived service processes (latch, member, cache, and the
//! tree writer) share: their options, their supervised client, the log of
//! its sessions, and the orchestrator's commands on standard input.
//!
//! A service process opens one [`Client`] for its whole life and runs one
//! recipe on it; the client opens a new session after each one ends, and
//! the recipe comes back on it by itself. The process only logs what it
//! sees, and answers `dump N` lines on stdin (the cache's view, for the
//! end of the run). Its stdin's end tells it to stop.

use std::io::BufRead;
use std::sync::Arc;
use std::time::Duration;

use coord_nemesis::history::{HistoryWriter, Kind};
use coordination::{Client, ClientEvent, ClientOptions, Connector};
use tokio::sync::{mpsc, watch};

use crate::common::{stopped, Paths, ProcessArgs};

/// A running service process: its history, paths, client and commands.
pub struct Service {
    /// Its history.
    pub h: Arc<HistoryWriter>,
    /// The run's paths.
    pub paths: Paths,
    /// Its one client, for its whole life.
    pub client: Client,
    /// How it connects (through this process's proxies).
    pub connector: Connector,
    /// Turns `true` when stdin ends: stop.
    pub stop: watch::Receiver<bool>,
    /// The rounds of `dump N` commands.
    pub dumps: mpsc::UnboundedReceiver<u64>,
    events: tokio::task::JoinHandle<()>,
}

impl Service {
    /// Open the history and the client (retrying until it opens or stdin
    /// ends: `Ok(None)`), and start logging the client's sessions.
    pub async fn open(args: &ProcessArgs) -> Result<Option<Service>, String> {
        let (h, connector, paths) = args.open()?;
        let (mut stop, dumps) = commands();
        let Some(client) = open_client(&connector, &h, "client", &mut stop).await else {
            h.log(h.ev(Kind::Event, "exit"));
            return Ok(None);
        };
        let events = tokio::spawn(log_sessions(client.clone(), h.clone()));
        Ok(Some(Service {
            h,
            paths,
            client,
            connector,
            stop,
            dumps,
            events,
        }))
    }

    /// Close the client (bounded) and log `event exit`.
    pub async fn finish(self) {
        let bound = Duration::from_secs(15);
        let _ = tokio::time::timeout(bound, self.client.close()).await;
        let _ = tokio::time::timeout(Duration::from_secs(1), self.events).await;
        self.h.log(self.h.ev(Kind::Event, "exit"));
    }
}

/// Open a supervised client, logging `invoke` / `ok` / `fail` `what`,
/// retrying until it opens; `None` if `stop` comes first.
pub async fn open_client(
    connector: &Connector,
    h: &HistoryWriter,
    what: &str,
    stop: &mut watch::Receiver<bool>,
) -> Option<Client> {
    loop {
        h.log(h.ev(Kind::Invoke, what));
        let attempt = tokio::time::timeout(
            Duration::from_secs(15),
            connector.client(ClientOptions::default()),
        );
        tokio::select! {
            r = attempt => match r {
                Ok(Ok(c)) => {
                    h.log(h.ev(Kind::Ok, what));
                    return Some(c);
                }
                Ok(Err(e)) => h.log(h.ev(Kind::Fail, what).err(e)),
                Err(_) => h.log(h.ev(Kind::Fail, what).err("timed out after 15 s")),
            },
            () = stopped(stop) => return None,
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Log every session generation of the client: `event client`, the
/// generation in `n`, what happened in `err`.
async fn log_sessions(client: Client, h: Arc<HistoryWriter>) {
    let mut events = client.events();
    while let Some(ev) = events.next().await {
        let (n, what) = match ev {
            ClientEvent::Started { generation, id } => (generation, format!("started {id:?}")),
            ClientEvent::Suspended { generation, .. } => (generation, "suspended".into()),
            ClientEvent::Reconnected { generation, .. } => (generation, "reconnected".into()),
            ClientEvent::Lost {
                generation, reason, ..
            } => (generation, format!("lost: {reason}")),
            ClientEvent::OpenFailed { attempt, error } => (
                client.generation(),
                format!("open failed ({attempt}): {error}"),
            ),
            ClientEvent::Closed => (client.generation(), "closed".into()),
            other => (client.generation(), format!("{other:?}")),
        };
        h.log(h.ev(Kind::Event, "client").n(n).err(what));
    }
}

/// Read stdin's lines on a thread: `dump N` asks for a dump of round N;
/// the end of stdin (the orchestrator closed it, or died) means stop.
fn commands() -> (watch::Receiver<bool>, mpsc::UnboundedReceiver<u64>) {
    let (stop_tx, stop_rx) = watch::channel(false);
    let (dump_tx, dump_rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if let Some(n) = line
                .strip_prefix("dump ")
                .and_then(|n| n.trim().parse().ok())
            {
                let _ = dump_tx.send(n);
            }
        }
        let _ = stop_tx.send(true);
    });
    (stop_rx, dump_rx)
}

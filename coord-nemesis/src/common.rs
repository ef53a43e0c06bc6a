//! What the client processes (worker, producer, consumer) share: how they
//! are told to stop, their sessions, how an error is logged; and the
//! paths of a run, which the services use too.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use coord_nemesis::history::{HistoryWriter, Kind};
use coordination::{Connector, Error, Session};
use tokio::sync::watch;

/// A URL that may hold a password: its `Debug` shows it redacted.
#[derive(Clone)]
pub struct SecretUrl(pub String);

impl std::str::FromStr for SecretUrl {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(SecretUrl(s.to_owned()))
    }
}

impl std::fmt::Debug for SecretUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&coord_core::backend::redact_url(&self.0))
    }
}

/// What every client process the orchestrator starts is told.
#[derive(Debug, clap::Args)]
pub struct ProcessArgs {
    /// The backend URL (the orchestrator points it at this process's
    /// proxies, through the environment: a PostgreSQL URL holds a password,
    /// which a command line would show to every user of the machine).
    #[arg(long, env = "COORD_NEMESIS_URL", hide_env_values = true)]
    pub url: SecretUrl,
    /// The run's root path: everything the processes share lives under it.
    #[arg(long)]
    pub root: String,
    /// This process's name in the history (`w0.1`: slot 0, incarnation 1).
    #[arg(long)]
    pub name: String,
    /// The history file to append to.
    #[arg(long)]
    pub history: PathBuf,
}

impl ProcessArgs {
    /// Its history (opened), connector and paths.
    pub fn open(&self) -> Result<(Arc<HistoryWriter>, Connector, Paths), String> {
        let h = HistoryWriter::open(&self.history, &self.name)
            .map_err(|e| format!("{}: {e}", self.history.display()))?;
        let connector = Connector::new(&self.url.0).map_err(|e| e.to_string())?;
        Ok((Arc::new(h), connector, Paths::new(&self.root)))
    }
}

/// Turned `true` when standard input reaches its end: the orchestrator
/// closes a process's stdin to stop it (and if the orchestrator dies, the
/// pipe closes too, so no client outlives it by more than an iteration).
pub fn stop_on_stdin_eof() -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    std::thread::spawn(move || {
        use std::io::Read;
        let mut buf = [0u8; 64];
        let mut stdin = std::io::stdin();
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let _ = tx.send(true);
    });
    rx
}

/// Resolve once `stop` turns true.
pub async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// A small, seedable generator (splitmix64): the fault schedule is drawn
/// from the seed the orchestrator prints.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// Seeded.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// Seeded from the clock and the pid (for per-process jitter).
    pub fn from_entropy() -> Self {
        Rng(coord_nemesis::history::now() ^ (u64::from(std::process::id()) << 32))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }
}

/// What an error from an operation means for the history: `fail` when the
/// operation certainly did not happen (the fence refused it: lock lost),
/// `info` when it may have; and whether the process has just learnt that
/// its hold is gone (lock lost, session over).
pub fn classify(e: &Error) -> (Kind, bool) {
    match e {
        Error::LockLost { .. } => (Kind::Fail, true),
        e if e.is_session_end() => (Kind::Info, true),
        _ => (Kind::Info, false),
    }
}

/// Open a session, logging `ok session` / `fail session`; `None` (after a
/// short pause) when it cannot be opened now or `stop` came first.
pub async fn open_session(
    connector: &Connector,
    h: &HistoryWriter,
    stop: &mut watch::Receiver<bool>,
) -> Option<Session> {
    h.log(h.ev(Kind::Invoke, "session"));
    let attempt = tokio::time::timeout(Duration::from_secs(15), connector.connect());
    tokio::select! {
        r = attempt => match r {
            Ok(Ok(s)) => {
                h.log(h.ev(Kind::Ok, "session").err(format!("{:?}", s.id())));
                Some(s)
            }
            Ok(Err(e)) => {
                h.log(h.ev(Kind::Fail, "session").err(e));
                tokio::time::sleep(Duration::from_millis(250)).await;
                None
            }
            Err(_) => {
                h.log(h.ev(Kind::Fail, "session").err("connect timed out after 15 s"));
                None
            }
        },
        () = stopped(stop) => None,
    }
}

/// A live session, or `None` once it is over.
pub fn live(session: &Option<Session>) -> Option<Session> {
    session
        .as_ref()
        .filter(|s| !s.state().is_terminal())
        .cloned()
}

/// Close the session (bounded), log `event exit`.
pub async fn finish(session: Option<Session>, h: &HistoryWriter) {
    if let Some(s) = session {
        let bound = s.session_timeout() * 2 + Duration::from_secs(2);
        let _ = tokio::time::timeout(bound, s.close()).await;
    }
    h.log(h.ev(Kind::Event, "exit"));
}

/// The counter node's data: `"<value> <token>"`.
pub fn parse_counter(data: &[u8]) -> Option<(u64, u64)> {
    let s = std::str::from_utf8(data).ok()?;
    let (v, t) = s.trim().split_once(' ')?;
    Some((v.parse().ok()?, t.parse().ok()?))
}

/// The lock, counter and queue of a run, and its services' election,
/// leader key, group and tree, under its root path.
pub struct Paths {
    /// The lock's directory.
    pub lock: String,
    /// The counter node.
    pub counter: String,
    /// The queue's directory.
    pub queue: String,
    /// The latch processes' election.
    pub election: String,
    /// The key leaders write `"<token> <seq>"` to, fenced by their term.
    pub leader: String,
    /// The member processes' group.
    pub group: String,
    /// The subtree the writer mutates and the caches follow.
    pub tree: String,
}

/// How deep the caches follow the tree (and the writer writes): its
/// root's children and grandchildren.
pub const TREE_DEPTH: usize = 2;

impl Paths {
    /// Under `root`.
    pub fn new(root: &str) -> Self {
        let root = root.trim_end_matches('/');
        Paths {
            lock: format!("{root}/lock"),
            counter: format!("{root}/counter"),
            queue: format!("{root}/queue"),
            election: format!("{root}/election"),
            leader: format!("{root}/leader"),
            group: format!("{root}/members"),
            tree: format!("{root}/tree"),
        }
    }
}

//! The task behind a [`PersistentNode`](super::PersistentNode): for each
//! session of the client, make the node and keep it until the session
//! ends, then wait for the next.
//!
//! Per session (a [`Generation`]):
//! 1. **Wait** for the node that must go first: at a fixed ephemeral path,
//!    whatever node is there (the last session's, not yet ended on the
//!    server, or another's); for a sequential node, the last session's.
//! 2. **Make** it with the data as it is now (a TTL node already there is
//!    taken over: written with that data); a lost connection or a server
//!    error is retried after a backoff, an error no retry mends
//!    ([`fatal`]) ends the task as [`Presence::Failed`].
//! 3. **Keep** it: publish [`Presence::Present`], write new data as
//!    [`PersistentNode::set_data`](super::PersistentNode::set_data) asks
//!    (and the data set while it was being made), write a TTL node again
//!    every third of its TTL, until the node is lost: deleted by someone
//!    (publish `Absent`, back to 1 on the same session) or gone with the
//!    session (publish `Absent`, wait for the next session).
//!
//! A close deletes the node (retrying until it is gone or the session is
//! over) and ends the task; a drop of the handle ends it too, the node
//! deleted in the background. Commands are answered at every step: a
//! `set_data` while the node is not there only keeps the data for the
//! next make.

use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot, watch};

use super::mode::PersistentMode;
use super::presence::{again, Presence, Shown};
use crate::backend::node::{Created, Op};
use crate::client::{Client, Generation};
use crate::error::{Error, Result};
use crate::hold::held::HeldNode;
use crate::machinery::pending::PendingNode;
use crate::machinery::retry;
use crate::session::Session;

/// What the handle asks of the task.
pub(super) enum Command {
    /// The data was changed (it is in the shared data already): write it
    /// if the node is there; answer when done.
    SetData(oneshot::Sender<Result<()>>),
    /// Delete the node and end.
    Close,
}

/// Why the task stops keeping the node.
enum Stop {
    /// [`Command::Close`]: delete the node, then end.
    Close,
    /// The handle was dropped: end, the node deleted in the background.
    Dropped,
}

/// How keeping the node on one session ended.
enum Over {
    /// The session ended: wait for the next.
    Session,
    /// Stopped, holding this node if it was there.
    Stop(Stop, Option<HeldNode>),
    /// An error no retry mends.
    Failed(Error),
}

/// How holding one node ended.
enum Lost {
    /// Deleted by someone while the session lives: make it again.
    Deleted,
    /// Gone with its session.
    Session,
    /// Stopped.
    Stop(Stop),
}

/// The task's state.
pub(super) struct Keeper {
    client: Client,
    /// The path as given.
    path: String,
    mode: PersistentMode,
    /// The data to keep, shared with the handle (which changes it).
    data: Arc<Mutex<Vec<u8>>>,
    shown: watch::Sender<Shown>,
    cmds: mpsc::UnboundedReceiver<Command>,
    /// The last node made, while it may still be on the server (an
    /// ephemeral node of a session that has ended here): the next session
    /// waits for it to go.
    last: Option<String>,
}

/// Whether no retry can mend `e`: the server refuses this node, or these
/// credentials, for good.
fn fatal(e: &Error) -> bool {
    matches!(
        e,
        Error::NotSupported { .. }
            | Error::PermissionDenied { .. }
            | Error::Unauthenticated { .. }
            | Error::InvalidPath { .. }
            | Error::InvalidArgument(_)
    )
}

/// Run `fut`, answering the handle meanwhile: a `set_data` is answered at
/// once (the data is kept for the next make, which reads it); a close or a
/// drop ends the wait (`fut` is dropped).
async fn until<T>(
    cmds: &mut mpsc::UnboundedReceiver<Command>,
    fut: impl Future<Output = T>,
) -> std::result::Result<T, Stop> {
    tokio::pin!(fut);
    loop {
        tokio::select! {
            biased;
            cmd = cmds.recv() => match cmd {
                Some(Command::SetData(reply)) => {
                    let _ = reply.send(Ok(()));
                }
                Some(Command::Close) => return Err(Stop::Close),
                None => return Err(Stop::Dropped),
            },
            out = &mut fut => return Ok(out),
        }
    }
}

/// Resolve once there is no node at `path`, retrying through lost
/// connections; the session's end is an error.
async fn gone(session: &Session, path: &str) -> Result<()> {
    let mut attempt = 0;
    loop {
        match session.wait_gone(path).await {
            Ok(()) => return Ok(()),
            Err(e) if e.is_retryable() => retry::pause(session, &mut attempt).await,
            Err(e) => return Err(e),
        }
    }
}

/// Make the node at `path` in `mode` with `data` on `session`. Cancel safe:
/// dropped, no node is left behind.
async fn make(
    session: &Session,
    path: &str,
    mode: PersistentMode,
    data: &[u8],
) -> Result<HeldNode> {
    let (target, create) = mode.target(path);
    let mut pending = PendingNode::spawn(session, target, data.to_vec(), create);
    match pending.created().await {
        Ok(_) => {}
        Err(Error::AlreadyExists { .. }) if !mode.is_ephemeral() => {
            return take_over(session, path, data).await
        }
        Err(e) => return Err(e),
    }
    let created = pending
        .take()
        .ok_or_else(|| Error::backend(session.backend(), "lost track of a persistent node"))?;
    Ok(HeldNode::new(session.clone(), created))
}

/// A TTL node is at `path` already (the last session's, or another
/// keeper's): write `data` into it, if it is a TTL node, and keep it.
/// `AlreadyExists` if it is another session's ephemeral node (wait for it
/// to go); `NotFound` if it went meanwhile (make it again).
async fn take_over(session: &Session, path: &str, data: &[u8]) -> Result<HeldNode> {
    let Some(node) = session.get(path).await? else {
        return Err(Error::NotFound {
            path: path.to_owned(),
        });
    };
    if node.stat.ephemeral {
        return Err(Error::AlreadyExists {
            path: path.to_owned(),
        });
    }
    let stat = session.set(path, data, Some(node.stat.version)).await?;
    let created = Created::new(path.to_owned(), None, stat.stamp, stat.version);
    Ok(HeldNode::new(session.clone(), created))
}

/// Write `data` into the held node, retrying through lost connections.
/// `Ok(false)` when the node is gone (deleted, or with its session): the
/// data is kept for the next make. An ephemeral node is written only while
/// it is ours (a guarded write); a TTL node, which anyone may keep, with a
/// plain set, which is also what restarts its TTL on every backend.
async fn write(held: &HeldNode, data: &[u8], mode: PersistentMode) -> Result<bool> {
    let mut attempt = 0;
    loop {
        let written = if mode.is_ephemeral() {
            let op = Op::Set {
                path: held.path().to_owned(),
                data: data.to_vec(),
                version: None,
            };
            held.write(op).await.map(drop)
        } else {
            held.session().set(held.path(), data, None).await.map(drop)
        };
        match written {
            Ok(()) => return Ok(true),
            Err(Error::LockLost { .. } | Error::NotFound { .. }) => return Ok(false),
            Err(e) if e.is_session_end() => return Ok(false),
            Err(e) if e.is_retryable() => retry::pause(held.session(), &mut attempt).await,
            Err(e) => return Err(e),
        }
    }
}

impl Keeper {
    /// A keeper of the node at `path`; [`Keeper::run`] runs it.
    pub(super) fn new(
        client: Client,
        path: String,
        mode: PersistentMode,
        data: Arc<Mutex<Vec<u8>>>,
        shown: watch::Sender<Shown>,
        cmds: mpsc::UnboundedReceiver<Command>,
    ) -> Self {
        Keeper {
            client,
            path,
            mode,
            data,
            shown,
            cmds,
            last: None,
        }
    }

    /// The data to keep now.
    fn data(&self) -> Vec<u8> {
        self.data.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Publish `presence`, if it is a change.
    fn publish(&self, presence: Presence) {
        self.shown.send_if_modified(|s| {
            let same = matches!(
                (&s.presence, &presence),
                (Presence::Absent, Presence::Absent)
            );
            if !same {
                s.presence = presence;
                s.changes += 1;
            }
            !same
        });
    }

    /// Keep the node on every session of the client until stopped, the
    /// client closed, or an error no retry mends (returned).
    pub(super) async fn run(mut self) -> Result<()> {
        let mut after = 0;
        loop {
            let next = until(&mut self.cmds, self.client.next_session(after)).await;
            let generation = match next {
                Ok(Ok(g)) => g,
                // The client is closed: its session's close took the node
                // (a TTL node is left to its TTL).
                Ok(Err(_)) => {
                    self.publish(Presence::Absent);
                    return Ok(());
                }
                Err(stop) => return self.stop(stop, None).await,
            };
            after = generation.number;
            match self.keep(&generation).await {
                Over::Session => {}
                Over::Stop(stop, held) => return self.stop(stop, held).await,
                Over::Failed(e) => return self.fail(e).await,
            }
        }
    }

    /// Make and keep the node on one session, until it ends.
    async fn keep(&mut self, g: &Generation) -> Over {
        let session = &g.session;
        let mut attempt = 0;
        loop {
            // 1. What must go first.
            let first = match self.mode {
                PersistentMode::Ephemeral => Some(self.path.clone()),
                _ => self.last.clone(),
            };
            if let Some(old) = first {
                match until(&mut self.cmds, gone(session, &old)).await {
                    Err(stop) => return Over::Stop(stop, None),
                    Ok(Ok(())) => self.last = None,
                    Ok(Err(e)) if e.is_session_end() => return Over::Session,
                    Ok(Err(e)) if fatal(&e) => return Over::Failed(e),
                    Ok(Err(e)) => {
                        tracing::debug!(target: crate::telemetry::TARGET, path = %old, error = %e, "waiting for a node to go failed; trying again");
                        if let Err(stop) =
                            until(&mut self.cmds, retry::pause(session, &mut attempt)).await
                        {
                            return Over::Stop(stop, None);
                        }
                        continue;
                    }
                }
            }
            // 2. Make it.
            let data = self.data();
            let made = until(&mut self.cmds, make(session, &self.path, self.mode, &data)).await;
            let held = match made {
                Err(stop) => return Over::Stop(stop, None),
                Ok(Ok(held)) => held,
                Ok(Err(e)) if e.is_session_end() => return Over::Session,
                Ok(Err(e)) if fatal(&e) => return Over::Failed(e),
                Ok(Err(e)) => {
                    match &e {
                        // Someone's node is there (wait for it to go), or
                        // a TTL node went while being taken over.
                        Error::AlreadyExists { path } => self.last = Some(path.clone()),
                        Error::NotFound { .. } => {}
                        _ => {
                            tracing::warn!(target: crate::telemetry::TARGET, path = %self.path, error = %e, "making a persistent node failed; trying again")
                        }
                    }
                    if let Err(stop) =
                        until(&mut self.cmds, retry::pause(session, &mut attempt)).await
                    {
                        return Over::Stop(stop, None);
                    }
                    continue;
                }
            };
            attempt = 0;
            if self.mode.is_ephemeral() {
                self.last = Some(held.path().to_owned());
            }
            self.publish(Presence::Present {
                path: held.path().to_owned(),
                generation: g.number,
            });
            // 3. Keep it.
            let lost = self.hold(&held, data).await;
            match lost {
                Lost::Deleted => {
                    self.publish(Presence::Absent);
                    if self.mode.is_ephemeral() {
                        self.last = None;
                    }
                }
                Lost::Session => {
                    self.publish(Presence::Absent);
                    return Over::Session;
                }
                Lost::Stop(stop) => return Over::Stop(stop, Some(held)),
            }
        }
    }

    /// Keep `held`, made with `written`, until it is lost or the keeper is
    /// stopped.
    async fn hold(&mut self, held: &HeldNode, written: Vec<u8>) -> Lost {
        let lost = held.lost();
        tokio::pin!(lost);
        let touch = self.mode.touch_every();
        let mut next_touch = touch.map(|t| tokio::time::Instant::now() + t);
        // Data set while the node was being made.
        if self.data() != written {
            if let Err(e) = write(held, &self.data(), self.mode).await {
                tracing::warn!(target: crate::telemetry::TARGET, path = %held.path(), error = %e, "writing a persistent node's data failed");
            }
        }
        loop {
            let touched = async {
                match next_touch {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                why = &mut lost => {
                    return if why.is_session_end() { Lost::Session } else { Lost::Deleted };
                }
                cmd = self.cmds.recv() => match cmd {
                    Some(Command::SetData(reply)) => {
                        let _ = reply.send(write(held, &self.data(), self.mode).await.map(drop));
                    }
                    Some(Command::Close) => return Lost::Stop(Stop::Close),
                    None => return Lost::Stop(Stop::Dropped),
                },
                // A TTL node's data, again: a set restarts its TTL.
                () = touched => {
                    next_touch = touch.map(|t| tokio::time::Instant::now() + t);
                    if let Err(e) = write(held, &self.data(), self.mode).await {
                        tracing::warn!(target: crate::telemetry::TARGET, path = %held.path(), error = %e, "writing a TTL node to keep it failed");
                    }
                }
            }
        }
    }

    /// End: delete the node on a close, leave it to the background on a
    /// drop.
    async fn stop(self, stop: Stop, held: Option<HeldNode>) -> Result<()> {
        let r = match (stop, held) {
            (Stop::Close, Some(held)) => held.discard().await,
            // Dropped: deleted in the background (the session's close
            // waits for that).
            (Stop::Dropped, held) => {
                drop(held);
                Ok(())
            }
            (Stop::Close, None) => Ok(()),
        };
        self.publish(Presence::Absent);
        r
    }

    /// End with an error no retry mends: report it, and answer with it
    /// until closed or dropped.
    async fn fail(mut self, e: Error) -> Result<()> {
        tracing::warn!(target: crate::telemetry::TARGET, path = %self.path, error = %e, "a persistent node cannot be kept");
        self.publish(Presence::Failed(Arc::new(again(&e))));
        while let Some(cmd) = self.cmds.recv().await {
            match cmd {
                Command::SetData(reply) => {
                    let _ = reply.send(Err(again(&e)));
                }
                Command::Close => break,
            }
        }
        Err(e)
    }
}

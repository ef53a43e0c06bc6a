//! The handle side both partitioners share: the [`Command`]s a handle
//! sends its task, and [`Handle`], which reads the task's status; each
//! public partitioner wraps one and documents its methods.

use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use super::state::{PartitionState, PartitionWatcher, Status};
use crate::error::{Error, Result};

/// What a handle asks its task.
pub(crate) enum Command {
    /// Release what is owned and split again; answer when done.
    Release(oneshot::Sender<Result<()>>),
    /// Release everything, leave, end.
    Close,
}

/// A partitioner's handle on its task.
#[derive(Debug)]
pub(crate) struct Handle {
    status: watch::Receiver<Status>,
    cmds: mpsc::UnboundedSender<Command>,
    task: Option<JoinHandle<Result<()>>>,
    member: String,
}

impl Handle {
    pub(crate) fn new(
        status: watch::Receiver<Status>,
        cmds: mpsc::UnboundedSender<Command>,
        task: JoinHandle<Result<()>>,
        member: &str,
    ) -> Handle {
        Handle {
            status,
            cmds,
            task: Some(task),
            member: member.to_owned(),
        }
    }

    pub(crate) fn member_id(&self) -> &str {
        &self.member
    }

    pub(crate) fn state(&self) -> PartitionState {
        self.status.borrow().state.clone()
    }

    pub(crate) fn owned(&self) -> Vec<String> {
        self.status.borrow().tokens.keys().cloned().collect()
    }

    pub(crate) fn fencing_token(&self, item: &str) -> Option<u64> {
        self.status.borrow().tokens.get(item).copied()
    }

    pub(crate) fn losses(&self) -> u64 {
        self.status.borrow().losses
    }

    pub(crate) fn status(&self) -> watch::Receiver<Status> {
        self.status.clone()
    }

    pub(crate) fn watch(&self) -> PartitionWatcher {
        PartitionWatcher::new(self.status.clone())
    }

    fn gone(&self) -> Error {
        Error::LockLost {
            path: self.member.clone(),
        }
    }

    /// Wait for `Acquired` (its items) or a final state (`LockLost`).
    pub(crate) async fn wait_acquired(&self) -> Result<Vec<String>> {
        let mut rx = self.status.clone();
        let r = rx
            .wait_for(|s| {
                matches!(
                    s.state,
                    PartitionState::Acquired(_) | PartitionState::Failed | PartitionState::Closed
                )
            })
            .await;
        match r.as_deref().map(|s| &s.state) {
            Ok(PartitionState::Acquired(items)) => Ok(items.clone()),
            _ => Err(self.gone()),
        }
    }

    /// Ask the task to release and wait for its answer (`LockLost` once
    /// the task is over).
    pub(crate) async fn release(&self) -> Result<()> {
        let (tx, rx) = oneshot::channel();
        self.cmds
            .send(Command::Release(tx))
            .map_err(|_| self.gone())?;
        rx.await.map_err(|_| self.gone())?
    }

    /// Ask the task to close and wait for its end.
    pub(crate) async fn close(mut self) -> Result<()> {
        let _ = self.cmds.send(Command::Close);
        match self.task.take() {
            Some(task) => task
                .await
                .unwrap_or_else(|e| Err(Error::backend("coord", e))),
            None => Ok(()),
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // The task sees the close, releases everything and leaves.
        let _ = self.cmds.send(Command::Close);
    }
}

/// After a failure: answer every release with `LockLost` (naming
/// `member`) until the handle closes or is dropped.
pub(crate) async fn refuse_until_closed(cmds: &mut mpsc::UnboundedReceiver<Command>, member: &str) {
    while let Some(cmd) = cmds.recv().await {
        match cmd {
            Command::Release(tx) => {
                let _ = tx.send(Err(Error::LockLost {
                    path: member.to_owned(),
                }));
            }
            Command::Close => break,
        }
    }
}

//! Guarded writes on ZooKeeper: read the fence, then
//! `multi(check(fence, version read), op)`; a put is a guarded create, or
//! on `NodeExists` a guarded set.

use coord_core::path::parent;
use coord_core::{Error, Fence, Op, OpResult, Result};
use zookeeper_client as zk;

use crate::create::{zk_options, zk_version, CreateTarget};
use crate::error::BACKEND;
use crate::error::{is_connection_error, Target};
use crate::handle::{Handle, MAX_PARENT_ROUNDS};
use crate::stat::{stamp_of, stat_of};

/// How often a guarded write re-reads its fence when the fence node's data
/// changed between the read and the multi.
const MAX_FENCE_ROUNDS: usize = 16;

/// How often a guarded put switches between its create and its set when
/// other sessions keep making and deleting the node between its attempts.
const MAX_PUT_ROUNDS: usize = 16;

impl Handle {
    /// ZooKeeper's multi can check a node's data version, not its czxid. So
    /// the fence is read first (`exists`): missing, or a czxid other than
    /// the fence's stamp, is `LockLost`. Then `multi(check(fence, version
    /// read), op)`: the check fails if the fence node was deleted or its
    /// data changed meanwhile (a changed version is read again).
    ///
    /// The one gap: a fence node deleted and re-made at the same path with
    /// the same data version between the read and the multi passes the
    /// check. Lock nodes are sequential, their paths never repeat, so a lock
    /// holder's fence has no such gap.
    pub(crate) async fn guarded(&self, fence: &Fence, op: Op) -> Result<OpResult> {
        match op {
            Op::Put { path, data } => self.guarded_put(fence, path, data).await,
            op => self.guarded_op(fence, op).await,
        }
    }

    /// A guarded put. ZooKeeper has no upsert, and a multi cannot branch
    /// on whether a node exists, so it is a guarded create, and on
    /// `NodeExists` a guarded set; each is one multi behind the fence
    /// check, so whichever lands, lands only while the fence holds. A
    /// node deleted between the two sends it back to the create.
    async fn guarded_put(&self, fence: &Fence, path: String, data: Vec<u8>) -> Result<OpResult> {
        let mut create = true;
        for _ in 0..MAX_PUT_ROUNDS {
            let op = if create {
                Op::create(path.as_str(), &data)
            } else {
                Op::set(path.as_str(), &data)
            };
            match self.guarded_op(fence, op).await {
                Err(Error::AlreadyExists { .. }) if create => create = false,
                Err(Error::NotFound { .. }) if !create => create = true,
                done => return done,
            }
        }
        Err(Error::ConnectionLost(format!(
            "the node {path} kept being made and deleted under a guarded put"
        )))
    }

    /// A guarded create, set or delete.
    async fn guarded_op(&self, fence: &Fence, op: Op) -> Result<OpResult> {
        let target = match &op {
            Op::Create { path, mode, .. } => Some(CreateTarget::new(path, *mode)),
            Op::Set { .. } | Op::Delete { .. } => None,
            // An op added to coord-core after this backend: refused
            // before any I/O.
            _ => {
                return Err(Error::NotSupported {
                    operation: "this guarded write",
                    backend: BACKEND,
                })
            }
        };
        let mut retry = self.retry_clock();
        let mut fence_rounds = 0;
        let mut parent_rounds = 0;
        let mut lost = false;
        loop {
            if lost {
                // Only a sequential create gets here: find what it made.
                if let Some(t) = &target {
                    if let Some(prefix) = &t.findable {
                        if let Some(found) = self.find_created(t.dir(), prefix).await? {
                            return Ok(OpResult::Created(found));
                        }
                    }
                }
            }
            match self.guarded_once(fence, &op, target.as_ref()).await {
                Ok(result) => return Ok(result),
                Err(GuardedFailure::Done(e)) => return Err(e),
                Err(GuardedFailure::FenceMoved) if fence_rounds < MAX_FENCE_ROUNDS => {
                    fence_rounds += 1;
                }
                Err(GuardedFailure::FenceMoved) => {
                    return Err(Error::ConnectionLost(format!(
                        "the fence {} kept changing under a guarded write",
                        fence.path
                    )))
                }
                Err(GuardedFailure::NoParent) if parent_rounds < MAX_PARENT_ROUNDS => {
                    parent_rounds += 1;
                    if let Some(t) = &target {
                        self.make_parents(t.dir()).await?;
                    }
                }
                Err(GuardedFailure::NoParent) => {
                    return Err(Error::NotFound {
                        path: target
                            .map(|t| parent(&t.path).to_owned())
                            .unwrap_or_default(),
                    })
                }
                Err(GuardedFailure::Lost(e)) => {
                    let findable = target.as_ref().is_some_and(|t| t.findable.is_some());
                    if !findable || !self.pause(&mut retry).await {
                        return Err(self.map(e, op_target(&op)));
                    }
                    lost = true;
                }
            }
        }
    }

    /// One attempt at a guarded write: read the fence, then
    /// `multi(check(fence, version read), op)`.
    async fn guarded_once(
        &self,
        fence: &Fence,
        op: &Op,
        target: Option<&CreateTarget>,
    ) -> std::result::Result<OpResult, GuardedFailure> {
        let fence_path = fence.path.as_str();
        // The fence is read once, on a live connection: a guarded write is
        // a write, and fails at once while the session is suspended, like
        // every other write (a retried read would hold it until the
        // connection came back, however long the caller can wait).
        let read = self
            .writer(Target::path(fence_path))
            .map_err(GuardedFailure::Done)?
            .check_stat(fence_path)
            .await;
        let stat = match read {
            Ok(Some(stat)) if stamp_of(&stat) == fence.stamp => stat,
            Ok(_) => return Err(GuardedFailure::Done(lock_lost(fence))),
            Err(e) if is_connection_error(&e) => return Err(GuardedFailure::Lost(e)),
            Err(e) => return Err(GuardedFailure::Done(self.map(e, Target::path(fence_path)))),
        };
        let client = self
            .writer(Target::path(fence_path))
            .map_err(GuardedFailure::Done)?;
        let mut writer = client.new_multi_writer();
        let added = writer
            .add_check_version(fence_path, stat.version)
            .and_then(|()| match (op, target) {
                (Op::Create { data, mode, .. }, Some(target)) => {
                    writer.add_create(&target.path, data, &zk_options(*mode, self.acls))
                }
                (
                    Op::Set {
                        path,
                        data,
                        version,
                    },
                    _,
                ) => writer.add_set_data(
                    path,
                    data,
                    zk_version(path, *version).map_err(|_| zk::Error::BadVersion)?,
                ),
                (Op::Delete { path, version }, _) => writer.add_delete(
                    path,
                    zk_version(path, *version).map_err(|_| zk::Error::BadVersion)?,
                ),
                (Op::Create { .. }, None) => Err(zk::Error::UnexpectedError(
                    "guarded create without a target".into(),
                )),
                // Refused by `guarded` before any I/O.
                _ => Err(zk::Error::UnexpectedError(
                    "a guarded write this backend does not know".into(),
                )),
            });
        let op_target = op_target(op);
        if let Err(e) = added {
            return Err(GuardedFailure::Done(self.map(e, op_target)));
        }
        let mut results = match writer.commit().await {
            Ok(results) => results,
            Err(zk::MultiWriteError::OperationFailed { index: 0, source }) => {
                return Err(match source {
                    // The fence's data changed since the read: read again.
                    zk::Error::BadVersion => GuardedFailure::FenceMoved,
                    zk::Error::NoNode => GuardedFailure::Done(lock_lost(fence)),
                    e => GuardedFailure::Done(self.map(e, Target::path(fence_path))),
                });
            }
            Err(zk::MultiWriteError::OperationFailed { source, .. }) => {
                return Err(match source {
                    zk::Error::NoNode if matches!(op, Op::Create { .. }) => {
                        GuardedFailure::NoParent
                    }
                    e => GuardedFailure::Done(self.map(e, op_target)),
                });
            }
            Err(zk::MultiWriteError::RequestFailed { source }) if is_connection_error(&source) => {
                return Err(GuardedFailure::Lost(source));
            }
            Err(zk::MultiWriteError::RequestFailed { source }) => {
                return Err(GuardedFailure::Done(self.map(source, op_target)));
            }
        };
        let unexpected = |what: &str| {
            GuardedFailure::Done(Error::backend(
                BACKEND,
                zk::Error::UnexpectedError(format!("multi answered {what}")),
            ))
        };
        if results.len() != 2 {
            return Err(unexpected("with the wrong number of results"));
        }
        match (results.pop(), op, target) {
            (Some(zk::MultiWriteResult::Create { path, stat }), Op::Create { .. }, Some(t)) => {
                let (path, sequence) = t.made(Some(&path), None);
                self.complete(path, sequence, stat)
                    .await
                    .map(OpResult::Created)
                    .map_err(GuardedFailure::Done)
            }
            (Some(zk::MultiWriteResult::SetData { stat }), Op::Set { .. }, _) => {
                Ok(OpResult::Set(stat_of(&stat)))
            }
            (Some(zk::MultiWriteResult::Delete), Op::Delete { .. }, _) => Ok(OpResult::Deleted),
            _ => Err(unexpected("a result of another kind")),
        }
    }
}

/// Why one attempt at a guarded write did not finish.
enum GuardedFailure {
    /// The answer: return it.
    Done(Error),
    /// The fence node's data version moved between the read and the multi.
    FenceMoved,
    /// A create's parent is missing.
    NoParent,
    /// The connection dropped: the multi may or may not have happened (or
    /// the fence read got no answer, and no multi was sent).
    Lost(zk::Error),
}

fn lock_lost(fence: &Fence) -> Error {
    Error::LockLost {
        path: fence.path.clone(),
    }
}

fn op_target(op: &Op) -> Target<'_> {
    match op {
        Op::Create { path, .. } => Target::path(path),
        Op::Set { path, version, .. } | Op::Delete { path, version } => {
            Target::versioned(path, *version)
        }
        // Refused by `guarded` before any I/O; named by no path.
        _ => Target::path(""),
    }
}

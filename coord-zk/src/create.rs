//! Creating nodes on ZooKeeper: the create modes and options, and a
//! create that survives a lost answer (a protected sequential name is
//! found again, an ephemeral claimed by its owner).

use std::time::Duration;

use coord_core::path::{name, parent};
use coord_core::{CreateMode, Created, Error, Result};
use zookeeper_client as zk;

use crate::error::BACKEND;
use crate::error::{is_connection_error, Target};
use crate::handle::{Handle, MAX_PARENT_ROUNDS};
use crate::names;
use crate::stat::{created, session_owner};

/// ZooKeeper's mode for `mode`, by what it promises (ephemeral,
/// sequential): so a mode added to coord-core maps by its nature too.
fn zk_mode(mode: CreateMode) -> zk::CreateMode {
    match (mode.is_ephemeral(), mode.is_sequential()) {
        (false, false) => zk::CreateMode::Persistent,
        (false, true) => zk::CreateMode::PersistentSequential,
        (true, false) => zk::CreateMode::Ephemeral,
        (true, true) => zk::CreateMode::EphemeralSequential,
    }
}

/// The create options for `mode`: the session's ACLs, and a TTL mode's TTL
/// rounded up to whole milliseconds (the server counts in milliseconds; the
/// session already checked it is within [`coord_core::MAX_NODE_TTL`], a
/// whole number of milliseconds, so rounding up stays within it).
pub(crate) fn zk_options(mode: CreateMode, acls: zk::Acls<'static>) -> zk::CreateOptions<'static> {
    let options = zk_mode(mode).with_acls(acls);
    match mode.ttl() {
        Some(ttl) => {
            let ms = ttl.as_nanos().div_ceil(1_000_000);
            let ms = u64::try_from(ms).unwrap_or(u64::MAX).max(1);
            options.with_ttl(Duration::from_millis(ms))
        }
        None => options,
    }
}

/// A version coord passes in, as ZooKeeper's `i32`; one that does not fit
/// can never match.
pub(crate) fn zk_version(path: &str, version: Option<u64>) -> Result<Option<i32>> {
    match version {
        None => Ok(None),
        Some(v) => i32::try_from(v)
            .map(Some)
            .map_err(|_| Error::VersionMismatch {
                path: path.to_owned(),
                expected: v,
            }),
    }
}

/// What a create asks the server for, and how to find it after a lost
/// answer.
pub(crate) struct CreateTarget {
    pub(crate) path: String,
    pub(crate) sequential: bool,
    /// Persistent: another session may remove the node (a queue item
    /// taken) before a retry looks for it.
    pub(crate) persistent: bool,
    /// For a sequential create with a protected name (`_c_<uuid>-…`): the
    /// name prefix that finds it again.
    pub(crate) findable: Option<String>,
}

impl CreateTarget {
    pub(crate) fn new(path: &str, mode: CreateMode) -> Self {
        let sequential = mode.is_sequential();
        let findable = (sequential && names::protected_id(name(path)).is_some())
            .then(|| name(path).to_owned());
        CreateTarget {
            path: path.to_owned(),
            sequential,
            persistent: !mode.is_ephemeral(),
            findable,
        }
    }

    pub(crate) fn dir(&self) -> &str {
        parent(&self.path)
    }

    /// The full path and sequence of what the server made, from its answer.
    pub(crate) fn made(
        &self,
        server_path: Option<&str>,
        sequence: Option<zk::CreateSequence>,
    ) -> (String, Option<u64>) {
        if !self.sequential {
            return (self.path.clone(), None);
        }
        let path = match (server_path, sequence) {
            (Some(path), _) => path.to_owned(),
            (None, Some(seq)) => format!("{}{seq}", self.path),
            (None, None) => self.path.clone(),
        };
        let sequence = names::sequence_of(name(&path));
        (path, sequence)
    }
}

/// The error for a sequential create without a protected name whose answer
/// was lost: it cannot be found again, so it is not retried either.
fn unfindable(path: &str, err: &zk::Error) -> Error {
    Error::ConnectionLost(format!(
        "{err}: the answer to the sequential create {path} was lost, and without a \
         protected name (`_c_<uuid>-…`) the node it may have made cannot be found"
    ))
}

impl Handle {
    /// Missing parents are made as CONTAINER nodes. A sequential create
    /// whose name starts `_c_<uuid>-` is, after a lost answer, found again
    /// by that prefix before any retry. The request is sent when the future
    /// is first polled.
    pub(crate) async fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<Created> {
        let target = CreateTarget::new(path, mode);
        let options = zk_options(mode, self.acls);
        let mut retry = self.retry_clock();
        let mut lost = false;
        let mut parent_rounds = 0;
        loop {
            if lost {
                if let Some(prefix) = &target.findable {
                    if let Some(found) = self.find_created(target.dir(), prefix).await? {
                        return Ok(found);
                    }
                    if target.persistent {
                        // Never made, or made and already taken: making it
                        // again could make it twice.
                        return Err(Error::lost_sequential_create(path));
                    }
                }
            }
            let client = if lost || parent_rounds > 0 {
                self.client().map_err(|e| self.map(e, Target::path(path)))?
            } else {
                self.writer(Target::path(path))?
            };
            let result = client.create(&target.path, data, &options).await;
            match result {
                Ok((stat, sequence)) => {
                    let (made, sequence) = target.made(None, Some(sequence));
                    return self.complete(made, sequence, stat).await;
                }
                Err(zk::Error::NoNode) if parent_rounds < MAX_PARENT_ROUNDS => {
                    parent_rounds += 1;
                    self.make_parents(target.dir()).await?;
                }
                Err(zk::Error::NodeExists) if lost && !target.sequential => {
                    return self.claim_existing(&target.path, mode).await;
                }
                Err(e)
                    if is_connection_error(&e)
                        && target.sequential
                        && target.findable.is_none() =>
                {
                    return Err(unfindable(path, &e));
                }
                Err(e) if is_connection_error(&e) && self.pause(&mut retry).await => {
                    tracing::debug!(%path, error = %e, "zk create's answer lost; looking for it");
                    lost = true;
                }
                Err(zk::Error::Unimplemented) if mode.ttl().is_some() => {
                    tracing::debug!(%path, "zk server refused a TTL node: TTL nodes disabled");
                    return Err(Error::NotSupported {
                        operation: "TTL nodes (the ZooKeeper server needs \
                                    -Dzookeeper.extendedTypesEnabled=true)",
                        backend: BACKEND,
                    });
                }
                Err(e) => return Err(self.map(e, Target::path(path))),
            }
        }
    }

    /// A non-sequential create's node exists after an attempt whose answer
    /// was lost: ours if it is an ephemeral of this session.
    async fn claim_existing(&self, path: &str, mode: CreateMode) -> Result<Created> {
        let found = self.read(|c| async move { c.get_data(path).await }).await;
        match found {
            Ok((_, stat))
                if mode.is_ephemeral() && stat.ephemeral_owner == self.raw_session_id() =>
            {
                Ok(created(path.to_owned(), None, &stat))
            }
            Ok((_, stat))
                if !mode.is_ephemeral() && session_owner(stat.ephemeral_owner).is_none() =>
            {
                Err(Error::ConnectionLost(format!(
                    "the answer to creating {path} was lost and a node is there now; \
                     it may be the one this create made"
                )))
            }
            Ok(_) => Err(Error::AlreadyExists {
                path: path.to_owned(),
            }),
            // Gone again: say what the server said last.
            Err(zk::Error::NoNode) => Err(Error::AlreadyExists {
                path: path.to_owned(),
            }),
            Err(e) => Err(self.map(e, Target::path(path))),
        }
    }

    /// A stat the server left out (multi-create on some servers): read it.
    pub(crate) async fn complete(
        &self,
        path: String,
        sequence: Option<u64>,
        stat: zk::Stat,
    ) -> Result<Created> {
        if !stat.is_invalid() {
            return Ok(created(path, sequence, &stat));
        }
        let read = self
            .read(|c| {
                let path = path.as_str();
                async move { c.get_data(path).await }
            })
            .await;
        match read {
            Ok((_, stat)) => Ok(created(path, sequence, &stat)),
            Err(e) => Err(self.map(e, Target::path(&path))),
        }
    }
}

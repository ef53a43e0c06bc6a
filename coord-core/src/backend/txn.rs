//! Transactions: several checks and writes under any number of fences,
//! applied all together or not at all — ZooKeeper's `multi`, etcd's `Txn`,
//! Curator's `transaction()`, kazoo's `client.transaction()`.
//!
//! # The contract
//!
//! A [`Transaction`] is a list of fences and a list of ops, committed with
//! [`Session::commit`](crate::Session::commit). The rules, stated here and
//! enforced by [`Transaction::validate`] before any I/O (refused with
//! `InvalidPath` or `InvalidArgument`, the same on every backend):
//!
//! 1. At least one op (a check counts); fences are optional.
//! 2. Every path is valid and not the root; data is at most
//!    [`MAX_DATA_LEN`](crate::path::MAX_DATA_LEN) a node; a TTL mode's TTL
//!    is in range (as for [`Session::create`](crate::Session::create)).
//! 3. Each path is written (created, set or deleted) by at most one op
//!    (sequential creates may share a prefix: each makes its own node),
//!    and no written path lies under another written path (`/a` and `/a/b`
//!    cannot both be written): every backend can then apply the writes in
//!    any order with the same result.
//! 4. The transaction fits the backend's [`TxnLimits`] (ZooKeeper's request
//!    size, etcd's ops per Txn; see each backend's docs).
//!
//! What a commit promises, on every backend:
//!
//! 1. **All or nothing.** `Ok` means every op was applied, atomically
//!    (no reader sees some of them without the others).
//!    [`Error::TransactionFailed`] means
//!    none was. An answer lost with the connection is
//!    [`Error::OutcomeUnknown`] (all or none
//!    was applied; read before trying again), unless the backend could
//!    check which; errors that come before the request is sent
//!    (`ConnectionLost`, the session's end) applied nothing.
//! 2. **Checks see the state before the transaction.** Every fence and
//!    every check is evaluated against the state before any of the writes,
//!    so a check of a path the transaction also writes sees its old
//!    version. Fences are checked first: when a fence does not hold the
//!    error names that fence ([`TxnStep::Fence`](crate::TxnStep::Fence)),
//!    whatever else would fail too.
//! 3. **Creates make their parents** as [`Session::create`](crate::Session::create)
//!    does. Where they are made outside the commit (ZooKeeper, etcd: made
//!    when the commit finds one missing, then the commit is sent again), a
//!    parent made for a transaction that then fails stays (an empty
//!    directory, as Curator's `creatingParentsIfNeeded` leaves); Redis and
//!    mem make them inside the commit.
//! 4. **Results in op order**: one [`TxnResult`] per op.
//! 5. **Order**: the nodes a transaction creates come after every node
//!    made before it and before every node made after it. Among
//!    themselves their sequences never go down in op order, and siblings
//!    are listed in op order; but one transaction may give them one stamp
//!    (ZooKeeper: one zxid; etcd: one revision) and, on etcd, one sequence.

use super::node::{CreateMode, Created, Fence, Stat};
use crate::error::{Error, Result};
use crate::path;

/// One op of a [`Transaction`]. Build them with the transaction's methods.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TxnOp {
    /// The node at `path` must exist with data version `version`.
    Check {
        /// The node.
        path: String,
        /// Its expected data version.
        version: u64,
    },
    /// Create a node (any mode; for a sequential mode `path` is the prefix).
    Create {
        /// Path, or prefix for a sequential create.
        path: String,
        /// Data.
        data: Vec<u8>,
        /// Mode.
        mode: CreateMode,
    },
    /// Set a node's data; compare-and-set when `version` is given.
    Set {
        /// The node.
        path: String,
        /// Data.
        data: Vec<u8>,
        /// The expected current version, or `None` for any.
        version: Option<u64>,
    },
    /// Delete a node (it must have no children); compare-and-delete when
    /// `version` is given.
    Delete {
        /// The node.
        path: String,
        /// The expected current version, or `None` for any.
        version: Option<u64>,
    },
}

impl TxnOp {
    /// The op's node (for a sequential create, the prefix).
    pub fn path(&self) -> &str {
        match self {
            TxnOp::Check { path, .. }
            | TxnOp::Create { path, .. }
            | TxnOp::Set { path, .. }
            | TxnOp::Delete { path, .. } => path,
        }
    }

    /// Whether the op writes (a create, set or delete; not a check).
    pub fn writes(&self) -> bool {
        !matches!(self, TxnOp::Check { .. })
    }

    /// The bytes the op carries: its path and its data.
    fn size(&self) -> usize {
        self.path().len()
            + match self {
                TxnOp::Create { data, .. } | TxnOp::Set { data, .. } => data.len(),
                TxnOp::Check { .. } | TxnOp::Delete { .. } => 0,
            }
    }
}

/// What one op of a committed transaction did, in op order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TxnResult {
    /// A check held.
    Checked,
    /// What a create made (with its sequence for a sequential mode).
    Created(Created),
    /// The stat after a set.
    Set(Stat),
    /// A delete happened.
    Deleted,
}

/// What one commit may carry on a backend; see
/// [`PrimitiveSession::transaction_limits`](crate::backend::PrimitiveSession::transaction_limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnLimits {
    /// Fences plus ops.
    pub max_steps: usize,
    /// The bytes of every path (fences' included) and every op's data.
    pub max_bytes: usize,
}

impl TxnLimits {
    /// Limits of `max_steps` steps and `max_bytes` bytes.
    pub const fn new(max_steps: usize, max_bytes: usize) -> Self {
        TxnLimits {
            max_steps,
            max_bytes,
        }
    }
}

/// Several checks and writes under any number of fences, applied all
/// together or not at all (see the [module docs](crate::backend::txn) for the rules and
/// the promises). Build it, then commit it with
/// [`Session::commit`](crate::Session::commit), or under a hold with
/// [`Hold::commit`](crate::prelude::Hold::commit).
///
/// ```
/// use coord_core::{CreateMode, Fence, Transaction};
///
/// let fence = Fence { path: "/locks/jobs/_c_x-lock-0000000003".into(), stamp: 42 };
/// let txn = Transaction::new()
///     .guard(&fence)
///     .check("/jobs/config", 7)
///     .delete("/jobs/pending/17")
///     .create("/jobs/running/17", "worker-2")
///     .set("/jobs/epoch", "18")
///     .create_with("/jobs/log/entry-", "moved 17", CreateMode::PersistentSequential);
/// assert_eq!(txn.fences().len(), 1);
/// assert_eq!(txn.ops().len(), 5);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transaction {
    fences: Vec<Fence>,
    ops: Vec<TxnOp>,
}

impl Transaction {
    /// An empty transaction.
    pub fn new() -> Self {
        Self::default()
    }

    /// Apply nothing unless `fence` holds (its node exists with its stamp).
    pub fn guard(mut self, fence: &Fence) -> Self {
        self.fences.push(fence.clone());
        self
    }

    /// Apply nothing unless the node at `path` has data version `version`.
    pub fn check(self, path: impl Into<String>, version: u64) -> Self {
        self.op(TxnOp::Check {
            path: path.into(),
            version,
        })
    }

    /// Create a persistent node.
    pub fn create(self, path: impl Into<String>, data: impl AsRef<[u8]>) -> Self {
        self.create_with(path, data, CreateMode::Persistent)
    }

    /// Create a node in any mode (sequential: `path` is the prefix).
    pub fn create_with(
        self,
        path: impl Into<String>,
        data: impl AsRef<[u8]>,
        mode: CreateMode,
    ) -> Self {
        self.op(TxnOp::Create {
            path: path.into(),
            data: data.as_ref().to_vec(),
            mode,
        })
    }

    /// Set a node's data, whatever its version.
    pub fn set(self, path: impl Into<String>, data: impl AsRef<[u8]>) -> Self {
        self.op(TxnOp::Set {
            path: path.into(),
            data: data.as_ref().to_vec(),
            version: None,
        })
    }

    /// Set a node's data only if its version is still `version`.
    pub fn set_if(self, path: impl Into<String>, data: impl AsRef<[u8]>, version: u64) -> Self {
        self.op(TxnOp::Set {
            path: path.into(),
            data: data.as_ref().to_vec(),
            version: Some(version),
        })
    }

    /// Delete a node, whatever its version.
    pub fn delete(self, path: impl Into<String>) -> Self {
        self.op(TxnOp::Delete {
            path: path.into(),
            version: None,
        })
    }

    /// Delete a node only if its version is still `version`.
    pub fn delete_if(self, path: impl Into<String>, version: u64) -> Self {
        self.op(TxnOp::Delete {
            path: path.into(),
            version: Some(version),
        })
    }

    /// `fence` put before the fences the transaction has (a hold's own).
    pub(crate) fn with_first_fence(mut self, fence: Fence) -> Self {
        self.fences.insert(0, fence);
        self
    }

    /// Add an op built elsewhere.
    pub fn op(mut self, op: TxnOp) -> Self {
        self.ops.push(op);
        self
    }

    /// The fences, in the order added.
    pub fn fences(&self) -> &[Fence] {
        &self.fences
    }

    /// The ops, in the order added.
    pub fn ops(&self) -> &[TxnOp] {
        &self.ops
    }

    /// Check the rules of the [module docs](crate::backend::txn) against `limits`.
    ///
    /// # Errors
    /// `InvalidPath` for a bad path, `InvalidArgument` for anything else
    /// (no op, data too long, a path written twice or under another
    /// written path, a transaction over the limits).
    pub fn validate(&self, limits: &TxnLimits) -> Result<()> {
        if self.ops.is_empty() {
            return Err(Error::InvalidArgument(
                "a transaction needs at least one op".into(),
            ));
        }
        for fence in &self.fences {
            path::validate_non_root(&fence.path)?;
        }
        for op in &self.ops {
            path::validate_non_root(op.path())?;
            if let TxnOp::Create { data, .. } | TxnOp::Set { data, .. } = op {
                path::validate_data(data)?;
            }
            if let TxnOp::Create { mode, .. } = op {
                mode.validate()?;
            }
        }
        // (path, whether it is a sequential create's prefix)
        let mut written: Vec<(&str, bool)> = self
            .ops
            .iter()
            .filter(|op| op.writes())
            .map(|op| {
                let sequential = matches!(op, TxnOp::Create { mode, .. } if mode.is_sequential());
                (op.path(), sequential)
            })
            .collect();
        written.sort_unstable();
        // Sorted, a path under another comes right after it or after
        // siblings under it, so comparing neighbours finds every pair.
        // Sequential creates may share a prefix: each makes its own node.
        for pair in written.windows(2) {
            let ((a, a_seq), (b, b_seq)) = (pair[0], pair[1]);
            if a == b && a_seq && b_seq {
                continue;
            }
            if a == b {
                return Err(Error::InvalidArgument(format!(
                    "a transaction writes {a} twice; write each path once"
                )));
            }
            if is_under(b, a) {
                return Err(Error::InvalidArgument(format!(
                    "a transaction writes both {a} and {b}, which is under it; \
                     write them in two transactions"
                )));
            }
        }
        let steps = self.fences.len() + self.ops.len();
        if steps > limits.max_steps {
            return Err(Error::InvalidArgument(format!(
                "a transaction of {steps} steps (fences and ops) is over this backend's \
                 limit of {}",
                limits.max_steps
            )));
        }
        let bytes: usize = self.fences.iter().map(|f| f.path.len()).sum::<usize>()
            + self.ops.iter().map(TxnOp::size).sum::<usize>();
        if bytes > limits.max_bytes {
            return Err(Error::InvalidArgument(format!(
                "a transaction of {bytes} bytes (paths and data) is over this backend's \
                 limit of {}",
                limits.max_bytes
            )));
        }
        Ok(())
    }
}

/// Whether `path` lies strictly under `dir`.
fn is_under(path: &str, dir: &str) -> bool {
    path.len() > dir.len() && path.starts_with(dir) && path.as_bytes()[dir.len()] == b'/'
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOMY: TxnLimits = TxnLimits::new(100, 1 << 20);

    fn refused(txn: &Transaction, limits: &TxnLimits) -> String {
        match txn.validate(limits) {
            Err(Error::InvalidArgument(m)) => m,
            other => panic!("expected InvalidArgument, got {other:?}"),
        }
    }

    #[test]
    fn a_transaction_needs_an_op() {
        let fence = Fence {
            path: "/l/n".into(),
            stamp: 1,
        };
        assert!(refused(&Transaction::new().guard(&fence), &ROOMY).contains("at least one op"));
        assert!(Transaction::new().check("/a", 0).validate(&ROOMY).is_ok());
    }

    #[test]
    fn paths_and_data_are_checked() {
        assert!(matches!(
            Transaction::new().create("a", "x").validate(&ROOMY),
            Err(Error::InvalidPath { .. })
        ));
        assert!(matches!(
            Transaction::new().delete("/").validate(&ROOMY),
            Err(Error::InvalidPath { .. })
        ));
        let fence = Fence {
            path: "/".into(),
            stamp: 1,
        };
        assert!(matches!(
            Transaction::new()
                .guard(&fence)
                .check("/a", 1)
                .validate(&ROOMY),
            Err(Error::InvalidPath { .. })
        ));
        let ttl = CreateMode::PersistentWithTtl(std::time::Duration::ZERO);
        assert!(matches!(
            Transaction::new()
                .create_with("/a", "", ttl)
                .validate(&ROOMY),
            Err(Error::InvalidArgument(_))
        ));
        let big = vec![0u8; crate::path::MAX_DATA_LEN + 1];
        assert!(matches!(
            Transaction::new().set("/a", big).validate(&ROOMY),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn each_path_is_written_once_and_never_under_another() {
        let twice = Transaction::new().create("/a", "x").set("/a", "y");
        assert!(refused(&twice, &ROOMY).contains("writes /a twice"));
        let nested = Transaction::new()
            .delete("/a/b/c")
            .create("/a/bc", "")
            .delete("/a/b");
        assert!(refused(&nested, &ROOMY).contains("/a/b/c, which is under it"));
        // Sequential creates share a prefix, each making its own node.
        let queue = Transaction::new()
            .create_with("/q/item-", "1", CreateMode::PersistentSequential)
            .create_with("/q/item-", "2", CreateMode::EphemeralSequential);
        assert!(queue.validate(&ROOMY).is_ok());
        let mixed = Transaction::new()
            .create_with("/q/item-", "1", CreateMode::PersistentSequential)
            .set("/q/item-", "2");
        assert!(refused(&mixed, &ROOMY).contains("twice"));
        // Siblings sharing a prefix are not nested; checks may name any path.
        let fine = Transaction::new()
            .create("/a/b", "")
            .create("/a/bc", "")
            .check("/a", 3)
            .check("/a/b", 0)
            .set("/a/b-c", "");
        assert!(fine.validate(&ROOMY).is_ok());
    }

    #[test]
    fn limits_count_steps_and_bytes() {
        let fence = Fence {
            path: "/f".into(),
            stamp: 1,
        };
        let txn = Transaction::new().guard(&fence).create("/ab", "xyz");
        // Two steps; 2 + 3 + 3 = 8 bytes.
        assert!(txn.validate(&TxnLimits::new(2, 8)).is_ok());
        assert!(refused(&txn, &TxnLimits::new(1, 8)).contains("2 steps"));
        assert!(refused(&txn, &TxnLimits::new(2, 7)).contains("8 bytes"));
    }
}

//! What every guard is: a hold on something, through a node its session
//! owns.

use std::future::Future;

use async_trait::async_trait;

use crate::backend::node::{Fence, Op, OpResult};
use crate::backend::txn::{Transaction, TxnResult};
use crate::error::{Error, Result};
use crate::hold::revocation;
use crate::session::Session;

/// A hold: a lock, a read or write half of a read/write lock, a semaphore
/// lease, a leadership, a group membership, a queue delivery. Every guard
/// of the crate implements it, so code that only needs "something I hold"
/// (fencing, guarded writes, noticing loss, giving it up) is written once.
///
/// Each guard also has the same methods inherently, under the name its
/// recipe uses for giving up (`release`, `resign`, `leave`, and a
/// delivery's `release`, which gives the item back); this trait calls that
/// one `release`.
///
/// ```
/// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
/// use coord_core::prelude::*;
/// use coord_core::recipes::{Election, Lock};
///
/// // Either hold will do: report its token, then give it up.
/// async fn report(hold: Box<dyn Hold>) -> coord_core::Result<()> {
///     println!("{} held with token {}", hold.node_path(), hold.fencing_token());
///     hold.release().await
/// }
/// report(Box::new(Lock::new(&session, "/locks/a")?.acquire().await?)).await?;
/// report(Box::new(Election::new(&session, "/elections/a")?.campaign(b"me").await?)).await?;
/// # Ok(()) }
/// ```
#[async_trait]
pub trait Hold: Send + Sync + std::fmt::Debug {
    /// The fencing token: strictly larger for every later holder of the
    /// same thing. Hand it to the resource you protect, and have it refuse
    /// tokens smaller than the largest it has seen.
    fn fencing_token(&self) -> u64;

    /// The fence for guarded writes ([`Session::guarded`]).
    fn fence(&self) -> Fence;

    /// The node the hold lives in.
    fn node_path(&self) -> &str;

    /// The session the hold lives in.
    fn session(&self) -> &Session;

    /// Write `op` only while the hold is still held, as one atomic write
    /// (the guarded write, [`Session::guarded`]): a holder that lost its
    /// hold, however late it notices, cannot write after its successor.
    /// Build `op` with [`Op`]'s constructors; [`Hold::put`] is the common
    /// case.
    ///
    /// # Errors
    /// [`Error::LockLost`] when it is not held (nothing is written);
    /// otherwise the op's own errors (see [`Session::guarded`]).
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may land after the future is dropped.
    async fn write(&self, op: Op) -> Result<OpResult>;

    /// Write `data` at `path` only while the hold is still held, whether
    /// or not a node is there yet: `write(Op::put(path, data))` (see
    /// [`Op::Put`]). Answers [`OpResult::Created`] when it made the node
    /// (persistent, with any missing parents), [`OpResult::Set`] when it
    /// overwrote one. On a `dyn Hold`, call `write(Op::put(..))`.
    ///
    /// ```
    /// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
    /// use coord_core::prelude::*;
    /// use coord_core::recipes::Lock;
    ///
    /// let guard = Lock::new(&session, "/locks/report")?.acquire().await?;
    /// // Lands only if this guard still holds the lock at the moment of the write.
    /// guard.put("/reports/latest", "written under the lock").await?;
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// `InvalidPath` or `InvalidArgument` (data over the size limit)
    /// before any I/O; [`Error::LockLost`] when the hold is not held
    /// (nothing is written); the backend's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may land after the future is dropped.
    async fn put(&self, path: &str, data: impl AsRef<[u8]> + Send) -> Result<OpResult>
    where
        Self: Sized,
    {
        self.write(Op::put(path, data)).await
    }

    /// Commit `txn` only while the hold is still held: the hold's fence is
    /// added as the transaction's first fence ([`TxnStep::Fence(0)`](crate::TxnStep::Fence)),
    /// before any the transaction has, and everything is one atomic step
    /// (see [`Session::commit`]).
    ///
    /// ```
    /// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
    /// use coord_core::prelude::*;
    /// use coord_core::recipes::Lock;
    /// use coord_core::Transaction;
    ///
    /// session.create("/jobs/pending/17", b"job", coord_core::CreateMode::Persistent).await?;
    /// let guard = Lock::new(&session, "/locks/jobs")?.acquire().await?;
    /// // Moves the job only if this guard still holds the lock.
    /// let move_job = Transaction::new()
    ///     .delete("/jobs/pending/17")
    ///     .create("/jobs/running/17", "worker-2");
    /// guard.commit(move_job).await?;
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Session::commit`]; the hold lost is
    /// [`Error::TransactionFailed`] at `TxnStep::Fence(0)` with
    /// [`TxnFailure::FenceLost`](crate::TxnFailure::FenceLost) (nothing
    /// is applied).
    ///
    /// # Cancel safety
    /// Not cancel safe: the transaction may land after the drop.
    async fn commit(&self, txn: Transaction) -> Result<Vec<TxnResult>> {
        self.session()
            .commit(txn.with_first_fence(self.fence()))
            .await
    }

    /// Resolve when the hold is lost, with one reason for each way a hold
    /// ends, the same whether this was already awaited when it ended or is
    /// awaited afterwards, on every backend and for every guard:
    ///
    /// | the hold ended because                                   | `lost()` gives |
    /// |----------------------------------------------------------|----------------|
    /// | the server ended the session (it missed its timeout, or was ended there) | [`Error::SessionExpired`] |
    /// | its owner closed the session ([`Session::close`])        | [`Error::SessionClosed`] |
    /// | the session's lease deadline passed: the client gave it up before the server could (see [`crate::backend::lease`]) | [`Error::SessionExpired`] |
    /// | another session deleted the hold's node, this one living on | [`Error::LockLost`], with the node's path |
    ///
    /// A session's end takes its nodes with it, and the deletion may reach
    /// this session before the news of the end does. So when the node is
    /// found gone, the reason comes from whether the session still lives:
    /// its state if it is over here already, else one round trip to the
    /// server. `lost()` then resolves at most one round trip after the
    /// deletion is seen (through a lost connection, once the server
    /// answers or, at the latest, when the lease deadline passes). A
    /// suspended connection is not a loss: the session may come back.
    ///
    /// # Errors
    /// None: it resolves *to* the reason the hold was lost.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    async fn lost(&self) -> Error;

    /// Give the hold up.
    ///
    /// # Errors
    /// [`Error::LockLost`] when it had already been lost; the session's
    /// end; backend errors (the node is then still deleted in the
    /// background).
    ///
    /// # Cancel safety
    /// Cancel safe in effect: dropped, the release finishes in the
    /// background.
    async fn release(self: Box<Self>) -> Result<()>;
}

/// What a body run under a hold gets ([`while_held`], and the scoped
/// helpers built on it): the hold's token and fence, and its session for
/// guarded writes.
#[derive(Debug, Clone)]
pub struct HoldContext {
    fencing_token: u64,
    fence: Fence,
    session: Session,
}

impl HoldContext {
    /// The hold's fencing token (see [`Hold::fencing_token`]).
    pub fn fencing_token(&self) -> u64 {
        self.fencing_token
    }

    /// The hold's fence (see [`Hold::fence`]).
    pub fn fence(&self) -> &Fence {
        &self.fence
    }

    /// Write `op` only while the hold is still held, atomically.
    ///
    /// # Errors
    /// [`Error::LockLost`] when it is not; otherwise the op's own.
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may land after the future is dropped.
    pub async fn write(&self, op: Op) -> Result<OpResult> {
        self.session.guarded(&self.fence, op).await
    }

    /// Write `data` at `path` only while the hold is still held, whether
    /// or not a node is there yet (see [`Hold::put`]).
    ///
    /// # Errors
    /// As [`Hold::put`].
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may land after the future is dropped.
    pub async fn put(&self, path: &str, data: impl AsRef<[u8]>) -> Result<OpResult> {
        self.write(Op::put(path, data)).await
    }

    /// Commit `txn` only while the hold is still held (see
    /// [`Hold::commit`]: the hold's fence is the first fence).
    ///
    /// # Errors
    /// As [`Hold::commit`].
    ///
    /// # Cancel safety
    /// Not cancel safe: the transaction may land after the drop.
    pub async fn commit(&self, txn: Transaction) -> Result<Vec<TxnResult>> {
        self.session
            .commit(txn.with_first_fence(self.fence.clone()))
            .await
    }

    /// Resolve when a contender asks the holder to release (see
    /// [`LockGuard::revocation_requested`](crate::recipes::LockGuard::revocation_requested)):
    /// the body decides whether to finish early.
    ///
    /// # Errors
    /// The reason the hold was lost, if it is lost first.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn revocation_requested(&self) -> Result<()> {
        revocation::requested_at(&self.session, &self.fence.path).await
    }
}

/// Run `body` while `hold` is held, then give the hold up: the shape of
/// kazoo's `with lock:`, with loss handled.
///
/// If the hold is lost while `body` runs, `body` is **dropped** at its
/// current await point (what it does stops being protected, so it stops)
/// and the reason is returned. Anything `body` must undo on the way out
/// belongs in a drop guard, or in the caller after this returns.
///
/// # Errors
/// The reason the hold was lost, if it was lost while `body` ran, or if
/// the release found it already lost ([`Error::LockLost`], the session's
/// end): `body` finished, but not wholly under the hold. Other release
/// errors are logged and not returned: `body`'s result stands and the node
/// is deleted in the background.
///
/// # Cancel safety
/// Cancel safe in effect: dropped, `body` is dropped and the hold is
/// released in the background.
pub async fn while_held<H, F, Fut, T>(hold: H, body: F) -> Result<T>
where
    H: Hold + 'static,
    F: FnOnce(HoldContext) -> Fut + Send,
    Fut: Future<Output = T> + Send,
    T: Send,
{
    let ctx = HoldContext {
        fencing_token: hold.fencing_token(),
        fence: hold.fence(),
        session: hold.session().clone(),
    };
    let out = tokio::select! {
        biased;
        why = hold.lost() => Err(why),
        t = body(ctx) => Ok(t),
    };
    let hold: Box<dyn Hold> = Box::new(hold);
    match out {
        Err(why) => {
            // Deleting a lost node is harmless (NotFound), and through a
            // session that lives on it frees the lock at once.
            let _ = hold.release().await;
            Err(why)
        }
        Ok(t) => match hold.release().await {
            Ok(()) => Ok(t),
            Err(e) if matches!(e, Error::LockLost { .. }) || e.is_session_end() => Err(e),
            Err(e) => {
                tracing::warn!(target: crate::telemetry::TARGET, error = %e, "release after a scoped hold failed; the node is deleted in the background");
                Ok(t)
            }
        },
    }
}

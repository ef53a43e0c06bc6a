//! A create that leaves nothing behind when its caller gives up.
//!
//! The create is polled once where it is started, which sends the request
//! (a backend that answers at once, like mem, is done there). The caller
//! then awaits the answer in its own task; if it gives up first, the
//! create goes on in a task of its own and finishes even so. If the caller
//! never took the node, it is deleted in the background. That makes every
//! acquire cancel-safe without knowing how far a backend got with the
//! request.

use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc;
use std::task::{Context, Poll};

use crate::backend::node::{CreateMode, Created, Fence, Op, SessionState};
use crate::backend::order::{Blockers, Place};
use crate::error::{Error, Result};
use crate::machinery::{in_drop, retry};
use crate::session::Session;

/// A create on its way, with the place a contender's create read (see
/// [`PendingNode::spawn_contender`]): polled by whoever awaits it.
type Creating = Pin<Box<dyn Future<Output = Result<(Created, Option<Place>)>> + Send>>;

enum State {
    Creating(Creating),
    Created(Created),
    /// Refused at once (on the first poll).
    Failed(Error),
    Taken,
}

/// How long a withdrawn attempt waits for its node's delete before leaving
/// it to the background (where it is retried until done).
const REMOVE_PATIENCE: std::time::Duration = std::time::Duration::from_millis(500);

/// A node being created on behalf of a recipe; see the module docs.
pub(crate) struct PendingNode {
    session: Session,
    state: State,
    /// The node's place when it was created, where the create read it.
    place: Option<Place>,
}

impl PendingNode {
    /// Start creating `path`: the create is polled once here, so its
    /// request is issued when this returns (a request made after it
    /// follows it on a FIFO connection: ZooKeeper). The answer is awaited
    /// by [`PendingNode::created`], in the caller's task: no task spawned,
    /// and no wake-up from one task to another on the way back. A backend
    /// that answers on the first poll (mem) costs no scheduler turn at all.
    pub(crate) fn spawn(session: &Session, path: String, data: Vec<u8>, mode: CreateMode) -> Self {
        let s = session.clone();
        Self::start(
            session,
            Box::pin(async move { Ok((s.create(&path, &data, mode).await?, None)) }),
        )
    }

    /// [`PendingNode::spawn`] for a contender's ephemeral-sequential node,
    /// through [`Session::create_contender`]: where the backend reads it
    /// with the create, the node's place at its create is kept for
    /// [`PendingNode::take_place`].
    pub(crate) fn spawn_contender(
        session: &Session,
        path: String,
        data: Vec<u8>,
        blockers: Blockers<'static>,
    ) -> Self {
        let s = session.clone();
        Self::start(
            session,
            Box::pin(async move { s.create_contender(&path, &data, blockers).await }),
        )
    }

    fn start(session: &Session, create: Creating) -> Self {
        // Unconstrained by tokio's cooperative budget: a caller whose task
        // has spent its budget would otherwise get `Pending` from the
        // first poll before the request left (`tokio::select!` checks the
        // budget first), and the request would go out after later ones.
        let mut create: Creating = Box::pin(tokio::task::unconstrained(create));
        // The first poll's waker is never woken for: a create still pending
        // is polled again, with a real waker, by `created` or by the task
        // `Drop` leaves it to.
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut place = None;
        let state = match create.as_mut().poll(&mut cx) {
            Poll::Ready(Ok((c, p))) => {
                place = p;
                State::Created(c)
            }
            Poll::Ready(Err(e)) => State::Failed(e),
            Poll::Pending => State::Creating(create),
        };
        PendingNode {
            session: session.clone(),
            state,
            place,
        }
    }

    /// The created node, once the backend has answered. Cancel safe: the
    /// create stays here, and goes on where this was left.
    pub(crate) async fn created(&mut self) -> Result<&Created> {
        match std::mem::replace(&mut self.state, State::Taken) {
            State::Failed(e) => return Err(e),
            other => self.state = other,
        }
        if let State::Creating(create) = &mut self.state {
            match create.as_mut().await {
                Ok((c, p)) => {
                    self.state = State::Created(c);
                    self.place = p;
                }
                Err(e) => {
                    self.state = State::Taken;
                    return Err(e);
                }
            }
        }
        match &self.state {
            State::Created(c) => Ok(c),
            _ => Err(Error::InvalidArgument(
                "the pending node was already taken".into(),
            )),
        }
    }

    /// The node's place in its directory's queue when it was created, if
    /// the create read it ([`Session::create_contender`]); asked once, after
    /// [`PendingNode::created`].
    pub(crate) fn take_place(&mut self) -> Option<Place> {
        self.place.take()
    }

    /// Keep the node: it is the caller's now.
    pub(crate) fn take(mut self) -> Option<Created> {
        match std::mem::replace(&mut self.state, State::Taken) {
            State::Created(c) => Some(c),
            _ => None,
        }
    }

    /// Delete the node now (waiting for the create first if needed); if
    /// that fails, keep trying in the background.
    pub(crate) async fn remove(mut self) {
        let node = match self.created().await {
            Ok(c) => c.clone(),
            Err(_) => return,
        };
        // Dropped during the delete: state is still `Created`, and `Drop`
        // deletes in the background. A delete that fails or does not answer
        // promptly (a partition) goes on in the background, retried until
        // done: the caller's timeout is not held hostage by the network.
        let quick =
            tokio::time::timeout(REMOVE_PATIENCE, delete_own_if_present(&self.session, &node))
                .await;
        if !matches!(quick, Ok(Ok(()))) {
            delete_in_background(self.session.for_work(), node);
        }
        self.state = State::Taken;
    }
}

/// Delete `path` once; a node already gone is fine, and so is the
/// session's end (the node is ephemeral: it went with the session).
pub(crate) async fn delete_if_present(session: &Session, path: &str) -> Result<()> {
    match session.delete(path, None).await {
        Ok(()) | Err(Error::NotFound { .. }) => Ok(()),
        Err(e) if e.is_session_end() => Ok(()), // ephemeral: gone with the session
        Err(e) => Err(e),
    }
}

/// Delete `node`, a node this session made, once — but only while it is
/// still that node. A name made unique by a sequence (and the protected
/// prefix's uuid) is never reused, so a plain delete is safe; a fixed name
/// (the simple lock's `lock`, a named group member) may by now belong to
/// someone else — our node lost, theirs made in its place — so the delete
/// is guarded by the node's stamp. `NotFound` when our node is gone.
pub(crate) async fn delete_own(session: &Session, node: &Created) -> Result<()> {
    if node.sequence.is_some() {
        return session.delete(&node.path, None).await;
    }
    let fence = Fence {
        path: node.path.clone(),
        stamp: node.stamp,
    };
    let op = Op::Delete {
        path: node.path.clone(),
        version: None,
    };
    match session.guarded(&fence, op).await {
        Ok(_) => Ok(()),
        Err(Error::LockLost { .. }) => Err(Error::NotFound {
            path: node.path.clone(),
        }),
        Err(e) => Err(e),
    }
}

/// [`delete_own`], where gone or the session's end is done.
async fn delete_own_if_present(session: &Session, node: &Created) -> Result<()> {
    match delete_own(session, node).await {
        Ok(()) | Err(Error::NotFound { .. }) => Ok(()),
        Err(e) if e.is_session_end() => Ok(()), // ephemeral: gone with the session
        Err(e) => Err(e),
    }
}

/// Delete the ephemeral `node` (only while it is ours, see [`delete_own`])
/// until it is gone, retrying through connection losses until that is done
/// or the session is over (then the node went with it): Curator's
/// "guaranteed" delete. A node that must go cannot be left to the session's
/// end while the session lives on.
///
/// # Errors
/// Only what retrying cannot mend (a backend error, `NotEmpty`).
pub(crate) async fn delete_until_gone(session: &Session, node: &Created) -> Result<()> {
    let mut attempt = 0;
    loop {
        match delete_own_if_present(session, node).await {
            Err(e) if e.is_retryable() => {
                tracing::debug!(target: crate::telemetry::TARGET, path = %node.path, error = %e, "delete failed; retrying once the connection is back");
                retry::pause(session, &mut attempt).await;
            }
            done => return done,
        }
    }
}

/// Delete the ephemeral `node` in the background, retrying until it is gone
/// or the session is over (see [`delete_until_gone`]). [`Session::close`]
/// waits for it.
///
/// The delete is polled once here, as [`PendingNode::spawn`] polls its
/// create: its request leaves before this returns, so the session's next
/// request (the next acquire's create, say) goes after it and, on
/// ZooKeeper's in-order connection, is answered after it; its listing does
/// not find the old node still there. That is how zookeeper-client's lock
/// guard releases on drop. A delete answered at once needs no task.
pub(crate) fn delete_in_background(session: Session, node: Created) {
    delete_in_background_then(session, node, || {});
}

/// [`delete_in_background`], for a drop: waits, bounded, for the delete's
/// answer where the thread may block ([`in_drop::wait`]), while the
/// session is connected (else the request could not leave anyway), so
/// that a process that ends right after the drop has still deleted the
/// node.
pub(crate) fn delete_in_drop_then(
    session: &Session,
    node: Created,
    deleted: impl FnOnce() + Send + 'static,
) {
    if let Some(done) = delete_in_background_then(session.for_work(), node, deleted) {
        if session.state() == SessionState::Connected {
            in_drop::wait(&done, in_drop::DELETE_BUDGET);
        }
    }
}

/// [`delete_in_background`], running `deleted` once the node is gone. When
/// the delete was not done at once, a receiver told when it is (or its
/// sender dropped when the work is dropped unfinished).
pub(crate) fn delete_in_background_then(
    session: Session,
    node: Created,
    deleted: impl FnOnce() + Send + 'static,
) -> Option<mpsc::Receiver<()>> {
    let s = session.clone();
    // Unconstrained by tokio's cooperative budget, so the first poll
    // sends the delete even from a task that has spent its budget (see
    // [`PendingNode::spawn`]).
    let mut work = Box::pin(tokio::task::unconstrained(async move {
        match delete_until_gone(&s, &node).await {
            Ok(()) => deleted(),
            Err(e) => {
                tracing::warn!(target: crate::telemetry::TARGET, path = %node.path, error = %e, "could not delete a node this session no longer needs");
            }
        }
    }));
    // The first poll's waker is never woken for: a delete still pending
    // is polled again by its task, with the task's waker, at once.
    let mut cx = Context::from_waker(std::task::Waker::noop());
    if work.as_mut().poll(&mut cx).is_pending() {
        let (tx, rx) = mpsc::sync_channel(1);
        session.spawn_work(async move {
            work.await;
            let _ = tx.send(());
        });
        return Some(rx);
    }
    None
}

impl Drop for PendingNode {
    fn drop(&mut self) {
        match std::mem::replace(&mut self.state, State::Taken) {
            State::Taken | State::Failed(_) => {}
            State::Created(c) => delete_in_drop_then(&self.session, c, || {}),
            State::Creating(create) => {
                // Given up before the answer: the create finishes in a task,
                // and what it made is deleted.
                let session = self.session.for_work();
                self.session.spawn_work(async move {
                    if let Ok((c, _)) = create.await {
                        if let Err(e) = delete_until_gone(&session, &c).await {
                            tracing::warn!(target: crate::telemetry::TARGET, path = %c.path, error = %e, "could not delete the node of a withdrawn create");
                        }
                    }
                });
            }
        }
    }
}

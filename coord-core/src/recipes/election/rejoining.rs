//! [`RejoiningLatch`]: a leader latch on a [`Client`] that campaigns again
//! on each new session (Curator's `LeaderLatch` after a reconnect, without
//! its double leaders).
//!
//! The latch's task, for each session of the client:
//! 1. **Join**: wait for the client's next live session and start a
//!    [`LeaderLatch`](crate::recipes::LeaderLatch) on it, offering the same id.
//! 2. **Follow** that latch, publishing its `IsLeader { token }` /
//!    `NotLeader`, until it ends (its session ended, or its offer was
//!    deleted) or this latch is closed.
//! 3. **End the term**: publish `NotLeader` *before* anything else happens,
//!    then go back to 1 (on the same session, after a backoff, when only
//!    the offer was lost).
//!
//! So a term always ends, here, before the next can begin: the client
//! opens the next session only once the last one's state is final, and the
//! last one's latch stops leading no later than that (its session's lease
//! deadline). Each new term's token is its new offer's stamp: larger than
//! every earlier one of the election.

use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::backend::backoff::Backoff;
use crate::backend::node::Fence;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::machinery::stream::ChangeWait;
use crate::path;
use crate::recipes::election::campaign::ElectionLayout;
use crate::recipes::election::latch::{event_of, is_over, LatchEvent};
use crate::recipes::election::leader::Election;

/// What a [`RejoiningLatch`] is now.
#[derive(Debug, Clone, Default)]
struct Status {
    /// The term now, while leading.
    term: Option<Term>,
    /// The offer node on the live session, once made.
    node: Option<String>,
    /// How many terms have ended so far.
    ended_terms: u64,
    /// The client's generation the latch campaigns on now (0: none yet).
    generation: u64,
    /// The latch is closed (or its client is): it will not lead again.
    over: bool,
}

/// One leadership term.
#[derive(Debug, Clone)]
struct Term {
    token: u64,
    fence: Option<Fence>,
}

/// A leader latch that outlives its sessions: on every session of its
/// [`Client`] it joins the election at `path` offering the same id, and
/// leads whenever that offer is the lowest live one.
///
/// What comes back, and what does not:
/// - **Re-established** on each new session: the candidacy (a new offer
///   node, same id, same [`ElectionLayout`]).
/// - **Never carried over**: leadership. A term held on a session that
///   ended is over; it is reported ([`LatchEvent::NotLeader`]) before the
///   latch can lead on the next session, and a new term has a new fencing
///   token, larger than the old one's. Guard the leader's writes with
///   [`RejoiningLatch::fence`] so a term that a paused process still
///   believes in cannot write.
///
/// [`RejoiningLatch::watch`] follows every term: each `IsLeader { token }`
/// is followed by its `NotLeader` before the next term's `IsLeader`, even
/// for a watcher that looks late. The stream ends only once the latch (or
/// its client) is closed.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> coord_core::Result<()> {
/// use coord_core::recipes::{LatchEvent, RejoiningLatch};
/// let store = coord_mem::MemStore::new();
/// let client = store.client(std::time::Duration::from_secs(5), Default::default());
/// let latch = RejoiningLatch::start(&client, "/latches/scheduler", b"host-a")?;
/// let first = latch.await_leadership().await?;
/// store.expire(&client.session().await?.id()); // the session ends
/// let mut terms = latch.watch();
/// let next = loop {
///     if let Some(LatchEvent::IsLeader { token }) = terms.next().await {
///         if token != first { break token; }
///     }
/// };
/// assert!(next > first);
/// latch.close().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping the latch withdraws it from the election"]
#[derive(Debug)]
pub struct RejoiningLatch {
    status: watch::Receiver<Status>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<()>>>,
    id: Vec<u8>,
}

impl RejoiningLatch {
    /// Start a latch in the election at `path` offering `id` on every
    /// session of `client`, with the default [`ElectionLayout`].
    ///
    /// # Errors
    /// Before any I/O: [`Error::InvalidPath`] for a bad path or `/`,
    /// [`Error::InvalidArgument`] for an id over the data limit.
    ///
    /// # Panics
    /// Outside a tokio runtime (the latch is a task).
    pub fn start(client: &Client, path: &str, id: impl AsRef<[u8]>) -> Result<Self> {
        Self::start_with_layout(client, path, id, ElectionLayout::default())
    }

    /// [`RejoiningLatch::start`] with offers named as `layout` says.
    ///
    /// # Errors
    /// As [`RejoiningLatch::start`].
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn start_with_layout(
        client: &Client,
        path: &str,
        id: impl AsRef<[u8]>,
        layout: ElectionLayout,
    ) -> Result<Self> {
        path::validate_non_root(path)?;
        let id = id.as_ref().to_vec();
        path::validate_data(&id)?;
        let (tx, rx) = watch::channel(Status::default());
        let (stop_tx, stop_rx) = oneshot::channel();
        let task = tokio::spawn(run(
            client.clone(),
            path.to_owned(),
            layout,
            id.clone(),
            tx,
            stop_rx,
        ));
        Ok(RejoiningLatch {
            status: rx,
            stop: Some(stop_tx),
            task: Some(task),
            id,
        })
    }

    /// The id this latch offers.
    pub fn id(&self) -> &[u8] {
        &self.id
    }

    /// Whether this latch leads now.
    pub fn has_leadership(&self) -> bool {
        self.status.borrow().term.is_some()
    }

    /// The fencing token of the term now, while leading.
    pub fn fencing_token(&self) -> Option<u64> {
        self.status.borrow().term.as_ref().map(|t| t.token)
    }

    /// The fence for guarded writes of the term now, while leading.
    pub fn fence(&self) -> Option<Fence> {
        self.status
            .borrow()
            .term
            .as_ref()
            .and_then(|t| t.fence.clone())
    }

    /// The offer node on the live session, once made.
    pub fn node_path(&self) -> Option<String> {
        self.status.borrow().node.clone()
    }

    /// The client's generation the latch campaigns on now (0 before the
    /// first session).
    pub fn generation(&self) -> u64 {
        self.status.borrow().generation
    }

    /// How many leadership terms of this latch have ended.
    pub fn ended_terms(&self) -> u64 {
        self.status.borrow().ended_terms
    }

    /// Wait until this latch leads, and return the term's fencing token;
    /// at once if it leads now. Waits across sessions.
    ///
    /// # Errors
    /// [`Error::SessionClosed`] once the latch or its client is closed.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn await_leadership(&self) -> Result<u64> {
        let mut rx = self.status.clone();
        let token = match rx.wait_for(|s| s.term.is_some() || s.over).await {
            Ok(s) => s.term.as_ref().map(|t| t.token),
            Err(_) => None,
        };
        token.ok_or(Error::SessionClosed)
    }

    /// [`RejoiningLatch::await_leadership`], giving up after `timeout`.
    ///
    /// # Errors
    /// [`Error::Timeout`] when it runs out (the latch goes on);
    /// [`Error::InvalidArgument`] for a timeout over
    /// [`crate::limits::MAX_TIMEOUT`]; otherwise as `await_leadership`.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn await_leadership_timeout(&self, timeout: Duration) -> Result<u64> {
        crate::limits::check_timeout(timeout)?;
        match tokio::time::timeout(timeout, self.await_leadership()).await {
            Ok(r) => r,
            Err(_) => Err(Error::Timeout(timeout)),
        }
    }

    /// Wait until the term with fencing token `token` is over (at once if
    /// it is not the term now): what a leader awaits beside its work.
    ///
    /// # Errors
    /// None: it resolves when the term has ended.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn term_ended(&self, token: u64) {
        let mut rx = self.status.clone();
        let _ = rx
            .wait_for(|s| s.term.as_ref().map(|t| t.token) != Some(token))
            .await;
    }

    /// Follow this latch's terms; see [`RejoiningLatchWatcher`].
    pub fn watch(&self) -> RejoiningLatchWatcher {
        RejoiningLatchWatcher {
            status: self.status.clone(),
            last: None,
            pending: None,
            over: false,
            change: ChangeWait::default(),
        }
    }

    /// Leave the election for good: stop leading (if it does) before the
    /// offer is deleted, which wakes the next candidate. Nothing is
    /// re-established after.
    ///
    /// # Errors
    /// The error of withdrawing the offer on the live session, if any
    /// (the offer then goes with its session).
    ///
    /// # Cancel safety
    /// Cancel safe in effect: once called, the close goes on in the
    /// latch's task even if this future is dropped.
    pub async fn close(mut self) -> Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => task
                .await
                .unwrap_or_else(|e| Err(Error::backend("coord", format!("latch task: {e}")))),
            None => Ok(()),
        }
    }
}

impl Drop for RejoiningLatch {
    /// Stops the latch; its task withdraws the offer in the background.
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The latch's task: steps 1 to 3 of the module docs, until stopped.
async fn run(
    client: Client,
    dir: String,
    layout: ElectionLayout,
    id: Vec<u8>,
    status: watch::Sender<Status>,
    mut stop: oneshot::Receiver<()>,
) -> Result<()> {
    let mut after = 0u64;
    let mut attempt = 0u32;
    let result = loop {
        // 1. Join.
        let generation = tokio::select! {
            biased;
            _ = &mut stop => break Ok(()),
            g = client.next_session(after) => match g {
                Ok(g) => g,
                Err(_) => break Ok(()),
            },
        };
        status.send_modify(|s| s.generation = generation.number);
        let latch = Election::new(&generation.session, &dir)
            .map(|e| e.with_layout(layout))
            .and_then(|e| e.latch(&id));
        let latch = match latch {
            Ok(l) => l,
            Err(e) => break Err(e),
        };
        // 2. Follow.
        let mut inner = latch.status_watch();
        let stopped = loop {
            let (event, node, over) = {
                let now = inner.borrow_and_update();
                (event_of(&now), now.node.clone(), is_over(&now))
            };
            let fence = latch.fence();
            status.send_modify(|s| {
                match event {
                    LatchEvent::IsLeader { token } => {
                        if s.term.as_ref().is_some_and(|t| t.token != token) {
                            s.ended_terms += 1;
                        }
                        s.term = Some(Term { token, fence });
                    }
                    _ => end_term(s),
                }
                s.node = node;
            });
            if over {
                break false;
            }
            tokio::select! {
                biased;
                _ = &mut stop => break true,
                changed = inner.changed() => if changed.is_err() { break false },
            }
        };
        // 3. End the term, before anything else.
        status.send_modify(|s| {
            end_term(s);
            s.node = None;
        });
        let closed = latch.close().await;
        if stopped {
            break closed;
        }
        if let Err(e) = &closed {
            tracing::info!(target: crate::telemetry::TARGET, dir = %dir, error = %e, "rejoining latch: the latch on generation {} ended; joining again", generation.number);
        }
        if generation.session.state().is_terminal() {
            after = generation.number;
            attempt = 0;
        } else {
            // Only the offer was lost (deleted, or an error): join again on
            // the same session after a pause.
            after = generation.number - 1;
            tokio::select! {
                biased;
                _ = &mut stop => break Ok(()),
                () = Backoff::RECIPES.sleep(&mut attempt) => {}
            }
        }
    };
    status.send_modify(|s| {
        end_term(s);
        s.node = None;
        s.over = true;
    });
    result
}

/// End the term now, if there is one.
fn end_term(s: &mut Status) {
    if s.term.take().is_some() {
        s.ended_terms += 1;
    }
}

/// Follows a [`RejoiningLatch`]: the first [`next`](Self::next) returns
/// the latch's state now, each later one the next change. Every term is
/// seen to end: a watcher that last saw `IsLeader { token: a }` gets
/// `NotLeader` before any `IsLeader { token: b }`, even when it looks after
/// both happened. Ends (`None`) once the latch or its client is closed and
/// its last state was returned.
///
/// An [event stream](crate#event-streams) of [`LatchEvent`]: it does not
/// end when a session does.
#[derive(Debug, Clone)]
pub struct RejoiningLatchWatcher {
    status: watch::Receiver<Status>,
    last: Option<LatchEvent>,
    /// An `IsLeader` to return after the `NotLeader` of the term before.
    pending: Option<LatchEvent>,
    over: bool,
    change: ChangeWait,
}

impl RejoiningLatchWatcher {
    /// The latch's state now on the first call, then the next change;
    /// `None` once the latch is closed and its last state returned.
    ///
    /// # Errors
    /// None.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped, nothing is consumed.
    pub async fn next(&mut self) -> Option<LatchEvent> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }
}

impl Stream for RejoiningLatchWatcher {
    type Item = LatchEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<LatchEvent>> {
        let this = self.get_mut();
        loop {
            if let Some(ev) = this.pending.take() {
                this.last = Some(ev);
                return Poll::Ready(Some(ev));
            }
            let (now, over) = {
                let s = this.status.borrow_and_update();
                let now = match &s.term {
                    Some(t) => LatchEvent::IsLeader { token: t.token },
                    None => LatchEvent::NotLeader,
                };
                (now, s.over)
            };
            if this.last != Some(now) {
                if let (Some(LatchEvent::IsLeader { .. }), LatchEvent::IsLeader { .. }) =
                    (this.last, now)
                {
                    // The term this watcher last saw ended meanwhile.
                    this.pending = Some(now);
                    this.last = Some(LatchEvent::NotLeader);
                    return Poll::Ready(Some(LatchEvent::NotLeader));
                }
                this.last = Some(now);
                return Poll::Ready(Some(now));
            }
            if this.over || over {
                this.over = true;
                if this.last == Some(now) {
                    return Poll::Ready(None);
                }
            }
            if !ready!(this.change.poll_changed(&this.status, cx)) {
                this.over = true;
            }
        }
    }
}

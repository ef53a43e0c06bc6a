//! The two shapes of the crate's event streams, written once so that a
//! dropped `next()` loses nothing: [`Resumable`], whose items an async step
//! computes over state the step owns while it runs, and [`ChangeWait`], a
//! wait for a `watch` channel's next value that survives being dropped.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::sync::watch;

use crate::error::{Error, Result};

/// The state of a stream whose next item is an async computation over it
/// (a watch, a re-list, a compare with the last item returned).
pub(crate) trait Advance: Send + Sized + 'static {
    /// What a step yields when it succeeds.
    type Item: Send + 'static;

    /// Compute the next item. An error ends the stream unless
    /// [`Advance::goes_on`] says otherwise.
    fn advance(&mut self) -> impl Future<Output = Result<Self::Item>> + Send;

    /// Whether the stream goes on after yielding `e` (an error that leaves
    /// the state usable); by default only a retryable one (a lost
    /// connection: the next step tries again) does.
    fn goes_on(e: &Error) -> bool {
        e.is_retryable()
    }
}

type Running<S> = Pin<Box<dyn Future<Output = (S, Result<<S as Advance>::Item>)> + Send>>;

enum Phase<S: Advance> {
    /// Between items: the state, ready for the next step.
    Idle(S),
    /// A step under way, owning the state until it is done: a `next()`
    /// dropped meanwhile leaves it here, and the next poll resumes it.
    Running(Running<S>),
    /// A terminal error was yielded.
    Ended,
}

/// A stream of `Result<S::Item>` over the state `S`: items in order; an
/// error yielded once ends it, unless `S::goes_on` keeps it going.
pub(crate) struct Resumable<S: Advance> {
    phase: Phase<S>,
}

impl<S: Advance> Resumable<S> {
    pub(crate) fn new(state: S) -> Self {
        Resumable {
            phase: Phase::Idle(state),
        }
    }

    /// `Stream::poll_next` for the stream built on this.
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<S::Item>>> {
        loop {
            match std::mem::replace(&mut self.phase, Phase::Ended) {
                Phase::Ended => return Poll::Ready(None),
                Phase::Idle(mut state) => {
                    self.phase = Phase::Running(Box::pin(async move {
                        let r = state.advance().await;
                        (state, r)
                    }));
                }
                Phase::Running(mut step) => {
                    let Poll::Ready((state, r)) = step.as_mut().poll(cx) else {
                        self.phase = Phase::Running(step);
                        return Poll::Pending;
                    };
                    if r.as_ref().err().is_none_or(S::goes_on) {
                        self.phase = Phase::Idle(state);
                    }
                    return Poll::Ready(Some(r));
                }
            }
        }
    }
}

impl<S: Advance + fmt::Debug> fmt::Debug for Resumable<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.phase {
            Phase::Idle(state) => state.fmt(f),
            Phase::Running(_) => f.write_str("Resumable(running)"),
            Phase::Ended => f.write_str("Resumable(ended)"),
        }
    }
}

/// For a newtype `$t(Resumable<_>)` of items `Result<$item>`: the inherent
/// `next` (documented by the attributes given) and `Stream`, both the
/// resumable's `poll_next`, so the two never disagree.
macro_rules! resumable_stream {
    ($t:ident, $item:ty, $(#[$doc:meta])*) => {
        impl $t {
            $(#[$doc])*
            pub async fn next(&mut self) -> Option<$crate::error::Result<$item>> {
                std::future::poll_fn(|cx| self.0.poll_next(cx)).await
            }
        }

        impl futures_core::Stream for $t {
            type Item = $crate::error::Result<$item>;

            fn poll_next(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<Option<Self::Item>> {
                self.get_mut().0.poll_next(cx)
            }
        }
    };
}
pub(crate) use resumable_stream;

/// A wait for the next value of a `watch` channel, kept across polls: the
/// wait owns a clone of the receiver (seeing what it has seen when the wait
/// began), so the receiver itself stays free to read, and a dropped
/// `next()` resumes the same wait.
#[derive(Default)]
pub(crate) struct ChangeWait(Option<Pin<Box<dyn Future<Output = bool> + Send + Sync>>>);

impl ChangeWait {
    /// Resolve once `rx` has a value it has not seen: `true`, or `false`
    /// when the sender is gone (`watch::Receiver::changed` failing).
    pub(crate) fn poll_changed<T: Send + Sync + 'static>(
        &mut self,
        rx: &watch::Receiver<T>,
        cx: &mut Context<'_>,
    ) -> Poll<bool> {
        let wait = self.0.get_or_insert_with(|| {
            let mut rx = rx.clone();
            Box::pin(async move { rx.changed().await.is_ok() })
        });
        let open = ready!(wait.as_mut().poll(cx));
        self.0 = None;
        Poll::Ready(open)
    }
}

impl Clone for ChangeWait {
    /// A clone waits afresh, from what its receiver has seen.
    fn clone(&self) -> Self {
        ChangeWait(None)
    }
}

impl fmt::Debug for ChangeWait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "ChangeWait(waiting)"
        } else {
            "ChangeWait"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts up; 2 is an error that goes on, 4 one that ends.
    struct Count(u32);

    impl Advance for Count {
        type Item = u32;

        async fn advance(&mut self) -> Result<u32> {
            tokio::task::yield_now().await;
            self.0 += 1;
            match self.0 {
                2 => Err(Error::InvalidArgument("two".into())),
                4 => Err(Error::SessionClosed),
                n => Ok(n),
            }
        }

        fn goes_on(e: &Error) -> bool {
            matches!(e, Error::InvalidArgument(_))
        }
    }

    async fn next<S: Advance>(s: &mut Resumable<S>) -> Option<Result<S::Item>> {
        std::future::poll_fn(|cx| s.poll_next(cx)).await
    }

    #[tokio::test]
    async fn a_non_terminal_error_goes_on_and_a_terminal_one_ends() {
        let mut s = Resumable::new(Count(0));
        assert!(matches!(next(&mut s).await, Some(Ok(1))));
        assert!(matches!(
            next(&mut s).await,
            Some(Err(Error::InvalidArgument(_)))
        ));
        assert!(matches!(next(&mut s).await, Some(Ok(3))));
        assert!(matches!(
            next(&mut s).await,
            Some(Err(Error::SessionClosed))
        ));
        assert!(next(&mut s).await.is_none());
        assert!(next(&mut s).await.is_none());
    }

    #[tokio::test]
    async fn a_step_polled_once_and_left_resumes() {
        let mut s = Resumable::new(Count(0));
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        // The step yields once: pending, and kept.
        assert!(s.poll_next(&mut cx).is_pending());
        assert!(matches!(s.poll_next(&mut cx), Poll::Ready(Some(Ok(1)))));
    }
}

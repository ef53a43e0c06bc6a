//! [`Mirror`]: the handle on a cache's background task, shared by the three
//! caches.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::sync::mpsc;

use crate::backend::node::Node;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::path;
use crate::recipes::cache::event::{CacheEvent, Shape, Shared};
use crate::recipes::cache::follow;
use crate::recipes::cache::worker::spawn;
use crate::session::Session;

/// Where a cache's event stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Run {
    /// Reading the task's events.
    Live,
    /// Closed by the caller: the end error is yielded next.
    Closed,
    /// The end error was yielded: nothing more until a restart.
    Ended,
}

/// What a cache runs on.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    /// One session: the cache ends with it.
    Session(Session),
    /// Every session of a client, one after another.
    Client(Client),
}

#[derive(Debug)]
pub(crate) struct Mirror {
    pub(crate) root: String,
    pub(crate) shape: Shape,
    pub(crate) view: Shared,
    pub(crate) events: mpsc::UnboundedReceiver<Result<CacheEvent>>,
    pub(crate) source: Source,
    pub(crate) run: Run,
    pub(crate) task: Option<tokio::task::JoinHandle<()>>,
}

impl Mirror {
    pub(crate) fn start(source: Source, root: &str, shape: Shape) -> Result<Mirror> {
        path::validate(root)?;
        let view: Shared = Arc::default();
        let (tx, rx) = mpsc::unbounded_channel();
        let task = match &source {
            Source::Session(session) => spawn(
                session.clone(),
                root.to_string(),
                shape,
                view.clone(),
                tx,
                false,
            ),
            Source::Client(client) => {
                follow::spawn(client.clone(), root.to_string(), shape, view.clone(), tx)
            }
        };
        Ok(Mirror {
            root: root.to_string(),
            shape,
            view,
            events: rx,
            source,
            run: Run::Live,
            task: Some(task),
        })
    }

    pub(crate) fn restart(&mut self, session: &Session) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
        let (tx, rx) = mpsc::unbounded_channel();
        self.events = rx;
        self.run = Run::Live;
        self.source = Source::Session(session.clone());
        self.task = Some(spawn(
            session.clone(),
            self.root.clone(),
            self.shape,
            self.view.clone(),
            tx,
            true,
        ));
    }

    /// The stream of the three caches: the task's events, then the error
    /// that ended it once, then `None` until a restart.
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<CacheEvent>>> {
        let end = match self.run {
            Run::Ended => return Poll::Ready(None),
            Run::Closed => self.end_error(),
            Run::Live => match ready!(self.events.poll_recv(cx)) {
                Some(Ok(ev)) => return Poll::Ready(Some(Ok(ev))),
                Some(Err(e)) => e,
                None => self.end_error(),
            },
        };
        self.run = Run::Ended;
        Poll::Ready(Some(Err(end)))
    }

    pub(crate) fn end_error(&self) -> Error {
        match &self.source {
            Source::Session(session) => session.state().end_error().unwrap_or(Error::SessionClosed),
            Source::Client(_) => Error::SessionClosed,
        }
    }

    pub(crate) fn current(&self) -> BTreeMap<String, Node> {
        let view = self.view.lock().unwrap_or_else(|p| p.into_inner());
        view.iter()
            .filter(|(p, _)| self.shape.include_root || **p != self.root)
            .map(|(p, n)| (p.clone(), n.clone()))
            .collect()
    }

    pub(crate) fn close(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
        if self.run == Run::Live {
            self.run = Run::Closed;
        }
    }
}

impl Drop for Mirror {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

//! [`Mirror`]: the handle on a cache's background task, shared by the three
//! caches.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::backend::node::Node;
use crate::error::{Error, Result};
use crate::path;
use crate::recipes::cache::event::{CacheEvent, Shape, Shared};
use crate::recipes::cache::worker::spawn;
use crate::session::Session;

#[derive(Debug)]
pub(crate) struct Mirror {
    pub(crate) root: String,
    pub(crate) shape: Shape,
    pub(crate) view: Shared,
    pub(crate) events: mpsc::UnboundedReceiver<Result<CacheEvent>>,
    pub(crate) session: Session,
    pub(crate) ended: bool,
    pub(crate) task: Option<tokio::task::JoinHandle<()>>,
}

impl Mirror {
    pub(crate) fn start(session: &Session, root: &str, shape: Shape) -> Result<Mirror> {
        path::validate(root)?;
        let view: Shared = Arc::default();
        let (tx, rx) = mpsc::unbounded_channel();
        let task = spawn(
            session.clone(),
            root.to_string(),
            shape,
            view.clone(),
            tx,
            false,
        );
        Ok(Mirror {
            root: root.to_string(),
            shape,
            view,
            events: rx,
            session: session.clone(),
            ended: false,
            task: Some(task),
        })
    }

    pub(crate) fn restart(&mut self, session: &Session) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
        let (tx, rx) = mpsc::unbounded_channel();
        self.events = rx;
        self.ended = false;
        self.session = session.clone();
        self.task = Some(spawn(
            session.clone(),
            self.root.clone(),
            self.shape,
            self.view.clone(),
            tx,
            true,
        ));
    }

    pub(crate) async fn next_event(&mut self) -> Result<CacheEvent> {
        if self.ended {
            return Err(self.end_error());
        }
        match self.events.recv().await {
            Some(Ok(ev)) => Ok(ev),
            Some(Err(e)) => {
                self.ended = true;
                Err(e)
            }
            None => {
                self.ended = true;
                Err(self.end_error())
            }
        }
    }

    pub(crate) fn end_error(&self) -> Error {
        self.session
            .state()
            .end_error()
            .unwrap_or(Error::SessionClosed)
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
        self.ended = true;
    }
}

impl Drop for Mirror {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

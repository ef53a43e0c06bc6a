//! Reading what is at a path, retried through connection drops, and the
//! signs a listing shows.

use std::time::{Duration, SystemTime};

use crate::backend::node::{Child, Node};
use crate::error::{Error, Result};
use crate::hold::contenders::{Contender, ContenderState};
use crate::inspect::report::{Entry, Role};
use crate::layout;
use crate::machinery::retry::backoff;
use crate::path;
use crate::session::Session;
/// Reads, retried through connection drops.
pub(crate) struct Reader<'a> {
    pub(crate) session: &'a Session,
    pub(crate) now: SystemTime,
}

impl Reader<'_> {
    pub(crate) async fn get(&self, p: &str) -> Result<Option<Node>> {
        let mut attempt = 0;
        loop {
            match self.session.get(p).await {
                Err(e) if e.is_retryable() => backoff(&mut attempt).await,
                r => return r,
            }
        }
    }

    /// The children of `dir`; `None` when it does not exist.
    pub(crate) async fn children(&self, dir: &str) -> Result<Option<Vec<Child>>> {
        let mut attempt = 0;
        loop {
            match self.session.children(dir).await {
                Ok(c) => return Ok(Some(c)),
                Err(Error::NotFound { .. }) => return Ok(None),
                Err(e) if e.is_retryable() => backoff(&mut attempt).await,
                Err(e) => return Err(e),
            }
        }
    }

    /// Whether `dir/name` has children (a directory, not a leaf).
    pub(crate) async fn is_dir(&self, dir: &str, name: &str) -> Result<bool> {
        Ok(self
            .children(&path::join(dir, name))
            .await?
            .is_some_and(|c| !c.is_empty()))
    }

    pub(crate) fn age(&self, at: Option<SystemTime>) -> Option<Duration> {
        at.map(|t| self.now.duration_since(t).unwrap_or_default())
    }

    pub(crate) fn entry(&self, role: Role, node: &str, n: Node) -> Entry {
        Entry {
            role,
            side: None,
            node: node.to_owned(),
            data: n.data,
            stamp: n.stat.stamp,
            ephemeral: n.stat.ephemeral,
            created_at: n.stat.created_at,
            age: self.age(n.stat.created_at),
            session: n.stat.owner.map(|id| id.0),
        }
    }

    /// A contender as an entry: `holding` or `waiting` by its state.
    pub(crate) async fn contender(
        &self,
        c: &Contender,
        holding: Role,
        waiting: Role,
    ) -> Result<Entry> {
        let stat = self.get(&c.node).await?.map(|n| n.stat);
        Ok(Entry {
            role: match c.state {
                ContenderState::Holding => holding,
                ContenderState::Waiting => waiting,
            },
            side: None,
            node: c.node.clone(),
            data: c.data.clone(),
            stamp: c.stamp,
            // Every contender node coord or its peers make is ephemeral;
            // read it rather than assume, and read its owner.
            ephemeral: stat.as_ref().is_none_or(|s| s.ephemeral),
            created_at: c.created_at,
            age: self.age(c.created_at),
            session: stat.and_then(|s| s.owner).map(|id| id.0),
        })
    }
}

impl Reader<'_> {
    /// The holder of the simple lock at `dir`, if `dir/lock` is there and
    /// ephemeral (a simple lock's node; a periodic job's `lock` directory
    /// is not).
    pub(crate) async fn simple_lock_holder(
        &self,
        dir: &str,
        listed: bool,
    ) -> Result<Option<Entry>> {
        if !listed {
            return Ok(None);
        }
        let node = path::join(dir, layout::SIMPLE_LOCK_NODE);
        Ok(self
            .get(&node)
            .await?
            .filter(|n| n.stat.ephemeral)
            .map(|n| self.entry(Role::Holder, &node, n)))
    }

    /// The session recorded in an item's claim.
    pub(crate) async fn claim_owner(&self, claims_dir: &str, item: &str) -> Result<Option<String>> {
        Ok(self
            .get(&path::join(claims_dir, item))
            .await?
            .map(|n| String::from_utf8_lossy(&n.data).into_owned()))
    }
}

/// A directory's listing, as the recipes' signs are read from it.
pub(crate) struct Listing<'a> {
    /// The directory.
    pub(crate) path: &'a str,
    /// Its children.
    pub(crate) children: &'a [Child],
}

impl Listing<'_> {
    /// Whether a child is named `name`.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.children.iter().any(|c| c.name == name)
    }

    /// Whether a sequential child's name holds `marker`.
    pub(crate) fn marked(&self, marker: &str) -> bool {
        self.children
            .iter()
            .any(|c| c.sequence.is_some() && c.name.contains(marker))
    }
}

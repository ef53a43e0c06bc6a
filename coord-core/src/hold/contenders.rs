//! Who takes part in a lock, an election or a semaphore, in queue order
//! (Curator's `getParticipantNodes`, kazoo's `contenders()`).

use std::time::SystemTime;

use crate::backend::node::Child;
use crate::error::Result;
use crate::machinery::retry::list_retrying;
use crate::path;
use crate::session::Session;

/// Whether a [`Contender`] holds or waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContenderState {
    /// It holds the lock (a read hold, a lease, the leadership).
    Holding,
    /// It is queued behind a holder.
    Waiting,
}

/// One participant of a lock-like recipe or an election, as read from the
/// server by `participants()`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Contender {
    /// The participant's node (full path).
    pub node: String,
    /// The node's data: what the participant stored (a lock's
    /// `with_data`, an election's value; Curator stores the host address).
    pub data: Vec<u8>,
    /// Holding or waiting.
    pub state: ContenderState,
    /// The node's stamp: its place in the server's order of writes, and
    /// the fencing token it holds (or will hold) with.
    pub stamp: u64,
    /// When the node was made (queued since then), by the server's clock,
    /// where the backend records it: ZooKeeper, Redis and the in-memory
    /// backend do; etcd keeps no time per key (`None`; `stamp` still gives
    /// the order).
    pub created_at: Option<SystemTime>,
}

impl Contender {
    /// A contender with these fields (see each field's docs): for code that
    /// formats or tests contenders without a server.
    pub fn new(
        node: String,
        data: Vec<u8>,
        state: ContenderState,
        stamp: u64,
        created_at: Option<SystemTime>,
    ) -> Self {
        Contender {
            node,
            data,
            state,
            stamp,
            created_at,
        }
    }

    /// Whether it holds.
    pub fn is_holding(&self) -> bool {
        self.state == ContenderState::Holding
    }
}

/// Whether the contender `me` is blocked by the earlier contender
/// `earlier` (every lock-like recipe's rule: a plain lock or an election is
/// blocked by any earlier node; a reader only by earlier writers).
pub(crate) type BlockRule = dyn Fn(&Child, &Child) -> bool + Send + Sync;

/// A contender is blocked by any earlier one: one holder at a time.
pub(crate) fn exclusive(_me: &Child, _earlier: &Child) -> bool {
    true
}

/// The contenders queued in `dir` (every child with a sequence), in queue
/// order, each holding or waiting by `blocked`. A node that goes between
/// the listing and its read is left out.
pub(crate) async fn list(
    session: &Session,
    dir: &str,
    blocked: &BlockRule,
) -> Result<Vec<Contender>> {
    let children = list_retrying(session, dir).await?;
    let queued: Vec<&Child> = children.iter().filter(|c| c.sequence.is_some()).collect();
    let mut out = Vec::with_capacity(queued.len());
    for (i, me) in queued.iter().enumerate() {
        let holding = !queued[..i].iter().any(|earlier| blocked(me, earlier));
        let node = path::join(dir, &me.name);
        if let Some(n) = session.get(&node).await? {
            out.push(Contender {
                node,
                data: n.data,
                state: if holding {
                    ContenderState::Holding
                } else {
                    ContenderState::Waiting
                },
                stamp: n.stat.stamp,
                created_at: n.stat.created_at,
            });
        }
    }
    Ok(out)
}

/// One node as a contender in `state`, if it exists.
pub(crate) async fn one(
    session: &Session,
    node: &str,
    state: ContenderState,
) -> Result<Option<Contender>> {
    Ok(session.get(node).await?.map(|n| Contender {
        node: node.to_owned(),
        data: n.data,
        state,
        stamp: n.stat.stamp,
        created_at: n.stat.created_at,
    }))
}

//! [`EtcdSession`]: what one etcd session keeps on the client (the state it
//! shares with its keep-alive task and watches, its sequence counter, the
//! bookkeeping of its creates and deletes in flight and of the names it
//! lends again), and the revoke of its lease when it is dropped unclosed.
//!
//! Its operations live beside it, by what they do: `crate::listing`
//! (children), `crate::writes` (creates, sets and deletes as Txns),
//! `crate::session` (the primitive contract on top of both).

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use coord_core::{Child, Error, Result, SessionState};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::shared::Shared;
use crate::slots::Slots;
use crate::txn;

/// One session on etcd: the [`coord_core::backend::PrimitiveSession`] that
/// [`crate::connect`](fn@crate::connect) opens.
pub(crate) struct EtcdSession {
    pub(crate) shared: Arc<Shared>,
    /// Numbers the sequential creates of this session (see
    /// [`crate::keys::sequential_suffix`]).
    pub(crate) counter: AtomicU64,
    pub(crate) keep_alive: Mutex<Option<JoinHandle<()>>>,
    /// Contender creates in flight, whose Txn also lists the siblings: a
    /// `children` of the same directory issued meanwhile takes that listing
    /// instead of a round trip of its own (see [`EtcdSession`]'s
    /// [`create`](coord_core::backend::PrimitiveSession::create)).
    pub(crate) in_flight: Mutex<Vec<InFlight>>,
    pub(crate) in_flight_ids: AtomicU64,
    /// Names of deleted contender nodes, lent to the next create at the
    /// same prefix ([`crate::slots`]).
    pub(crate) slots: Mutex<Slots>,
    /// Paths of this session's contender nodes whose delete is in flight
    /// (see [`EtcdSession::list`]).
    pub(crate) deleting: Mutex<Vec<String>>,
    /// The last [`GONE_KEPT`] contender nodes this session deleted (or
    /// found gone), as path and create revision (see
    /// [`EtcdSession::list`]).
    pub(crate) gone: Mutex<VecDeque<(String, u64)>>,
    /// Keys of directories this session last created under and found
    /// there, not ephemeral: a create under one compares it alone
    /// ([`txn::CreatePlan::parent_known`]). Forgotten when that fails.
    pub(crate) dirs: Mutex<HashSet<String>>,
}

/// How many directories [`EtcdSession::dirs`] holds before it starts over.
pub(crate) const DIRS_KEPT: usize = 1024;

/// How many of its deleted contender nodes a session remembers to leave
/// out of its listings: a listing read before a delete landed can only be
/// a few requests old.
const GONE_KEPT: usize = 64;

/// The head of a directory that a contender create read in its own Txn
/// (its first [`crate::txn::FIRST_READ`] children by create revision), and the
/// revision it was read at.
pub(crate) struct Listed {
    /// Direct children, in the order of `children`: every one the
    /// directory had when `complete`, else a head of the order.
    pub(crate) children: Vec<Child>,
    pub(crate) revision: i64,
    /// The read held the whole directory.
    pub(crate) complete: bool,
}

/// A [`Listed`], shared with the reads waiting for it.
pub(crate) type Listing = Arc<Listed>;

/// What a contender create in flight will tell: `None` while in flight,
/// then `Some(listing)` (`Some(None)`: failed, or no listing).
pub(crate) type ListingSlot = Option<Option<Listing>>;

/// One contender create in flight, by the directory it creates in.
pub(crate) struct InFlight {
    pub(crate) id: u64,
    pub(crate) dir: String,
    pub(crate) listing: watch::Receiver<ListingSlot>,
}

impl EtcdSession {
    /// The session on `shared`, its lease kept alive by `keep_alive`.
    pub(crate) fn new(shared: Arc<Shared>, keep_alive: JoinHandle<()>) -> Self {
        EtcdSession {
            shared,
            counter: AtomicU64::new(0),
            keep_alive: Mutex::new(Some(keep_alive)),
            in_flight: Mutex::new(Vec::new()),
            in_flight_ids: AtomicU64::new(0),
            slots: Mutex::new(Slots::default()),
            deleting: Mutex::new(Vec::new()),
            gone: Mutex::new(VecDeque::new()),
            dirs: Mutex::new(HashSet::new()),
        }
    }

    /// Stop the keep-alive task (at close, abandon or drop).
    pub(crate) fn stop_keep_alive(&self) {
        let handle = match self.keep_alive.lock() {
            Ok(mut h) => h.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(h) = handle {
            h.abort();
        }
    }

    /// The create revision of this session's node at `path` when its name
    /// may be lent again (see [`crate::slots`]).
    pub(crate) fn created(&self, path: &str) -> Option<i64> {
        self.slots.lock().ok()?.created(path)
    }

    /// A delete of `path` (of the node with `created`) was answered: a node
    /// deleted or found gone lends its name again.
    pub(crate) fn deleted<T>(&self, path: &str, created: Option<i64>, done: &Result<T>) {
        let Some(created) = created else { return };
        if matches!(done, Ok(_) | Err(Error::NotFound { .. })) {
            if let Ok(mut gone) = self.gone.lock() {
                if gone.len() >= GONE_KEPT {
                    gone.pop_front();
                }
                gone.push_back((path.to_owned(), txn::urev(created)));
            }
            if let Ok(mut slots) = self.slots.lock() {
                slots.gone(path, created);
            }
        }
    }
}

impl Drop for EtcdSession {
    fn drop(&mut self) {
        self.stop_keep_alive();
        // Nobody can close it any more: revoke the lease in the background
        // so its ephemeral nodes go now, not after the TTL.
        if self.shared.state.borrow().is_terminal() {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let mut lease = self.shared.client.lease_client();
            let id = self.shared.lease;
            let timeout = self.shared.request_timeout;
            rt.spawn(async move {
                let _ = tokio::time::timeout(timeout, lease.revoke(id)).await;
            });
        }
        // Watches still awaited end with the session.
        self.shared.set_state(SessionState::Closed);
    }
}

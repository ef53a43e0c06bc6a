//! Listing a directory's children on etcd: a range over the keys under it
//! (with the directory's own key, at one revision), taken from a contender
//! create's own Txn when one is in flight, and less this session's
//! contender nodes whose delete is in flight or answered.

use std::sync::atomic::Ordering;

use coord_core::{Child, Error, Result};
use etcd_client::{GetOptions, Txn, TxnOp, TxnOpResponse};
use tokio::sync::watch;

use crate::error;
use crate::etcd_session::{EtcdSession, InFlight, Listing, ListingSlot};
use crate::keys::direct_child;
use crate::txn::urev;

/// Registers a contender node's delete in flight in
/// [`EtcdSession::deleting`] until it ends, however it ends.
pub(crate) struct DeletingGuard<'a> {
    session: &'a EtcdSession,
    path: Option<String>,
}

impl<'a> DeletingGuard<'a> {
    /// Register `path`, if `own` (a contender node of this session).
    pub(crate) fn new(session: &'a EtcdSession, path: &str, own: bool) -> Self {
        let path = own.then(|| path.to_owned());
        if let (Some(p), Ok(mut list)) = (&path, session.deleting.lock()) {
            list.push(p.clone());
        }
        DeletingGuard { session, path }
    }
}

impl Drop for DeletingGuard<'_> {
    fn drop(&mut self) {
        let (Some(p), Ok(mut list)) = (&self.path, self.session.deleting.lock()) else {
            return;
        };
        if let Some(i) = list.iter().position(|d| d == p) {
            list.swap_remove(i);
        }
    }
}

/// Unregisters an [`InFlight`] when its create ends, however it ends.
pub(crate) struct InFlightGuard<'a> {
    session: &'a EtcdSession,
    id: u64,
    tx: watch::Sender<ListingSlot>,
}

impl InFlightGuard<'_> {
    /// The create's Txn answered with `listing`: hand it to the listings
    /// waiting for it.
    pub(crate) fn listed(&self, listing: Listing) {
        self.tx.send_replace(Some(Some(listing)));
    }
}

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        self.tx.send_if_modified(|slot| {
            if slot.is_none() {
                *slot = Some(None);
                true
            } else {
                false
            }
        });
        if let Ok(mut list) = self.session.in_flight.lock() {
            list.retain(|f| f.id != self.id);
        }
    }
}

/// The direct children under `prefix` among `kvs`, in creation order.
/// Every key has a create revision, so every child (ours or made by
/// another etcd client) carries a sequence.
pub(crate) fn children_of(prefix: &str, kvs: &[etcd_client::KeyValue]) -> Vec<Child> {
    let mut children: Vec<(i64, String)> = kvs
        .iter()
        .filter_map(|kv| {
            let key = std::str::from_utf8(kv.key()).ok()?;
            direct_child(prefix, key).map(|name| (kv.create_revision(), name.to_owned()))
        })
        .collect();
    children.sort();
    children
        .into_iter()
        .map(|(rev, name)| Child::new(name, Some(urev(rev))))
        .collect()
}

/// The direct children under `prefix` among the first keys of a range by
/// create revision (`kvs`, `more` when the range held others), in
/// creation order: when `more`, those created at the last key's revision
/// are left out (keys of one revision come in no set order, so some of
/// them may be missing), so what is kept is a head of the directory's
/// order.
pub(crate) fn head_of(prefix: &str, kvs: &[etcd_client::KeyValue], more: bool) -> Vec<Child> {
    let mut children = children_of(prefix, kvs);
    if more {
        let last = kvs.iter().map(|kv| urev(kv.create_revision())).max();
        children.retain(|c| c.sequence < last);
    }
    children
}

/// Whether `path` is the child `name` of `dir`, compared without building
/// the child's path (a queue's listing may hold thousands of children).
fn is_child(dir: &str, name: &str, path: &str) -> bool {
    let rest = path.strip_prefix(dir);
    let rest = match dir {
        "/" => rest,
        _ => rest.and_then(|r| r.strip_prefix('/')),
    };
    rest == Some(name)
}

/// The parent of a path (`/` for a top-level node).
pub(crate) fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

impl EtcdSession {
    /// Register a contender create in flight in `dir`, whose Txn also
    /// lists `dir`: [`EtcdSession::list`] of `dir` meanwhile waits for that
    /// listing (see [`EtcdSession::listing_in_flight`]).
    pub(crate) fn listing_create(&self, dir: String) -> InFlightGuard<'_> {
        let (tx, listing) = watch::channel(None);
        let id = self.in_flight_ids.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut list) = self.in_flight.lock() {
            list.push(InFlight { id, dir, listing });
        }
        InFlightGuard {
            session: self,
            id,
            tx,
        }
    }

    /// The children of `dir` and the revision they were read at, less
    /// this session's contender nodes whose delete is in flight.
    ///
    /// etcd does not apply one client's requests in the order sent (each
    /// is a stream of its own on the connection), so a lock's next acquire
    /// right after a dropped guard — whose delete was sent first — could
    /// list the old node and wait for it. That delete is sent until the
    /// node is gone or the session is over, so this session may count the
    /// node gone already: the listing is what it will be once the delete,
    /// which began before it, lands. Other sessions see the node until
    /// then, and wait behind it, as behind any holder.
    ///
    /// Nor does a listing show a contender node this session has seen
    /// deleted (the same key and create revision: that incarnation is gone
    /// for good). A create's listing, read in its own transaction, may
    /// have been read before a delete sent earlier landed, and be looked
    /// at after that delete's answer came back.
    pub(crate) async fn list(&self, dir: &str) -> Result<(Vec<Child>, i64)> {
        self.list_prefixed(dir, "").await
    }

    /// [`EtcdSession::list`] of the children whose names begin with
    /// `name_prefix`: a range over their keys only.
    pub(crate) async fn list_prefixed(
        &self,
        dir: &str,
        name_prefix: &str,
    ) -> Result<(Vec<Child>, i64)> {
        let (mut children, revision) = self.list_all(dir, name_prefix).await?;
        let hidden = self.hidden(dir);
        children.retain(|c| !hidden(c));
        Ok((children, revision))
    }

    /// Which children of `dir` this session's listings leave out (see
    /// [`EtcdSession::list`]): its contender nodes whose delete is in
    /// flight, and those it has seen deleted.
    pub(crate) fn hidden(&self, dir: &str) -> impl Fn(&Child) -> bool {
        let dir = dir.to_owned();
        let deleting = self.deleting.lock().map(|d| d.clone()).unwrap_or_default();
        let gone = self.gone.lock().map(|g| g.clone()).unwrap_or_default();
        move |c: &Child| {
            let is = |path: &str| is_child(&dir, &c.name, path);
            deleting.iter().any(|p| is(p))
                || gone
                    .iter()
                    .any(|(p, rev)| Some(*rev) == c.sequence && is(p))
        }
    }

    /// The children of `dir` whose names begin with `name_prefix` (all of
    /// them for `""`) and the revision they were read at.
    async fn list_all(&self, dir: &str, name_prefix: &str) -> Result<(Vec<Child>, i64)> {
        let shared = &self.shared;
        shared.check_open()?;
        if let Some(listing) = self.listing_in_flight(dir).await {
            if listing.complete {
                let mine = listing.children.iter();
                let mine = mine.filter(|c| c.name.starts_with(name_prefix));
                return Ok((mine.cloned().collect(), listing.revision));
            }
        }
        let prefix = shared.keys.child_prefix(dir);
        let range = format!("{prefix}{name_prefix}");
        let under = || Some(GetOptions::new().with_prefix().with_keys_only());
        if dir == "/" {
            let resp = shared.get(&range, under()).await.map_err(error::at(dir))?;
            let revision = shared.saw_header(resp.header());
            return Ok((children_of(&prefix, resp.kvs()), revision));
        }
        // The directory's key and its children at one revision.
        let dir_key = shared.keys.key(dir);
        let listing = Txn::new().and_then([
            TxnOp::get(dir_key.as_str(), Some(GetOptions::new().with_keys_only())),
            TxnOp::get(range.as_str(), under()),
        ]);
        let resp = shared.txn(&listing, true).await.map_err(error::at(dir))?;
        let revision = shared.saw_header(resp.header());
        let mut answers = resp.op_responses().into_iter();
        let (Some(TxnOpResponse::Get(own)), Some(TxnOpResponse::Get(under))) =
            (answers.next(), answers.next())
        else {
            return Err(error::unexpected("children without the directory"));
        };
        // A directory exists if its key does, or if keys live under it:
        // etcd's own clients make `P/<lease>` without a key `P` (etcdctl
        // lock, elect), and those contenders must be listed.
        if own.kvs().is_empty() && under.kvs().is_empty() {
            if !name_prefix.is_empty() {
                // No key of its own and none in this part: whether it has
                // children at all takes the whole range (rare: a directory
                // only etcd's own clients made).
                let (children, revision) = Box::pin(self.list_all(dir, "")).await?;
                let mine = children
                    .into_iter()
                    .filter(|c| c.name.starts_with(name_prefix));
                return Ok((mine.collect(), revision));
            }
            return Err(Error::NotFound {
                path: dir.to_owned(),
            });
        }
        Ok((children_of(&prefix, under.kvs()), revision))
    }

    /// The listing of `dir` that a contender create of this session, in
    /// flight when this is called, reads in its own Txn; `None` when there
    /// is no such create, it failed, or its listing is older than an answer
    /// this session has already had. So a listing never misses this
    /// session's own writes, and reads never go back in time: ZooKeeper's
    /// guarantees for a read that follows a create on one connection.
    pub(crate) async fn listing_in_flight(&self, dir: &str) -> Option<Listing> {
        let floor = self.shared.seen.load(Ordering::Relaxed);
        let mut rx = {
            let list = self.in_flight.lock().ok()?;
            list.iter().rev().find(|f| f.dir == dir)?.listing.clone()
        };
        let waited =
            tokio::time::timeout(self.shared.request_timeout, rx.wait_for(Option::is_some)).await;
        let listing = match waited {
            Ok(Ok(slot)) => slot.clone().flatten()?,
            _ => return None,
        };
        (listing.revision >= floor).then_some(listing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_child_matches_only_the_direct_child_of_that_name() {
        assert!(is_child("/a/b", "x", "/a/b/x"));
        assert!(is_child("/", "x", "/x"));
        assert!(!is_child("/a", "x", "/ab/x"));
        assert!(!is_child("/a", "x", "/a/xy"));
        assert!(!is_child("/a/b", "x", "/a/b/y"));
        assert!(!is_child("/", "a", "/a/b"));
    }

    #[test]
    fn parents() {
        assert_eq!(parent_of("/a"), "/");
        assert_eq!(parent_of("/a/b"), "/a");
        assert_eq!(parent_of("/a/b/_c_x-lock-"), "/a/b");
    }
}

//! Ordered neighbours on etcd ([`coord_core::backend::order`]): `place`
//! and `first_children` as one range each, sorted by create revision
//! (a contender's sequence) with a small limit, as etcd's own
//! `concurrency.Mutex` asks for its predecessor (`WithLastCreate` and
//! `WithMaxCreateRev`). The answer is a few keys, whatever the crowd.
//!
//! etcd has no index by create revision: to sort, the server reads every
//! key of the range (its `Range` fetches the whole range and sorts it
//! before the limit), so its own work still grows with the directory.
//! What no longer does is what travels and what the client decodes.
//!
//! A contender's create reads its own place in the same Txn
//! ([`EtcdSession::contender_create`]): right after the put, a range of the
//! directory's keys by create revision, *descending*, limit
//! [`NEAREST_READ`](crate::txn::NEAREST_READ). No key has a later create
//! revision than the Txn's own put, so the first key is the new node and
//! the rest are the keys just before it — the window `place` would read.
//! So an arrival that must wait costs one request, not two (the create,
//! then `place`): etcd sorts the whole range for each sorted read, so the
//! second read cost as much server work as the create's own. The answer is
//! as of the create, which is all a contender needs from its first look:
//! no node can come before it later.
//!
//! A range over `<dir>/` also holds grandchildren, and this session leaves
//! its own deleted contender nodes out of its listings
//! ([`EtcdSession::list`]): both are skipped client side, and when they
//! (or a read/write lock's readers) use up the window, one wider read
//! (`place`), then a listing (read in pages, however large the
//! directory) answers.

use coord_core::backend::order::{first_in, place_in};
use coord_core::{Blockers, Child, CreateMode, Created, Error, Place, Result};
use etcd_client::{
    Compare, CompareOp, GetOptions, SortOrder, SortTarget, Txn, TxnOp, TxnOpResponse,
};

use crate::error;
use crate::etcd_session::EtcdSession;
use crate::keys::direct_child;
use crate::listing::{head_of, parent_of};
use crate::txn::{first_by_creation, rev, urev};
use crate::writes::Siblings;

/// How many earlier keys `place` reads first: its answer is the nearest
/// earlier blocker, almost always the first key; the rest covers
/// grandchildren, this session's deleted nodes and a few readers.
const PLACE_WINDOW: i64 = 8;

/// How many earlier keys `place` reads when [`PLACE_WINDOW`] could not
/// tell (a writer behind readers, one transaction's many creates): keys
/// only, a small answer; past it, a listing decides.
const PLACE_WIDE: i64 = 1024;

/// How many keys beyond `n` `first_children` reads, for the keys it may
/// have to skip.
const FIRST_SLACK: usize = 4;

/// The earlier children of a contender with sequence `seq` under
/// `prefix`, nearest first, at most `limit`.
fn earlier(seq: u64, limit: i64) -> GetOptions {
    GetOptions::new()
        .with_prefix()
        .with_keys_only()
        .with_sort(SortTarget::Create, SortOrder::Descend)
        .with_max_create_revision(rev(seq - 1))
        .with_limit(limit)
}

/// The place decided by one window of earlier keys (nearest first; `more`
/// when the range held others), `None` when the window cannot tell.
/// Among children of one revision (one transaction's creates) the default
/// takes the last in listing order, the greatest name.
fn decide(
    prefix: &str,
    keys: &[(&str, u64)],
    more: bool,
    blockers: Blockers<'_>,
    hidden: &dyn Fn(&Child) -> bool,
) -> Option<Place> {
    let candidates = keys.iter().filter_map(|&(key, seq)| {
        let name = direct_child(prefix, key)?;
        let child = Child::new(name.to_owned(), Some(seq));
        (blockers.blocks(name) && !hidden(&child)).then_some(child)
    });
    let nearest = candidates.clone().map(|c| c.sequence).max();
    let Some(nearest) = nearest else {
        return (!more).then_some(Place::First);
    };
    let last = keys.iter().map(|&(_, seq)| Some(seq)).min();
    if more && last == Some(nearest) {
        // Others of that revision may lie past the window.
        return None;
    }
    candidates
        .filter(|c| c.sequence == nearest)
        .max_by(|a, b| a.name.cmp(&b.name))
        .map(Place::Behind)
}

impl EtcdSession {
    /// See the module docs: a Txn comparing the contender's key's create
    /// revision (its sequence), reading the earlier keys nearest first.
    pub(crate) async fn place_of(
        &self,
        dir: &str,
        me: &Child,
        blockers: Blockers<'_>,
    ) -> Result<Place> {
        let shared = &self.shared;
        shared.check_open()?;
        let Some(seq) = me.sequence else {
            return Ok(Place::Gone);
        };
        let hidden = self.hidden(dir);
        if hidden(me) {
            return Ok(Place::Gone);
        }
        if dir == "/" {
            return self.place_by_listing(dir, me, blockers).await;
        }
        let prefix = shared.keys.child_prefix(dir);
        let me_key = format!("{prefix}{}", me.name);
        for limit in [PLACE_WINDOW, PLACE_WIDE] {
            let present = Compare::create_revision(me_key.as_str(), CompareOp::Equal, rev(seq));
            let mut txn = Txn::new().when([present]);
            if seq > 1 {
                // (A maximum of 0 would be no maximum.)
                txn = txn.and_then([TxnOp::get(prefix.as_str(), Some(earlier(seq, limit)))]);
            }
            let resp = shared.txn(&txn, true).await.map_err(error::at(dir))?;
            shared.saw_header(resp.header());
            if !resp.succeeded() {
                return Ok(Place::Gone);
            }
            let (kvs, more) = match resp.op_responses().pop() {
                Some(TxnOpResponse::Get(g)) => (g.kvs().to_vec(), g.more()),
                _ => (Vec::new(), false),
            };
            let keys: Vec<(&str, u64)> = kvs
                .iter()
                .filter_map(|kv| Some((kv.key_str().ok()?, urev(kv.create_revision()))))
                .collect();
            if let Some(place) = decide(&prefix, &keys, more, blockers, &hidden) {
                return Ok(place);
            }
        }
        self.place_by_listing(dir, me, blockers).await
    }

    /// See the module docs: create the contender node and decide its place
    /// from the keys just before it, read in the create's Txn; `None` when
    /// that window cannot tell (or the create's answer was lost and its
    /// retry found the node, reading nothing).
    pub(crate) async fn contender_create(
        &self,
        path: &str,
        data: &[u8],
        blockers: Blockers<'_>,
    ) -> Result<(Created, Option<Place>)> {
        let mode = CreateMode::EphemeralSequential;
        let (created, siblings) = self.create_sequential(path, data, mode, true).await?;
        let place = siblings.and_then(|read| self.place_at_create(&created, &read, blockers));
        Ok((created, place))
    }

    /// The place `created` had at its create, from `read` (the create's
    /// own range, newest first: the new key, then the keys before it).
    fn place_at_create(
        &self,
        created: &Created,
        read: &Siblings,
        blockers: Blockers<'_>,
    ) -> Option<Place> {
        let seq = created.sequence?;
        let mut kvs = read.kvs.iter();
        let newest = kvs.next()?;
        let me_key = self.shared.keys.key(&created.path);
        if newest.key() != me_key.as_bytes() || urev(newest.create_revision()) != seq {
            return None;
        }
        let keys: Vec<(&str, u64)> = kvs
            .filter_map(|kv| Some((kv.key_str().ok()?, urev(kv.create_revision()))))
            .collect();
        let hidden = self.hidden(parent_of(&created.path));
        decide(&read.prefix, &keys, read.more, blockers, &hidden)
    }

    /// The default's answer: a listing (see [`EtcdSession::list`]).
    async fn place_by_listing(
        &self,
        dir: &str,
        me: &Child,
        blockers: Blockers<'_>,
    ) -> Result<Place> {
        match self.list(dir).await {
            Ok((children, _)) => Ok(place_in(&children, me, blockers)),
            Err(Error::NotFound { .. }) => Ok(Place::Gone),
            Err(e) => Err(e),
        }
    }

    /// See the module docs: the head a contender create in flight read,
    /// or a range of the first `n` (and a few) keys by create revision
    /// with the directory's own key; a listing when those cannot tell.
    pub(crate) async fn first_of(&self, dir: &str, n: usize) -> Result<Vec<Child>> {
        let shared = &self.shared;
        shared.check_open()?;
        let hidden = self.hidden(dir);
        if let Some(listing) = self.listing_in_flight(dir).await {
            let mut kids = listing.children.clone();
            kids.retain(|c| !hidden(c));
            if listing.complete || kids.len() >= n {
                return Ok(first_in(kids, n));
            }
        }
        if dir != "/" {
            let prefix = shared.keys.child_prefix(dir);
            let dir_key = shared.keys.key(dir);
            let limit = i64::try_from(n.saturating_add(FIRST_SLACK)).unwrap_or(i64::MAX);
            let read = Txn::new().and_then([
                TxnOp::get(dir_key.as_str(), Some(GetOptions::new().with_keys_only())),
                TxnOp::get(prefix.as_str(), Some(first_by_creation(limit))),
            ]);
            let resp = shared.txn(&read, true).await.map_err(error::at(dir))?;
            shared.saw_header(resp.header());
            let mut answers = resp.op_responses().into_iter();
            let (Some(TxnOpResponse::Get(own)), Some(TxnOpResponse::Get(under))) =
                (answers.next(), answers.next())
            else {
                return Err(error::unexpected("first children without the directory"));
            };
            if own.kvs().is_empty() && under.kvs().is_empty() {
                // Keys only etcd's own clients made (`P/<lease>` without
                // `P`) make a directory too: none here, so none at all.
                return Err(Error::NotFound {
                    path: dir.to_owned(),
                });
            }
            let mut kids = head_of(&prefix, under.kvs(), under.more());
            kids.retain(|c| !hidden(c));
            if !under.more() || kids.len() >= n {
                return Ok(first_in(kids, n));
            }
        }
        Ok(first_in(self.list(dir).await?.0, n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &Child) -> bool {
        false
    }

    fn behind(name: &str, seq: u64) -> Option<Place> {
        Some(Place::Behind(Child::new(name.to_owned(), Some(seq))))
    }

    #[test]
    fn the_nearest_earlier_direct_child_that_blocks() {
        let keys = [
            ("/l/b/x", 9),
            ("/l/r-__READ__", 8),
            ("/l/w", 5),
            ("/l/a", 3),
        ];
        assert_eq!(
            decide("/l/", &keys, true, Blockers::All, &none),
            behind("r-__READ__", 8)
        );
        let readers = Blockers::Unmarked(&["__READ__"]);
        assert_eq!(decide("/l/", &keys, true, readers, &none), behind("w", 5));
        let hide_w = |c: &Child| c.name == "w";
        assert_eq!(
            decide("/l/", &keys, false, readers, &hide_w),
            behind("a", 3)
        );
    }

    #[test]
    fn a_window_without_a_blocker_is_first_only_when_it_held_every_key() {
        let keys = [("/l/b/x", 9), ("/l/r-__READ__", 8)];
        let readers = Blockers::Unmarked(&["__READ__"]);
        assert_eq!(
            decide("/l/", &keys, false, readers, &none),
            Some(Place::First)
        );
        assert_eq!(decide("/l/", &keys, true, readers, &none), None);
        assert_eq!(
            decide("/l/", &[], false, Blockers::All, &none),
            Some(Place::First)
        );
    }

    #[test]
    fn one_transactions_children_go_by_name_and_must_all_be_seen() {
        let keys = [("/l/a", 7), ("/l/c", 7), ("/l/b", 7), ("/l/z", 4)];
        assert_eq!(
            decide("/l/", &keys, true, Blockers::All, &none),
            behind("c", 7)
        );
        // The window ends inside revision 7: another of it may lie past.
        assert_eq!(decide("/l/", &keys[..3], true, Blockers::All, &none), None);
        assert_eq!(
            decide("/l/", &keys[..3], false, Blockers::All, &none),
            behind("c", 7)
        );
    }
}

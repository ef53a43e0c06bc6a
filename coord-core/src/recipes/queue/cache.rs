//! A plain consumer's cache: the ordered names of one listing, tried in
//! turn before listing again, with the data of the next items read ahead.

use std::collections::{HashMap, VecDeque};

use tokio::task::JoinSet;

use crate::error::{Error, Result};
use crate::path;
use crate::session::Session;

/// How many items' data a plain consumer reads ahead, concurrently.
const READ_AHEAD: usize = 32;

/// How many lanes a consumer that met others splits the queue into (see
/// [`Cache::spread`]).
const LANES: u64 = 16;

/// The lane of the item `name` among `lanes` (FNV-1a of the name: the
/// same in every process).
fn lane_of(name: &str, lanes: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h % lanes
}

/// A consumer's names from its last listing, not tried yet, in order, with
/// the data of those read ahead. Items are never changed once offered, so
/// data read ahead is the item's as long as the item exists — and a
/// successful delete proves that it did.
#[derive(Default)]
pub(crate) struct Cache {
    names: VecDeque<String>,
    /// `None`: found gone (taken by someone else).
    data: HashMap<String, Option<Vec<u8>>>,
    /// How many lanes this consumer splits the queue into (0 or 1: one,
    /// until it loses a race; see [`Cache::spread`]), and the one it takes
    /// from first.
    lanes: u64,
    lane: u64,
    /// Items lost to other consumers in a row (see [`Cache::lost`]).
    lost: u32,
}

impl Cache {
    /// The next name to try.
    pub(crate) fn front(&self) -> Option<&String> {
        self.names.front()
    }

    /// Done with the front name. When that was the last of this
    /// consumer's lane, it forgets the rest, so the next take lists afresh
    /// and picks another lane from that listing: one listing drops every
    /// name the other consumers took meanwhile, which would otherwise cost
    /// a read each to find gone.
    pub(crate) fn pop_front(&mut self) {
        if let Some(n) = self.names.pop_front() {
            self.data.remove(&n);
        }
        let lane_done = self
            .names
            .front()
            .is_some_and(|n| self.lanes > 1 && lane_of(n, self.lanes) != self.lane);
        if lane_done {
            self.names.clear();
            self.data.clear();
        }
    }

    /// This consumer took the item it tried.
    pub(crate) fn won(&mut self) {
        self.lost = 0;
    }

    /// This consumer lost the item it tried to another one. Once is not
    /// a race: the item may have been taken before this take began (the
    /// name was cached by an earlier listing). Twice in a row is: the next
    /// item was taken as this consumer tried it, so it [spreads
    /// out](Cache::spread).
    pub(crate) fn lost(&mut self) {
        self.lost += 1;
        if self.lost >= 2 {
            self.lost = 0;
            self.spread();
        }
    }

    /// Spread out after losing items to another consumer. The queue is
    /// split into [`LANES`] lanes, a lane being the items whose name hashes
    /// to it (alike in every process: names hold a random UUID); the
    /// consumer takes a lane picked at random, through a random item it
    /// knows of (so a lane with items left), and tries that lane's items
    /// first, in order, then the rest. Consumers in different lanes never
    /// race; two that meet again each pick anew. Its data read ahead is
    /// dropped: read before the race was lost, it may be stale, and trying
    /// a stale item is a delete wasted. A consumer that never lost a race
    /// (one alone) keeps a single lane: strict order.
    fn spread(&mut self) {
        self.lanes = LANES;
        self.data.clear();
        let names = std::mem::take(&mut self.names);
        self.names = self.in_lane_first(names);
    }

    /// `names`, in order, those of this consumer's lane first; with
    /// lanes, the lane is picked anew through a random name of `names`.
    fn in_lane_first(&mut self, names: impl IntoIterator<Item = String>) -> VecDeque<String> {
        let names: VecDeque<String> = names.into_iter().collect();
        if self.lanes <= 1 || names.is_empty() {
            return names;
        }
        let pick = crate::recipes::machinery::names::random_u64() % names.len() as u64;
        self.lane = lane_of(&names[pick as usize], self.lanes);
        let lanes = self.lanes;
        let lane = self.lane;
        let (mut mine, rest): (VecDeque<String>, VecDeque<String>) =
            names.into_iter().partition(|n| lane_of(n, lanes) == lane);
        mine.extend(rest);
        mine
    }

    /// Add the names of a new listing, in order (with lanes, those of a
    /// lane picked anew first). Data read ahead for names not in it is
    /// dropped (those items are gone).
    pub(crate) fn extend(&mut self, names: Vec<String>) {
        if self.names.is_empty() && !self.data.is_empty() {
            let listed: std::collections::HashSet<&String> = names.iter().collect();
            self.data.retain(|n, _| listed.contains(n));
        }
        if self.names.is_empty() {
            self.names = self.in_lane_first(names);
        } else {
            self.names.extend(names);
        }
    }

    /// Forget the names not tried yet (keeping data read ahead, which
    /// stays the item's as long as it exists), so the next take lists
    /// afresh.
    pub(crate) fn clear_names(&mut self) {
        self.names.clear();
    }

    /// The data read ahead for `name`: `None` when not read yet,
    /// `Some(None)` when found gone.
    pub(crate) fn data(&self, name: &str) -> Option<&Option<Vec<u8>>> {
        self.data.get(name)
    }

    /// Read the data of the first [`READ_AHEAD`] cached names that lack
    /// it, concurrently (reads pipeline on every backend), from the item
    /// directory `items`, so a take costs one delete instead of a read and
    /// a delete. Names found gone are marked so.
    pub(crate) async fn read_ahead(&mut self, session: &Session, items: &str) -> Result<()> {
        let mut reads = JoinSet::new();
        // The front, then the names of this consumer's lane: those are
        // what it will try next (the others' lanes are not worth reading).
        let (lanes, lane) = (self.lanes, self.lane);
        let front = self.names.front();
        let mine = self
            .names
            .iter()
            .skip(1)
            .filter(|n| lanes <= 1 || lane_of(n, lanes) == lane);
        for name in front.into_iter().chain(mine).take(READ_AHEAD) {
            if self.data.contains_key(name) {
                continue;
            }
            let session = session.clone();
            let item = path::join(items, name);
            let name = name.clone();
            reads.spawn(async move { (name, session.get(&item).await) });
        }
        while let Some(r) = reads.join_next().await {
            let (name, node) = r.map_err(|e| Error::backend(session.backend(), e))?;
            self.data.insert(name, node?.map(|n| n.data));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| crate::recipes::machinery::names::protected("item-") + &format!("{i:010}"))
            .collect()
    }

    fn drain(c: &mut Cache) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(n) = c.front().cloned() {
            out.push(n);
            c.pop_front();
        }
        out
    }

    /// Every process must put a name in the same lane: the hash is
    /// FNV-1a, pinned by its published test vector, not a per-process
    /// seeded hasher.
    #[test]
    fn lanes_are_fnv1a_of_the_name() {
        assert_eq!(lane_of("a", u64::MAX), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn a_consumer_that_never_lost_takes_in_order() {
        let all = names(100);
        let mut c = Cache::default();
        c.extend(all.clone());
        assert_eq!(drain(&mut c), all);
    }

    #[test]
    fn a_consumer_that_lost_takes_one_lane_in_order_then_lists_again() {
        let all = names(400);
        let mut c = Cache::default();
        c.extend(all.clone());
        c.lost();
        assert_eq!(c.lanes, 0, "one lost item is not a race");
        c.lost();
        let lane = c.lane;
        let taken = drain(&mut c);
        // Its lane, in order, and nothing else: then it lists afresh.
        let want: Vec<String> = all
            .iter()
            .filter(|n| lane_of(n, LANES) == lane)
            .cloned()
            .collect();
        assert!(!want.is_empty());
        assert_eq!(taken, want);
        let used: std::collections::HashSet<u64> = all.iter().map(|n| lane_of(n, LANES)).collect();
        assert_eq!(used.len() as u64, LANES, "400 names fill every lane");
    }
}

//! A plain consumer's cache: the ordered names of one listing, tried in
//! turn before listing again, with the data of the next items read ahead.

use std::collections::{HashMap, VecDeque};

use crate::error::Result;
use crate::path;
use crate::recipes::queue::lanes::{lane_of, lane_prefix, LANES, NARROW_FROM};
use crate::session::Session;

/// How many items' data a plain consumer reads ahead, concurrently.
const READ_AHEAD: usize = 32;

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
    /// With lanes: how many items each lane had at this consumer's last
    /// listing, how many of them this consumer has taken since, and the
    /// lane of the name it tried last (see [`Cache::in_lane_first`]).
    counts: Vec<u64>,
    took: Vec<u64>,
    tried: Option<usize>,
    /// Near the end of a queue: at the last pick, items were left in at
    /// most half the lanes, and each had another consumer in it (see
    /// [`Cache::spread`]).
    crowded: bool,
    /// The backend [lists by prefix](crate::session::Session::lists_by_prefix):
    /// with lanes, a consumer done with a lane lists the next one alone
    /// rather than the whole queue (see [`Cache::lane_to_list`]).
    narrow: bool,
    /// Narrow: the lanes this consumer has listed or taken from since its
    /// last listing of the whole queue.
    visited: Vec<bool>,
    /// Narrow: the lane to list when the names run out (`None`: the whole
    /// queue).
    next: Option<u64>,
    /// How many names the last whole listing held.
    whole: usize,
}

impl Cache {
    /// A cache for a consumer whose backend [lists by
    /// prefix](crate::session::Session::lists_by_prefix) (`narrow`) or not.
    pub(crate) fn new(narrow: bool) -> Self {
        Cache {
            narrow,
            ..Cache::default()
        }
    }

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
            self.tried = Some(lane_of(&n, LANES) as usize);
            self.data.remove(&n);
        }
        let lane_done = self.lanes > 1
            && self
                .names
                .front()
                .is_none_or(|n| lane_of(n, self.lanes) != self.lane);
        if lane_done {
            self.names.clear();
            self.data.clear();
            self.next = self.unvisited_lane();
        }
    }

    /// Narrow, with lanes: a lane, picked at random, that had items at
    /// this consumer's last listing of the whole queue and that it has not
    /// listed since, marked visited; `None` when there is none left (or
    /// not narrow): the whole queue is listed next.
    fn unvisited_lane(&mut self) -> Option<u64> {
        if !self.narrow_now() {
            return None;
        }
        let left: Vec<usize> = (0..self.counts.len())
            .filter(|&l| self.counts[l] > 0 && !self.visited.get(l).copied().unwrap_or(true))
            .collect();
        if left.is_empty() {
            return None;
        }
        let pick = left[(crate::layout::random_u64() % left.len() as u64) as usize];
        self.visited[pick] = true;
        Some(pick as u64)
    }

    /// Whether, spread over lanes, this consumer lists one lane at a time
    /// now: the backend can, and the queue was large at its last whole
    /// listing (see [`NARROW_FROM`]).
    fn narrow_now(&self) -> bool {
        self.narrow && self.lanes > 1 && self.whole >= NARROW_FROM
    }

    /// When the names have run out: the lane to list alone, and the start
    /// of its names to list (see [`Cache::extend_lane`]); `None` to list
    /// the whole queue.
    pub(crate) fn lane_to_list(&mut self) -> Option<(u64, String)> {
        self.next.take().map(|l| (l, lane_prefix(l)))
    }

    /// The names of lane `lane` alone, as listed just now, in order. An
    /// empty lane moves on to the next one. (Another consumer may be in
    /// this lane: the first item the two race for sends one of them on.)
    pub(crate) fn extend_lane(&mut self, lane: u64, names: Vec<String>) {
        let names: VecDeque<String> = names
            .into_iter()
            .filter(|n| lane_of(n, LANES) == lane)
            .collect();
        self.data.retain(|n, _| names.contains(n));
        self.lane = lane;
        self.names = names;
        if self.names.is_empty() {
            self.next = self.unvisited_lane();
        }
    }

    /// This consumer took the item it tried.
    pub(crate) fn won(&mut self) {
        self.lost = 0;
        if let Some(took) = self.tried.and_then(|l| self.took.get_mut(l)) {
            *took += 1;
        }
    }

    /// This consumer lost the item it tried to another one. In strict
    /// order, once is not a race: the item may have been taken before this
    /// take began (the name was cached by an earlier listing). Twice in a
    /// row is: the next item was taken as this consumer tried it, so it
    /// [spreads out](Cache::spread). Already spread, once is enough:
    /// another consumer is in this lane.
    pub(crate) fn lost(&mut self) {
        self.lost += 1;
        if self.lost >= 2 || self.lanes > 1 {
            self.lost = 0;
            self.spread();
        }
    }

    /// Spread out after losing items to another consumer. The queue is
    /// split into [`LANES`] lanes, a lane being the items whose name hashes
    /// to it (alike in every process: names hold a random UUID); the
    /// consumer takes one lane's items, in order, then lists again and
    /// picks another (see [`Cache::in_lane_first`]). Consumers in
    /// different lanes never race. A consumer that never lost a race (one
    /// alone) keeps a single lane: strict order.
    ///
    /// The first time, it takes the lane of a random name of the listing
    /// it has (just made: the race was at its front). Already in a lane,
    /// it met another consumer there; its names were listed when its lane
    /// began and many are gone by now (the others have taken on, each in
    /// its lane), and trying a gone item is a delete wasted: it drops them
    /// and the next take lists again, one request, and picks a free lane.
    /// But near the end of a queue ([crowded](Cache::crowded)) the
    /// consumers meet often, and a listing per meeting would cost more
    /// than the deletes it saves (a listing walks every key of the queue,
    /// on etcd the deleted ones too): then it leaves the lane to the one it
    /// met, moves to the lane of a random name it still has, and lists
    /// again when it has none. Data read ahead is dropped either way (it
    /// may be stale).
    ///
    /// Narrow (the backend lists one lane alone, for a fraction of a whole
    /// listing, and the queue is [large enough](NARROW_FROM)), a consumer
    /// that meets another in its lane leaves it and lists a lane it has
    /// not visited since its last whole listing (see
    /// [`Cache::extend_lane`]), and lists the whole queue only once it has
    /// visited them all.
    fn spread(&mut self) {
        self.data.clear();
        let first = self.lanes <= 1;
        if !first && (self.narrow_now() || !self.crowded) {
            self.names.clear();
            self.next = self.unvisited_lane();
            return;
        }
        self.lanes = LANES;
        if !first {
            let left = self.lane;
            self.names.retain(|n| lane_of(n, LANES) != left);
        }
        if self.names.is_empty() {
            return;
        }
        let pick = crate::layout::random_u64() % self.names.len() as u64;
        self.lane = lane_of(&self.names[pick as usize], LANES);
        self.visit(self.lane);
        let names = std::mem::take(&mut self.names);
        self.names = self.lane_first(names);
    }

    /// `names` with those of this consumer's lane first, in order — or,
    /// [crowded](Cache::crowded), newest first: the consumer met in that
    /// lane takes it from the front, and the two meet once, in the middle,
    /// rather than race for every item.
    fn lane_first(&self, names: VecDeque<String>) -> VecDeque<String> {
        let (lanes, lane) = (self.lanes, self.lane);
        let (mut mine, rest): (VecDeque<String>, VecDeque<String>) =
            names.into_iter().partition(|n| lane_of(n, lanes) == lane);
        if self.crowded {
            mine = mine.into_iter().rev().collect();
        }
        mine.extend(rest);
        mine
    }

    /// `names`, in order, those of this consumer's lane first; with
    /// lanes, the lane is picked anew. It prefers a lane no other
    /// consumer has taken from since this one's last listing (each lane
    /// still has every item it had then, less those this one took), picked
    /// at random among those; failing one, the lane of a random name of
    /// `names` (so a lane with items left).
    fn in_lane_first(&mut self, names: impl IntoIterator<Item = String>) -> VecDeque<String> {
        let names: VecDeque<String> = names.into_iter().collect();
        // Counted in strict order too, so the first pick after a race
        // already knows which lanes were taken from.
        let mut counts = vec![0u64; LANES as usize];
        for n in &names {
            counts[lane_of(n, LANES) as usize] += 1;
        }
        let untouched: Vec<usize> = (0..counts.len())
            .filter(|&l| {
                let (then, took) = (self.counts.get(l), self.took.get(l));
                counts[l] > 0 && then.is_some_and(|&t| counts[l] + took.copied().unwrap_or(0) >= t)
            })
            .collect();
        self.counts = counts;
        self.took = vec![0; LANES as usize];
        self.visited = vec![false; LANES as usize];
        self.next = None;
        self.whole = names.len();
        if self.lanes <= 1 || names.is_empty() {
            return names;
        }
        let lanes = self.lanes;
        let random = crate::layout::random_u64();
        // Near the end: items left in few lanes, each with a consumer in
        // it. (At the start every lane has items, and the consumers still
        // in strict order take from the front of each.)
        let with_items = self.counts.iter().filter(|&&c| c > 0).count() as u64;
        self.crowded = untouched.is_empty() && with_items <= LANES / 2;
        self.lane = match untouched.len() as u64 {
            0 => lane_of(&names[(random % names.len() as u64) as usize], lanes),
            k => untouched[(random % k) as usize] as u64,
        };
        self.visit(self.lane);
        self.lane_first(names)
    }

    /// Mark `lane` visited since the last whole listing.
    fn visit(&mut self, lane: u64) {
        if let Some(v) = self.visited.get_mut(lane as usize) {
            *v = true;
        }
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
    /// it, in one [`Session::get_many`] (a batch per request where the
    /// backend reads many at once; pipelined reads elsewhere), from the
    /// item directory `items`, so a take costs one delete instead of a read
    /// and a delete. Names found gone are marked so.
    pub(crate) async fn read_ahead(&mut self, session: &Session, items: &str) -> Result<()> {
        // The front, then the names of this consumer's lane: those are
        // what it will try next (the others' lanes are not worth reading).
        let (lanes, lane) = (self.lanes, self.lane);
        let front = self.names.front();
        let mine = self
            .names
            .iter()
            .skip(1)
            .filter(|n| lanes <= 1 || lane_of(n, lanes) == lane);
        let names: Vec<String> = front
            .into_iter()
            .chain(mine)
            .take(READ_AHEAD)
            .filter(|n| !self.data.contains_key(*n))
            .cloned()
            .collect();
        if names.is_empty() {
            return Ok(());
        }
        let paths: Vec<String> = names.iter().map(|n| path::join(items, n)).collect();
        let nodes = session.get_many(&paths).await?;
        for (name, node) in names.into_iter().zip(nodes) {
            self.data.insert(name, node.map(|n| n.data));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| crate::layout::protected(crate::layout::ITEM) + &format!("{i:010}"))
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
        assert_eq!(c.front(), Some(&all[0]), "it keeps its listing");
        c.lost();
        let lane = c.lane;
        let taken = drain(&mut c);
        // Its lane, in order, from the listing it had, and nothing else:
        // then it lists afresh.
        let want: Vec<String> = all
            .iter()
            .filter(|n| lane_of(n, LANES) == lane)
            .cloned()
            .collect();
        assert!(!want.is_empty());
        assert_eq!(taken, want);
        let used: std::collections::HashSet<u64> = all.iter().map(|n| lane_of(n, LANES)).collect();
        assert_eq!(used.len() as u64, LANES, "400 names fill every lane");
        // Spread out, one lost item is a race: another consumer is in
        // this lane, and the names it has are stale; it lists again.
        c.extend(all.clone());
        c.lost();
        assert!(c.front().is_none(), "it lists again at the first loss");
        assert!(c.lane_to_list().is_none(), "the whole queue");
    }

    /// Where the backend lists by prefix, a consumer done with its lane
    /// lists another lane alone — one it has not visited since its last
    /// whole listing and that had items then — takes it in order, and so
    /// on; it lists the whole queue again only once it has visited every
    /// lane.
    #[test]
    fn narrow_a_consumer_lists_one_unvisited_lane_at_a_time() {
        let all = names(400);
        let mut c = Cache::new(true);
        c.extend(all.clone());
        c.lost();
        c.lost();
        let mut visited = vec![c.lane];
        assert_eq!(drain(&mut c), lane_names(&all, c.lane));
        while let Some((lane, prefix)) = c.lane_to_list() {
            assert!(!visited.contains(&lane), "lane {lane} listed twice");
            assert_eq!(prefix, lane_prefix(lane));
            visited.push(lane);
            // What a listing of that prefix returns, plus a name of
            // another lane (a backend may list more): it is left out.
            let mut listed = lane_names(&all, lane);
            listed.push(lane_names(&all, (lane + 1) % LANES)[0].clone());
            c.extend_lane(lane, listed);
            assert_eq!(
                drain(&mut c),
                lane_names(&all, lane),
                "lane {lane} in order"
            );
        }
        assert_eq!(
            visited.len() as u64,
            LANES,
            "every lane, then the whole queue"
        );
        // A whole listing starts the round again.
        c.extend(all.clone());
        assert_eq!(c.front(), lane_names(&all, c.lane).first());
    }

    /// Narrow but with a small queue (under [`NARROW_FROM`] names at the
    /// last whole listing), a consumer lists the whole queue, as where the
    /// backend cannot list a lane alone: probing mostly empty lanes would
    /// cost more requests than the names it saves.
    #[test]
    fn narrow_a_small_queue_is_listed_whole() {
        let all = names(NARROW_FROM - 1);
        let mut c = Cache::new(true);
        c.extend(all.clone());
        c.lost();
        c.lost();
        drain(&mut c);
        assert!(c.lane_to_list().is_none(), "done with its lane");
        c.extend(all.clone());
        c.pop_front();
        c.lost();
        assert!(c.lane_to_list().is_none(), "after a meeting");
    }

    /// Narrow, meeting another consumer in its lane (or finding the lane
    /// empty) sends a consumer to another unvisited lane, with no whole
    /// listing in between.
    #[test]
    fn narrow_a_meeting_or_an_empty_lane_moves_to_an_unvisited_lane() {
        let all = names(400);
        let mut c = Cache::new(true);
        c.extend(all.clone());
        c.lost();
        c.lost();
        let first = c.lane;
        c.pop_front();
        c.lost();
        assert!(c.front().is_none(), "it leaves its lane");
        let (second, _) = c.lane_to_list().expect("another lane");
        assert_ne!(second, first);
        c.extend_lane(second, Vec::new());
        assert!(c.front().is_none());
        let (third, _) = c.lane_to_list().expect("an empty lane moves on");
        assert!(third != first && third != second);
        // Not narrow: a meeting lists the whole queue.
        let mut wide = Cache::new(false);
        wide.extend(all.clone());
        wide.lost();
        wide.lost();
        wide.pop_front();
        wide.lost();
        assert!(wide.lane_to_list().is_none());
    }

    fn lane_names(all: &[String], lane: u64) -> Vec<String> {
        all.iter()
            .filter(|n| lane_of(n, LANES) == lane)
            .cloned()
            .collect()
    }

    /// `all` less the first name of each lane in `lanes` and every name of
    /// the others: what is left after other consumers took one item from
    /// each of `lanes` and this one took the rest.
    fn left_in(all: &[String], lanes: &[u64]) -> Vec<String> {
        lanes
            .iter()
            .flat_map(|&l| lane_names(all, l).into_iter().skip(1))
            .collect()
    }

    /// A consumer of `all` that lost two races, then took its whole first
    /// lane (in order, and nothing else): the cache and that lane.
    fn after_first_lane(all: &[String]) -> (Cache, u64) {
        let mut c = Cache::default();
        c.extend(all.to_vec());
        c.lost();
        c.lost();
        let first = c.lane;
        assert_eq!(drain(&mut c), lane_names(all, first));
        (c, first)
    }

    /// Listing again after its lane, a consumer picks a lane that no one
    /// took from since its last listing, when there is one.
    #[test]
    fn a_new_lane_is_one_no_other_consumer_took_from() {
        let all = names(400);
        for _ in 0..50 {
            let (mut c, first) = after_first_lane(&all);
            // Meanwhile others took one item from every other lane but one.
            let spared = (first + 1) % LANES;
            let touched: Vec<u64> = (0..LANES).filter(|&l| l != first && l != spared).collect();
            let mut left = left_in(&all, &touched);
            left.extend(lane_names(&all, spared));
            c.extend(left);
            assert_eq!(c.lane, spared, "picked a lane others took from");
            assert_eq!(c.front(), lane_names(&all, spared).first());
        }
    }

    /// Near the end (items left in few lanes, another consumer in each),
    /// a consumer takes its lane newest first, so it meets the consumer
    /// taking it from the front once; meeting it, it moves to another of
    /// those lanes without listing.
    #[test]
    fn near_the_end_a_shared_lane_is_taken_from_the_back() {
        let all = names(400);
        for _ in 0..50 {
            let (mut c, first) = after_first_lane(&all);
            let three: Vec<u64> = (1..=3).map(|k| (first + k) % LANES).collect();
            let left = left_in(&all, &three);
            c.extend(left.clone());
            let lane = c.lane;
            assert!(three.contains(&lane));
            let newest = lane_names(&left, lane).last().cloned();
            assert_eq!(c.front().cloned(), newest, "newest first");
            c.lost();
            assert_ne!(c.lane, lane, "it left the lane");
            assert!(three.contains(&c.lane));
            let newest = lane_names(&left, c.lane).last().cloned();
            assert_eq!(c.front().cloned(), newest, "no listing: the names it had");
        }
    }
}

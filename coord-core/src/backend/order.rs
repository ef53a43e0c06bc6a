//! Ordered neighbours: where a contender stands in its directory's queue,
//! and the head of that queue, without reading the whole directory where
//! the server can answer from an index.
//!
//! Every waiting recipe (a lock, a read/write lock, an election, a
//! semaphore, a strictly ordered queue) asks one of two questions of a
//! directory of sequential nodes:
//!
//! 1. **Where do I stand?** ([`PrimitiveSession::place`]) The queue of a
//!    directory is its children that carry a sequence, in sequence order.
//!    A contender `me` (its name and sequence, as its create returned
//!    them) is [`Place::Gone`] when no child of that name and sequence is
//!    there now; otherwise [`Place::Behind`] the nearest earlier child that
//!    [`Blockers`] says it waits for, or [`Place::First`] when there is
//!    none.
//! 2. **Who is at the head?** ([`PrimitiveSession::first_children`]) The
//!    first `n` children in the order of [`PrimitiveSession::children`].
//!
//! A backend that can read the first answer in the same step as the
//! contender's create gives it there
//! ([`PrimitiveSession::create_contender`]), as of the create: an arrival
//! that must wait then asks nothing more before it waits.
//!
//! Answered from a full listing, each question reads every child, so
//! draining a queue of N waiters reads O(N²) names. A backend with an
//! ordered index answers it in O(log N) at the server (etcd: a range
//! sorted by create revision with a limit; Redis: a sorted set's ranks;
//! PostgreSQL: a B-tree; in memory: a `BTreeMap`) and says so in
//! [`PrimitiveSession::orders_at_server`]. ZooKeeper has no such query:
//! `getChildren` is the only way to learn a directory's order, and the
//! defaults ([`place_in`] and [`first_in`] over a listing) are what it
//! uses. Both ways give the same answer for the same state; the
//! conformance suite checks it under concurrent creates and deletes.
//!
//! [`PrimitiveSession::place`]: crate::backend::PrimitiveSession::place
//! [`PrimitiveSession::first_children`]: crate::backend::PrimitiveSession::first_children
//! [`PrimitiveSession::children`]: crate::backend::PrimitiveSession::children
//! [`PrimitiveSession::orders_at_server`]: crate::backend::PrimitiveSession::orders_at_server
//! [`PrimitiveSession::create_contender`]: crate::backend::PrimitiveSession::create_contender

use crate::backend::node::Child;

/// Which earlier children a contender waits behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blockers<'a> {
    /// Every earlier child with a sequence: one holder at a time (a lock,
    /// an election, a writer).
    All,
    /// The earlier children with a sequence whose names contain none of
    /// these markers (a reader waits for writers only: its markers are the
    /// readers').
    Unmarked(&'a [&'a str]),
}

impl Blockers<'_> {
    /// Whether an earlier child named `name` blocks.
    pub fn blocks(&self, name: &str) -> bool {
        match self {
            Blockers::All => true,
            Blockers::Unmarked(markers) => !markers.iter().any(|m| name.contains(m)),
        }
    }
}

/// Where a contender stands; see the module docs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// No child with the contender's name and sequence is there now: its
    /// node was deleted (by its session's end, or by someone else), or the
    /// directory is gone.
    Gone,
    /// It is there and no earlier child blocks it: it holds.
    First,
    /// It is there, and this is the nearest earlier child that blocks it:
    /// the one to wait for.
    Behind(Child),
}

/// [`Place`] from a listing of the directory (in any order): what a
/// backend without an ordered index answers, and what every backend's
/// answer must equal.
pub fn place_in(children: &[Child], me: &Child, blockers: Blockers<'_>) -> Place {
    let Some(my_seq) = me.sequence else {
        return Place::Gone;
    };
    if !children.iter().any(|c| c == me) {
        return Place::Gone;
    }
    children
        .iter()
        .filter(|c| matches!(c.sequence, Some(s) if s < my_seq))
        .filter(|c| blockers.blocks(&c.name))
        .max_by_key(|c| c.sequence)
        .map_or(Place::First, |c| Place::Behind(c.clone()))
}

/// The first `n` of a listing already in the order of
/// [`PrimitiveSession::children`](crate::backend::PrimitiveSession::children).
pub fn first_in(mut children: Vec<Child>, n: usize) -> Vec<Child> {
    children.truncate(n);
    children
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(name: &str, seq: Option<u64>) -> Child {
        Child::new(name.to_owned(), seq)
    }

    #[test]
    fn the_nearest_earlier_blocker_is_the_one_to_wait_for() {
        let kids = vec![
            c("w-3", Some(3)),
            c("r-1", Some(1)),
            c("plain", None),
            c("r-5", Some(5)),
            c("w-7", Some(7)),
        ];
        assert_eq!(
            place_in(&kids, &c("w-7", Some(7)), Blockers::All),
            Place::Behind(c("r-5", Some(5)))
        );
        assert_eq!(
            place_in(&kids, &c("w-7", Some(7)), Blockers::Unmarked(&["r-"])),
            Place::Behind(c("w-3", Some(3)))
        );
        assert_eq!(
            place_in(&kids, &c("r-5", Some(5)), Blockers::Unmarked(&["r-"])),
            Place::Behind(c("w-3", Some(3)))
        );
        assert_eq!(
            place_in(&kids, &c("r-1", Some(1)), Blockers::All),
            Place::First
        );
        assert_eq!(
            place_in(&kids, &c("w-3", Some(3)), Blockers::Unmarked(&["r-"])),
            Place::First
        );
    }

    #[test]
    fn a_contender_is_gone_unless_its_name_and_sequence_are_both_there() {
        let kids = vec![c("a-1", Some(1)), c("b-2", Some(2))];
        assert_eq!(
            place_in(&kids, &c("c-3", Some(3)), Blockers::All),
            Place::Gone
        );
        // The same name made again (etcd reuses names) is another node.
        assert_eq!(
            place_in(&kids, &c("b-2", Some(9)), Blockers::All),
            Place::Gone
        );
        assert_eq!(place_in(&kids, &c("b-2", None), Blockers::All), Place::Gone);
        assert_eq!(
            place_in(&[], &c("a-1", Some(1)), Blockers::All),
            Place::Gone
        );
    }

    #[test]
    fn first_in_keeps_the_listing_order() {
        let kids = vec![c("a", Some(1)), c("b", Some(2)), c("z", None)];
        assert_eq!(first_in(kids.clone(), 2), kids[..2].to_vec());
        assert_eq!(first_in(kids.clone(), 9), kids);
        assert!(first_in(kids, 0).is_empty());
    }
}

//! One node's children, indexed twice: by name (for listings by prefix and
//! lookups) and by sequence (the queue order), so a contender's place and
//! the head of a directory cost O(log N), not a listing
//! ([`coord_core::backend::order`]).

use std::collections::BTreeMap;
use std::ops::Bound;

use coord_core::{Blockers, Child, Place};

/// The direct children of one node.
#[derive(Default)]
pub(crate) struct Kids {
    /// Every child: name, and sequence for a sequential one.
    by_name: BTreeMap<String, Option<u64>>,
    /// The children with a sequence, in sequence order (unique among
    /// siblings: the parent's counter hands each out once).
    by_sequence: BTreeMap<u64, String>,
}

impl Kids {
    pub(crate) fn insert(&mut self, name: &str, sequence: Option<u64>) {
        if let Some(old) = self.by_name.insert(name.to_owned(), sequence).flatten() {
            self.by_sequence.remove(&old);
        }
        if let Some(seq) = sequence {
            self.by_sequence.insert(seq, name.to_owned());
        }
    }

    pub(crate) fn remove(&mut self, name: &str) {
        if let Some(seq) = self.by_name.remove(name).flatten() {
            self.by_sequence.remove(&seq);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The children whose names begin with `prefix`: those with a sequence
    /// first, by sequence, then the rest by name.
    pub(crate) fn prefixed(&self, prefix: &str) -> Vec<Child> {
        if prefix.is_empty() {
            return self.first(usize::MAX);
        }
        let mut out: Vec<Child> = self
            .by_name
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(name, _)| name.starts_with(prefix))
            .map(|(name, sequence)| Child::new(name.clone(), *sequence))
            .collect();
        // The names are sorted already, and the sort is stable.
        out.sort_by_key(|c| (c.sequence.is_none(), c.sequence));
        out
    }

    /// The first `n` children in listing order, visiting only those (and,
    /// past the sequenced ones, the names without a sequence).
    pub(crate) fn first(&self, n: usize) -> Vec<Child> {
        let mut out: Vec<Child> = self
            .by_sequence
            .iter()
            .take(n)
            .map(|(seq, name)| Child::new(name.clone(), Some(*seq)))
            .collect();
        if out.len() < n {
            out.extend(
                self.by_name
                    .iter()
                    .filter(|(_, seq)| seq.is_none())
                    .take(n - out.len())
                    .map(|(name, _)| Child::new(name.clone(), None)),
            );
        }
        out
    }

    /// Where `me` stands ([`coord_core::backend::order::place_in`]'s
    /// answer): an index lookup, then a walk back from `me` to the nearest
    /// blocker (one step for [`Blockers::All`]).
    pub(crate) fn place(&self, me: &Child, blockers: Blockers<'_>) -> Place {
        let Some(my_seq) = me.sequence else {
            return Place::Gone;
        };
        if self.by_name.get(&me.name) != Some(&Some(my_seq)) {
            return Place::Gone;
        }
        self.by_sequence
            .range(..my_seq)
            .rev()
            .find(|(_, name)| blockers.blocks(name))
            .map_or(Place::First, |(seq, name)| {
                Place::Behind(Child::new(name.clone(), Some(*seq)))
            })
    }
}

#[cfg(test)]
mod tests {
    use coord_core::backend::order::{first_in, place_in};

    use super::*;

    #[test]
    fn answers_equal_a_listing() {
        let mut k = Kids::default();
        for (name, seq) in [
            ("w-3", Some(3)),
            ("r-1", Some(1)),
            ("plain", None),
            ("r-5", Some(5)),
            ("w-7", Some(7)),
            ("b-plain", None),
            ("gone-4", Some(4)),
        ] {
            k.insert(name, seq);
        }
        k.remove("gone-4");
        let all = k.prefixed("");
        assert_eq!(all.len(), 6);
        assert_eq!(all[4].name, "b-plain", "unsequenced by name, last");
        for n in 0..9 {
            assert_eq!(k.first(n), first_in(all.clone(), n));
        }
        let probes = all
            .iter()
            .cloned()
            .chain([Child::new("gone-4".into(), Some(4))])
            .chain([Child::new("w-7".into(), Some(8))]);
        for me in probes {
            for b in [Blockers::All, Blockers::Unmarked(&["r-"])] {
                assert_eq!(k.place(&me, b), place_in(&all, &me, b), "{me:?} {b:?}");
            }
        }
    }
}

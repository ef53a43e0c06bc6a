//! Node names: the sequence suffix ZooKeeper appends, and the protected
//! prefix (`_c_<uuid>-`, Curator's "protected mode", which coord's recipes
//! use too) by which a sequential create whose answer was lost is found
//! again.

use coord_core::Child;

/// How many digits ZooKeeper appends to a sequential node's name.
pub(crate) const SEQUENCE_DIGITS: usize = 10;

/// The marker Curator (and coord's recipes) put in front of a protected name.
const PROTECTED_MARK: &str = "_c_";

/// The sequence a child's name carries: its last ten characters, when they are
/// all ASCII digits. Nodes made by Curator or kazoo (`…-lock-0000000003`,
/// `…__lock__0000000001`) carry one too, so they order with ours.
pub(crate) fn sequence_of(name: &str) -> Option<u64> {
    let bytes = name.as_bytes();
    if bytes.len() < SEQUENCE_DIGITS {
        return None;
    }
    let tail = &bytes[bytes.len() - SEQUENCE_DIGITS..];
    if !tail.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // Ten ASCII digits always fit in a u64.
    std::str::from_utf8(tail).ok()?.parse().ok()
}

/// Sort children as the contract says: those with a sequence first, by
/// sequence (then name), then the others by name.
pub(crate) fn into_children(names: Vec<String>) -> Vec<Child> {
    let mut children: Vec<Child> = names
        .into_iter()
        .map(|name| {
            let sequence = sequence_of(&name);
            Child::new(name, sequence)
        })
        .collect();
    children.sort_by(|a, b| match (a.sequence, b.sequence) {
        (Some(x), Some(y)) => x.cmp(&y).then_with(|| a.name.cmp(&b.name)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.name.cmp(&b.name),
    });
    children
}

/// The protected id at the start of `name` (`_c_<uuid>`, without the dash
/// that follows), if it has one. The uuid may be hyphenated (Curator) or
/// simple (32 hex digits).
pub(crate) fn protected_id(name: &str) -> Option<&str> {
    let rest = name.strip_prefix(PROTECTED_MARK)?;
    for len in [36, 32] {
        if rest.len() > len
            && rest.as_bytes()[len] == b'-'
            && rest.is_char_boundary(len)
            && uuid::Uuid::try_parse(&rest[..len]).is_ok()
        {
            return Some(&name[..PROTECTED_MARK.len() + len]);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_is_the_ten_digit_suffix() {
        assert_eq!(sequence_of("lock-0000000042"), Some(42));
        assert_eq!(sequence_of("0000000000"), Some(0));
        assert_eq!(sequence_of("x2147483647"), Some(2_147_483_647));
        assert_eq!(
            sequence_of("_c_7b0d8c1e-4f8a-4c3e-9a55-0c1b2d3e4f50-lock-0000000003"),
            Some(3)
        );
        // kazoo's Lock names its nodes `<uuid>__lock__<seq>`.
        assert_eq!(
            sequence_of("0a1b2c3d4e5f40718293a4b5c6d7e8f9__lock__0000000001"),
            Some(1)
        );
        assert_eq!(sequence_of("lock-000000004"), None); // nine digits
        assert_eq!(sequence_of("lock-00000000x4"), None);
        assert_eq!(sequence_of("dir"), None);
        assert_eq!(sequence_of(""), None);
        // Ten digits at the end of a longer run: the last ten count.
        assert_eq!(sequence_of("12345678901"), Some(2_345_678_901));
        // Multi-byte characters before the digits are fine.
        assert_eq!(sequence_of("é0000000007"), Some(7));
        assert_eq!(sequence_of("ééééé"), None);
    }

    #[test]
    fn children_sort_sequenced_first() {
        let names = ["b", "x-0000000002", "a", "y-0000000001", "c-0000000002"]
            .map(String::from)
            .to_vec();
        let sorted: Vec<_> = into_children(names)
            .into_iter()
            .map(|c| (c.name, c.sequence))
            .collect();
        assert_eq!(
            sorted,
            vec![
                ("y-0000000001".to_owned(), Some(1)),
                ("c-0000000002".to_owned(), Some(2)),
                ("x-0000000002".to_owned(), Some(2)),
                ("a".to_owned(), None),
                ("b".to_owned(), None),
            ]
        );
    }

    #[test]
    fn protected_ids() {
        let hyphenated = "_c_7b0d8c1e-4f8a-4c3e-9a55-0c1b2d3e4f50-lock-";
        assert_eq!(
            protected_id(hyphenated),
            Some("_c_7b0d8c1e-4f8a-4c3e-9a55-0c1b2d3e4f50")
        );
        let simple = "_c_7b0d8c1e4f8a4c3e9a550c1b2d3e4f50-lock-";
        assert_eq!(
            protected_id(simple),
            Some("_c_7b0d8c1e4f8a4c3e9a550c1b2d3e4f50")
        );
        assert_eq!(protected_id("lock-"), None);
        assert_eq!(protected_id("_c_not-a-uuid-lock-"), None);
        // The uuid must be followed by a dash.
        assert_eq!(protected_id("_c_7b0d8c1e4f8a4c3e9a550c1b2d3e4f50"), None);
        assert_eq!(protected_id("_c_ééééééééééééééééééééé-x"), None);
    }
}

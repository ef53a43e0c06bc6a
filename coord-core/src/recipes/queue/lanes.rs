//! A queue's lanes: which of [`LANES`] lanes an item's name falls in, the
//! same in every process, and the name prefix that lists one lane alone.

/// How many lanes a consumer that met others splits the queue into.
pub(crate) const LANES: u64 = 16;

/// The lane of the item `name` among `lanes`, the same in every process:
/// for a name coord made, `_c_<uuid>-item-<seq>`, the first hex digit of
/// its random uuid, so one lane's names are those that begin with
/// [`lane_prefix`] and a backend that [lists by
/// prefix](crate::session::Session::lists_by_prefix) can list one lane
/// alone; for any other name, FNV-1a of the name.
pub(crate) fn lane_of(name: &str, lanes: u64) -> u64 {
    let lanes = lanes.max(1);
    let digit = name.strip_prefix(LANE_MARK).and_then(|r| r.chars().next());
    if let Some(d @ ('0'..='9' | 'a'..='f')) = digit {
        return u64::from(d.to_digit(16).unwrap_or(0)) % lanes;
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h % lanes
}

/// Narrow, a consumer lists one lane alone only while its last whole
/// listing held at least this many names (8 a lane): below that a whole
/// listing costs the server about what a lane's does (a request costs
/// etcd about what reading a hundred names does), and one whole listing
/// beats probing lanes that are mostly empty.
pub(crate) const NARROW_FROM: usize = 8 * LANES as usize;

/// What a coord-made item's name begins with, before its uuid.
const LANE_MARK: &str = crate::layout::PROTECTED;

/// The start of the names of lane `lane` (of [`LANES`]) that coord made.
pub(crate) fn lane_prefix(lane: u64) -> String {
    format!("{LANE_MARK}{lane:x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every process must put a name in the same lane: a name coord made
    /// by its uuid's first hex digit (so a lane is the names that begin
    /// with its prefix), any other by FNV-1a, pinned by its published test
    /// vector, not a per-process seeded hasher.
    #[test]
    fn lanes_are_the_uuids_first_digit_else_fnv1a() {
        assert_eq!(lane_of("a", u64::MAX), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(lane_of("_c_G-item-1", u64::MAX), lane_of_fnv("_c_G-item-1"));
        assert_eq!(lane_of("_c_A-item-1", u64::MAX), lane_of_fnv("_c_A-item-1"));
        for i in 0..200 {
            // A name as coord makes it, with a fresh uuid.
            let name = crate::layout::protected(crate::layout::ITEM) + &format!("{i:010}");
            let lane = lane_of(&name, LANES);
            assert!(
                name.starts_with(&lane_prefix(lane)),
                "{name} in lane {lane}"
            );
        }
        assert_eq!(lane_of("_c_f0-item-1", LANES), 15);
        assert_eq!(lane_prefix(10), "_c_a");
    }

    fn lane_of_fnv(name: &str) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in name.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h
    }
}

//! ZooKeeper's stats as coord's: the stamp (czxid), the version, the
//! owner of an ephemeral node and the creation time.

use std::time::Duration;

use coord_core::{Created, SessionId};
use zookeeper_client as zk;

/// The [`Created`] for a node at `path` with `stat`.
pub(crate) fn created(path: String, sequence: Option<u64>, stat: &zk::Stat) -> Created {
    Created::new(path, sequence, stamp_of(stat), version_of(stat))
}

/// The stamp: czxid, which increases with every create in the ensemble.
pub(crate) fn stamp_of(stat: &zk::Stat) -> u64 {
    u64::try_from(stat.czxid).unwrap_or(0)
}

/// The data version.
pub(crate) fn version_of(stat: &zk::Stat) -> u64 {
    u64::try_from(stat.version).unwrap_or(0)
}

/// coord's stat of a ZooKeeper stat.
pub(crate) fn stat_of(stat: &zk::Stat) -> coord_core::Stat {
    let owner = session_owner(stat.ephemeral_owner);
    coord_core::Stat::new(
        version_of(stat),
        stamp_of(stat),
        owner.is_some(),
        created_at_of(stat),
    )
    .with_owner(
        // As the owner's `id()` shows it: the client's session id, `0x…`.
        owner.map(|o| SessionId(zk::SessionId(o).to_string())),
    )
}

/// The session owning a node, from its `ephemeralOwner`: `None` for 0 (a
/// persistent node) and for the values ZooKeeper stores there for nodes
/// that no session owns: a container (`i64::MIN`) and the extended types
/// (top byte `0xff`: a TTL node keeps its TTL in the low 40 bits).
pub(crate) fn session_owner(ephemeral_owner: i64) -> Option<i64> {
    let extended = (ephemeral_owner as u64) >> 56 == 0xff;
    (ephemeral_owner != 0 && ephemeral_owner != i64::MIN && !extended).then_some(ephemeral_owner)
}

/// The creation time: `ctime`, milliseconds since the epoch by the clock of
/// the server that applied the create. The root (and a stat the server left
/// out) carries 0: no time.
pub(crate) fn created_at_of(stat: &zk::Stat) -> Option<std::time::SystemTime> {
    let ms = u64::try_from(stat.ctime).ok().filter(|ms| *ms > 0)?;
    std::time::SystemTime::UNIX_EPOCH.checked_add(Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only a real session id owns a node: not 0 (persistent), not a
    /// container's `i64::MIN`, not a TTL node's `0xff…` with its TTL.
    #[test]
    fn only_sessions_own_nodes() {
        assert_eq!(session_owner(0), None);
        assert_eq!(session_owner(i64::MIN), None);
        let ttl_node = (0xffu64 << 56 | 2000) as i64;
        assert_eq!(session_owner(ttl_node), None);
        assert_eq!(
            session_owner(0x0100_0123_4567_0001),
            Some(0x0100_0123_4567_0001)
        );
    }
}

//! [`PersistentMode`]: what kind of node a
//! [`PersistentNode`](super::PersistentNode) keeps, and what each kind
//! means for its name, its checks and its upkeep.

use std::time::Duration;

use crate::backend::node::CreateMode;
use crate::error::{Error, Result};
use crate::layout;
use crate::path;

/// The kind of node a [`PersistentNode`](super::PersistentNode) keeps
/// (Curator's `PersistentNode` modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PersistentMode {
    /// An ephemeral node at the path given: it goes with each session and
    /// is made again, at the same path, on the next. A node already at
    /// that path (the last session's, not yet ended on the server, or
    /// anyone else's) is waited for to go first.
    Ephemeral,
    /// An ephemeral node with a unique name: under the parent of the path
    /// given, named `_c_<uuid>-<last segment><sequence>` (the protected
    /// form the other recipes use, Curator's), a new name each time it is
    /// made. The last session's node is waited for to go before the next
    /// is made, so there are never two at once.
    EphemeralSequential,
    /// A TTL node at the path given ([`CreateMode::PersistentWithTtl`];
    /// the TTL at least 150 ms):
    /// it does not go with a session; while a session lives it is written
    /// again every third of the TTL, so it stays, and once no session
    /// keeps it, it goes after the TTL. A node already at the path is
    /// taken over (written with this node's data). Needs TTL nodes on the
    /// server: a ZooKeeper server started without
    /// `-Dzookeeper.extendedTypesEnabled=true` refuses them, which the node
    /// reports as [`Presence::Failed`](super::Presence::Failed) with
    /// [`Error::NotSupported`](crate::Error::NotSupported).
    PersistentWithTtl(Duration),
}

/// The shortest pause between two writes that keep a TTL node alive.
const MIN_TOUCH: Duration = Duration::from_millis(50);

/// The shortest TTL of a kept TTL node: three writes of it must fit in
/// one TTL.
pub(super) const MIN_KEPT_TTL: Duration = Duration::from_millis(150);

impl PersistentMode {
    /// Check `path` and the mode before any I/O.
    pub(super) fn validate(self, path: &str) -> Result<()> {
        path::validate_non_root(path)?;
        match self {
            PersistentMode::Ephemeral => Ok(()),
            // The name made, less its sequence, must pass too.
            PersistentMode::EphemeralSequential => path::validate_non_root(&self.target(path).0),
            PersistentMode::PersistentWithTtl(ttl) if ttl < MIN_KEPT_TTL => {
                Err(Error::InvalidArgument(format!(
                    "a persistent node's TTL of {ttl:?} is shorter than {MIN_KEPT_TTL:?}: \
                     it could not be written often enough to keep it"
                )))
            }
            PersistentMode::PersistentWithTtl(ttl) => CreateMode::PersistentWithTtl(ttl).validate(),
        }
    }

    /// Whether the node goes with its session.
    pub(super) fn is_ephemeral(self) -> bool {
        !matches!(self, PersistentMode::PersistentWithTtl(_))
    }

    /// What to create for the node at `path`: the path (a prefix for a
    /// sequential create, with a fresh protected name) and the mode.
    pub(super) fn target(self, path: &str) -> (String, CreateMode) {
        match self {
            PersistentMode::Ephemeral => (path.to_owned(), CreateMode::Ephemeral),
            PersistentMode::EphemeralSequential => (
                path::join(path::parent(path), &layout::protected(path::name(path))),
                CreateMode::EphemeralSequential,
            ),
            PersistentMode::PersistentWithTtl(ttl) => {
                (path.to_owned(), CreateMode::PersistentWithTtl(ttl))
            }
        }
    }

    /// How often the node is written to keep it: a TTL node every third
    /// of its TTL; the others never.
    pub(super) fn touch_every(self) -> Option<Duration> {
        match self {
            PersistentMode::PersistentWithTtl(ttl) => Some((ttl / 3).max(MIN_TOUCH)),
            PersistentMode::Ephemeral | PersistentMode::EphemeralSequential => None,
        }
    }
}

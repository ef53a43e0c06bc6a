//! The node types of the primitive contract: what a session's state is,
//! how a node is created, what a read returns, and the operations of a
//! guarded write. Users see them too (re-exported at the crate root).

use crate::error::Result;

/// The state of a session. `Expired` and `Closed` are final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SessionState {
    /// Connected; its ephemeral nodes live.
    Connected,
    /// The connection dropped; the server may still hold the session, and
    /// operations fail with [`crate::Error::ConnectionLost`] until it is back
    /// (then `Connected` again) or found gone (then `Expired`).
    Suspended,
    /// The server ended the session: its ephemeral nodes are deleted. Final.
    Expired,
    /// The owner closed the session. Final.
    Closed,
}

impl SessionState {
    /// `Expired` or `Closed`.
    pub fn is_terminal(self) -> bool {
        matches!(self, SessionState::Expired | SessionState::Closed)
    }

    /// The error every operation of a session in this state fails with:
    /// [`crate::Error::SessionExpired`] for `Expired`,
    /// [`crate::Error::SessionClosed`] for `Closed`, `None` while the
    /// session lives.
    pub fn end_error(self) -> Option<crate::Error> {
        match self {
            SessionState::Expired => Some(crate::Error::SessionExpired),
            SessionState::Closed => Some(crate::Error::SessionClosed),
            SessionState::Connected | SessionState::Suspended => None,
        }
    }
}

/// A session's id, as the backend names it (ZooKeeper session id, etcd lease
/// id, …), for logs and for test hooks that expire a session.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(pub String);

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// How a node is created: persistent or ephemeral, sequential or not, and
/// for a persistent node optionally with a TTL.
///
/// # TTL nodes
/// [`CreateMode::PersistentWithTtl`] and
/// [`CreateMode::PersistentSequentialWithTtl`] make a persistent node (it
/// does not belong to the creating session and outlives its close or
/// expiry) that the backend deletes once it has gone its TTL without a
/// change. A `set` on the node is a change and restarts the TTL; a read is
/// not. The TTL must be at least [`MIN_NODE_TTL`] and at most
/// [`MAX_NODE_TTL`] (ZooKeeper's limit, used on every backend), otherwise
/// [`crate::Session::create`] refuses it with
/// [`crate::Error::InvalidArgument`] before any I/O. TTL creates are not
/// allowed in [`crate::Session::guarded`] (refused the same way).
///
/// The deletion is not exact to the millisecond, and differs per backend:
/// - ZooKeeper (3.5.3+): the server deletes the node at the first check of
///   its container reaper (`znode.container.checkIntervalMs`, 60 s by
///   default) after the TTL has passed since the last `set` (its `mtime`)
///   and while the node has no children: a child keeps it alive. The
///   server must run with `-Dzookeeper.extendedTypesEnabled=true`; a server
///   without it refuses the create, which coord reports as
///   [`crate::Error::NotSupported`] with `operation` naming the flag. The
///   TTL is rounded up to whole milliseconds.
/// - memory: as ZooKeeper, with an exact timer: deleted when the TTL has
///   passed since the create or the last `set`, or, if it still has
///   children then, as soon as the last one is gone.
/// - etcd: the key is attached to a lease of its own granted with the TTL
///   (rounded up to whole seconds, and at least the server's minimum lease
///   TTL), marked as a TTL node's by a key outside the tree on the same
///   lease; a `set` renews that lease once (a keep-alive), which restarts
///   its full TTL. etcd would delete the key alone and leave children
///   behind, so children of a TTL node are refused
///   ([`crate::Error::NotSupported`]), as under an ephemeral node. `get`,
///   `get_watch` and `set` cost one more read for a node on a lease not
///   the session's own (to tell a TTL node from another session's
///   ephemeral node). A TTL node deleted by hand leaves its lease (and
///   marker) on the server until the TTL runs out.
/// - Redis: the node gets a key of its own that expires after the TTL
///   (`PX`, set again by every `set`), tracked like a session's key: when
///   it expires, the node is deleted (and dropped from its parent's
///   children) by the same mechanism that deletes an ended session's
///   ephemeral nodes (the key's expiry notice, or the next read that finds
///   it gone). Children are refused as on etcd.
///
/// On every backend a TTL node's [`Stat`] says `ephemeral: false` and
/// `owner: None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CreateMode {
    /// Lives until deleted.
    Persistent,
    /// Lives until deleted; the backend makes the name unique and gives it a
    /// sequence.
    PersistentSequential,
    /// Deleted when its session ends.
    Ephemeral,
    /// Deleted when its session ends; unique name and a sequence. The name
    /// is unique among live nodes; a backend may give a session's new node
    /// the name of one that session deleted (etcd does, to keep its index
    /// small), never its sequence.
    EphemeralSequential,
    /// Persistent, but deleted by the backend once it has gone this long
    /// without a change (see [TTL nodes](CreateMode#ttl-nodes)).
    PersistentWithTtl(std::time::Duration),
    /// As [`CreateMode::PersistentWithTtl`], with a unique name and a
    /// sequence as [`CreateMode::PersistentSequential`].
    PersistentSequentialWithTtl(std::time::Duration),
}

/// The shortest TTL of a TTL node: 1 ms.
pub const MIN_NODE_TTL: std::time::Duration = std::time::Duration::from_millis(1);

/// The longest TTL of a TTL node: 2^40 - 1 ms (about 34.8 years),
/// ZooKeeper's limit, used on every backend.
pub const MAX_NODE_TTL: std::time::Duration = std::time::Duration::from_millis(0xFF_FFFF_FFFF);

impl CreateMode {
    /// Whether the node dies with its session.
    pub fn is_ephemeral(self) -> bool {
        matches!(
            self,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        )
    }

    /// Whether the backend appends to the name and assigns a sequence.
    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential
                | CreateMode::EphemeralSequential
                | CreateMode::PersistentSequentialWithTtl(_)
        )
    }

    /// The TTL of a TTL mode, `None` for the others.
    pub fn ttl(self) -> Option<std::time::Duration> {
        match self {
            CreateMode::PersistentWithTtl(ttl) | CreateMode::PersistentSequentialWithTtl(ttl) => {
                Some(ttl)
            }
            CreateMode::Persistent
            | CreateMode::PersistentSequential
            | CreateMode::Ephemeral
            | CreateMode::EphemeralSequential => None,
        }
    }

    /// Check a TTL mode's TTL: between [`MIN_NODE_TTL`] and
    /// [`MAX_NODE_TTL`]. Every other mode is valid.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] for a TTL out of that range.
    pub fn validate(self) -> Result<()> {
        let Some(ttl) = self.ttl() else {
            return Ok(());
        };
        if ttl < MIN_NODE_TTL {
            return Err(crate::Error::InvalidArgument(format!(
                "a node TTL of {ttl:?} is shorter than the minimum of {MIN_NODE_TTL:?}"
            )));
        }
        crate::limits::check("a node TTL", ttl, MAX_NODE_TTL).map(drop)
    }
}

/// What a node carries besides its data.
/// Built by backends with [`Stat::new`]; read its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stat {
    /// The data version: an opaque number that changes on every `set`, for
    /// compare-and-set. Compare it for equality only.
    pub version: u64,
    /// The node's stamp: taken from a counter that increases with every
    /// create anywhere in the store (ZooKeeper czxid, etcd create revision),
    /// so a later-created node always has a larger stamp. The fencing token.
    pub stamp: u64,
    /// Whether the node dies with its session.
    pub ephemeral: bool,
    /// When the node was created, by the server's clock (not this
    /// process's): ZooKeeper's `ctime`; on Redis the server's `TIME` taken
    /// by the create script and stored with the node; in memory the
    /// store's clock at the create. `None` on etcd, which keeps no time
    /// per key, for a node made by a client that recorded none (a Redis
    /// node made before coord-redis stored it), and for the root.
    ///
    /// Read it from [`PrimitiveSession::get`](crate::backend::PrimitiveSession::get); every backend also fills it
    /// in the stat a `set` answers with. For display and "since when"
    /// questions only: clocks of different servers disagree, so never
    /// order nodes by it (that is what [`Stat::stamp`] is for).
    pub created_at: Option<std::time::SystemTime>,
    /// The session that owns an ephemeral node, as that session's
    /// [`PrimitiveSession::id`](crate::backend::PrimitiveSession::id) shows it (ZooKeeper's `ephemeralOwner`,
    /// the etcd lease the key is attached to, the Redis or in-memory
    /// session that made it); `None` for a persistent node. Every backend
    /// fills it in what [`PrimitiveSession::get`](crate::backend::PrimitiveSession::get) answers and in the stat a
    /// `set` answers with. Shown by `inspect`; coord itself never decides
    /// anything by it.
    pub owner: Option<SessionId>,
}

impl Stat {
    /// A stat with these fields (see each field's docs).
    pub fn new(
        version: u64,
        stamp: u64,
        ephemeral: bool,
        created_at: Option<std::time::SystemTime>,
    ) -> Self {
        Stat {
            version,
            stamp,
            ephemeral,
            created_at,
            owner: None,
        }
    }

    /// This stat, owned by `owner` (an ephemeral node's session; see
    /// [`Stat::owner`]).
    pub fn with_owner(mut self, owner: Option<SessionId>) -> Self {
        self.owner = owner;
        self
    }
}

/// A node's data and stat, as read by [`PrimitiveSession::get`](crate::backend::PrimitiveSession::get).
/// Built by backends with [`Node::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Node {
    /// The data.
    pub data: Vec<u8>,
    /// Version, stamp, ephemerality.
    pub stat: Stat,
}

impl Node {
    /// A node with this data and stat.
    pub fn new(data: Vec<u8>, stat: Stat) -> Self {
        Node { data, stat }
    }
}

/// The answer to a create.
/// Built by backends with [`Created::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Created {
    /// The full path of the created node. For a sequential create it is the
    /// path asked for with a suffix that makes it unique among its siblings
    /// (ZooKeeper, memory and Redis: ten digits). Recipes name their nodes
    /// `_c_<uuid>-<kind>-` themselves (Curator's protected names), so a
    /// backend can find a create whose answer was lost by that prefix.
    pub path: String,
    /// For a sequential create, the sequence that orders this node among its
    /// siblings by creation (never parse it from the name).
    pub sequence: Option<u64>,
    /// The node's stamp (see [`Stat::stamp`]).
    pub stamp: u64,
    /// The node's first data version.
    pub version: u64,
}

impl Created {
    /// The answer to a create of the node at `path` (see each field's
    /// docs).
    pub fn new(path: String, sequence: Option<u64>, stamp: u64, version: u64) -> Self {
        Created {
            path,
            sequence,
            stamp,
            version,
        }
    }
}

/// One child of a directory, as listed by [`PrimitiveSession::children`](crate::backend::PrimitiveSession::children).
/// Built by backends with [`Child::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Child {
    /// The child's name (the last path segment).
    pub name: String,
    /// Orders siblings by creation. `Some` for every child created
    /// sequential; a backend may give one to other children too (on etcd
    /// every key has a create revision; on ZooKeeper any name ending in ten
    /// digits carries one, so nodes made by Curator or kazoo count — and so
    /// does a non-sequential name that happens to end in ten digits).
    pub sequence: Option<u64>,
}

impl Child {
    /// A child named `name` (the last path segment) with this sequence.
    pub fn new(name: String, sequence: Option<u64>) -> Self {
        Child { name, sequence }
    }
}

/// A node that must still exist with a given stamp for a guarded write to
/// happen: the hold a lock holder writes under. Two nodes at one path made
/// at different times have different stamps, so a fence is never fooled by a
/// node deleted and made again.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fence {
    /// The fence node (a lock holder's own node).
    pub path: String,
    /// Its stamp when the hold was taken (the fencing token).
    pub stamp: u64,
}

/// A write made only if a [`Fence`] holds: what a holder hands to
/// [`Hold::write`](crate::prelude::Hold::write) (or [`Session::guarded`](crate::Session::guarded)).
///
/// Build one with its constructors ([`Op::put`], [`Op::create`],
/// [`Op::set`], [`Op::set_if`], [`Op::delete`], …); data arguments take
/// anything that is bytes (`&str`, `String`, `&[u8]`, `Vec<u8>`, `b"…"`).
/// To write a value whether or not its node exists yet, use [`Op::put`]
/// (or [`Hold::put`](crate::prelude::Hold::put), which is `write(Op::put(..))`).
///
/// ```
/// use coord_core::{CreateMode, Op};
///
/// assert_eq!(
///     Op::set_if("/config/a", "v2", 7),
///     Op::Set { path: "/config/a".into(), data: b"v2".to_vec(), version: Some(7) },
/// );
/// let _ = Op::put("/config/a", b"v3");
/// let _ = Op::create_with("/jobs/job-", "x", CreateMode::PersistentSequential);
/// let _ = Op::delete("/config/a");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Op {
    /// Create a node (missing parents are made, as in `create`).
    Create {
        /// Path, or prefix for a sequential create.
        path: String,
        /// Data.
        data: Vec<u8>,
        /// Mode.
        mode: CreateMode,
    },
    /// Set a node's data, compare-and-set when `version` is given.
    Set {
        /// Path.
        path: String,
        /// Data.
        data: Vec<u8>,
        /// The expected current version, or `None` for any.
        version: Option<u64>,
    },
    /// Delete a node, compare-and-delete when `version` is given.
    Delete {
        /// Path.
        path: String,
        /// The expected current version, or `None` for any.
        version: Option<u64>,
    },
    /// Write a node's data whether or not it exists: set it (any version)
    /// if it does, else create it persistent (missing parents are made, as
    /// in `create`). The check and the write are one atomic step with the
    /// fence check: answered with [`OpResult::Created`] or
    /// [`OpResult::Set`], whichever happened. An existing node is
    /// overwritten as by a guarded [`Op::Set`]: it keeps its kind (an
    /// ephemeral node stays ephemeral, its owner's).
    Put {
        /// Path.
        path: String,
        /// Data.
        data: Vec<u8>,
    },
}

impl Op {
    /// [`Op::Create`] of a persistent node at `path`. Fails with
    /// [`crate::Error::AlreadyExists`] if there is one; see [`Op::put`]
    /// to overwrite instead.
    pub fn create(path: impl Into<String>, data: impl AsRef<[u8]>) -> Op {
        Op::create_with(path, data, CreateMode::Persistent)
    }

    /// [`Op::Create`] with a mode: ephemeral, sequential (`path` is then
    /// the prefix). TTL modes are refused by guarded writes.
    pub fn create_with(path: impl Into<String>, data: impl AsRef<[u8]>, mode: CreateMode) -> Op {
        Op::Create {
            path: path.into(),
            data: data.as_ref().to_vec(),
            mode,
        }
    }

    /// [`Op::Set`] of any version. Fails with [`crate::Error::NotFound`]
    /// when there is no node; see [`Op::put`] to create it then.
    pub fn set(path: impl Into<String>, data: impl AsRef<[u8]>) -> Op {
        Op::Set {
            path: path.into(),
            data: data.as_ref().to_vec(),
            version: None,
        }
    }

    /// [`Op::Set`] only if the node's version is still `version`
    /// (compare-and-set; [`crate::Error::VersionMismatch`] otherwise).
    pub fn set_if(path: impl Into<String>, data: impl AsRef<[u8]>, version: u64) -> Op {
        Op::Set {
            path: path.into(),
            data: data.as_ref().to_vec(),
            version: Some(version),
        }
    }

    /// [`Op::Put`]: create the node or overwrite it, whichever applies.
    pub fn put(path: impl Into<String>, data: impl AsRef<[u8]>) -> Op {
        Op::Put {
            path: path.into(),
            data: data.as_ref().to_vec(),
        }
    }

    /// [`Op::Delete`] of any version.
    pub fn delete(path: impl Into<String>) -> Op {
        Op::Delete {
            path: path.into(),
            version: None,
        }
    }

    /// [`Op::Delete`] only if the node's version is still `version`
    /// (compare-and-delete).
    pub fn delete_if(path: impl Into<String>, version: u64) -> Op {
        Op::Delete {
            path: path.into(),
            version: Some(version),
        }
    }

    /// The path the op writes (for a sequential create, the prefix).
    pub fn path(&self) -> &str {
        match self {
            Op::Create { path, .. }
            | Op::Set { path, .. }
            | Op::Delete { path, .. }
            | Op::Put { path, .. } => path,
        }
    }
}

/// The answer to a guarded write.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OpResult {
    /// What `Op::Create` made, or `Op::Put` when there was no node.
    Created(Created),
    /// The stat after `Op::Set`, or after `Op::Put` over an existing node.
    Set(Stat),
    /// `Op::Delete` happened.
    Deleted,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_constructors_build_their_variants() {
        let data = b"v".to_vec();
        assert_eq!(
            Op::create("/a", "v"),
            Op::Create {
                path: "/a".into(),
                data: data.clone(),
                mode: CreateMode::Persistent
            }
        );
        assert_eq!(
            Op::create_with("/a-", b"v", CreateMode::EphemeralSequential),
            Op::Create {
                path: "/a-".into(),
                data: data.clone(),
                mode: CreateMode::EphemeralSequential
            }
        );
        assert_eq!(
            Op::set(String::from("/a"), &data),
            Op::Set {
                path: "/a".into(),
                data: data.clone(),
                version: None
            }
        );
        assert_eq!(
            Op::set_if("/a", data.as_slice(), 3),
            Op::Set {
                path: "/a".into(),
                data: data.clone(),
                version: Some(3)
            }
        );
        assert_eq!(
            Op::put("/a", String::from("v")),
            Op::Put {
                path: "/a".into(),
                data
            }
        );
        assert_eq!(
            Op::delete("/a"),
            Op::Delete {
                path: "/a".into(),
                version: None
            }
        );
        assert_eq!(
            Op::delete_if("/a", 4),
            Op::Delete {
                path: "/a".into(),
                version: Some(4)
            }
        );
        assert_eq!(Op::put("/p", "").path(), "/p");
    }
}

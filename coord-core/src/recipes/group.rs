//! Group membership: [`Group`], its members and its watcher.

use std::collections::{HashMap, HashSet};

use crate::backend::node::CreateMode;
use crate::backend::watch::Watch;
use crate::error::{Error, Result};
use crate::hold::held::HeldNode;
use crate::layout;
use crate::machinery::pending::PendingNode;
use crate::machinery::retry::{
    get_many_retrying, list_retrying, list_watch_retrying, settle_watch,
};
use crate::machinery::stream::{resumable_stream, Advance, Resumable};
use crate::path;
use crate::session::Session;
use crate::telemetry::{self, Recipe};

/// A process group at a directory path (the ZooKeeper paper's group
/// membership, §2.4), made by [`Group::new`]`(session, path)`. Join it with
/// [`Group::join`] (a generated name) or [`Group::join_as`] (your own), and
/// leave by [`Membership::leave`]; read the members with
/// [`Group::members`], and follow who joins and leaves with
/// [`Group::watch`].
///
/// Each member is an ephemeral child of the group's directory, the member's
/// data as its data (`_c_<uuid>-member-<seq>` for a generated name), so a
/// member whose process dies (its session ends) leaves the group by itself,
/// and everyone watching sees it go. Anyone may read or watch the group
/// without joining it.
///
/// ```
/// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
/// use coord_core::recipes::Group;
/// let group = Group::new(&session, "/groups/workers")?;
/// let me = group.join_as("worker-7", b"10.0.0.7:8080").await?;
/// for m in group.members().await? {
///     println!("{} at {}", m.name, String::from_utf8_lossy(&m.data));
/// }
/// me.leave().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Group {
    session: Session,
    dir: String,
}

/// One member as read from the server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Member {
    /// The member node's name (its last path segment).
    pub name: String,
    /// The data it joined with.
    pub data: Vec<u8>,
}

/// A change seen by a [`GroupWatcher`]: the whole group after it, and who
/// joined and left since the previous one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupChange {
    /// Every member now, by node name.
    pub members: Vec<Member>,
    /// Names that joined since the previous change (all of them, the first
    /// time).
    pub joined: Vec<String>,
    /// Names that left since the previous change.
    pub left: Vec<String>,
}

impl Group {
    /// A group at `path` (a directory; made on first use).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or `/`.
    pub fn new(session: &Session, path: &str) -> Result<Self> {
        path::validate_non_root(path)?;
        Ok(Group {
            session: session.clone(),
            dir: path.to_owned(),
        })
    }

    /// The group's directory.
    pub fn path(&self) -> &str {
        &self.dir
    }

    /// Join with `data` under a unique generated name
    /// (`_c_<uuid>-member-<seq>`, the paper's SEQUENTIAL flag). `data` is
    /// any bytes (`&str`, `String`, `&[u8]`, `Vec<u8>`, `b"…"`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for data over the limit; session errors.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped, no member node is left behind.
    pub async fn join(&self, data: impl AsRef<[u8]>) -> Result<Membership> {
        let data = data.as_ref();
        path::validate_data(data)?;
        let prefix = path::join(&self.dir, &layout::protected(layout::MEMBER));
        self.join_at(prefix, data, CreateMode::EphemeralSequential)
            .await
    }

    /// Join with `data` under `name`, when each process has a unique name.
    ///
    /// # Errors
    /// [`Error::AlreadyExists`] when a live member has that name;
    /// [`Error::InvalidPath`] for a name with a `/` or otherwise bad;
    /// [`Error::InvalidArgument`] for data over the limit; session errors.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped, no member node is left behind.
    pub async fn join_as(&self, name: &str, data: impl AsRef<[u8]>) -> Result<Membership> {
        let data = data.as_ref();
        path::validate_data(data)?;
        let node = path::join_segment(&self.dir, name)?;
        self.join_at(node, data, CreateMode::Ephemeral).await
    }

    async fn join_at(&self, node: String, data: &[u8], mode: CreateMode) -> Result<Membership> {
        let join = self.join_untraced(node, data, mode);
        telemetry::operation(Recipe::Group, &self.session, &self.dir, join).await
    }

    async fn join_untraced(
        &self,
        node: String,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<Membership> {
        let mut pending = PendingNode::spawn(&self.session, node, data.to_vec(), mode);
        pending.created().await?;
        let created = pending.take().ok_or_else(|| {
            Error::backend(self.session.backend(), "lost track of our member node")
        })?;
        Ok(Membership {
            held: HeldNode::new(self.session.clone(), created),
        })
    }

    /// Every member now, with its data.
    ///
    /// # Errors
    /// Session errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn members(&self) -> Result<Vec<Member>> {
        let children = list_retrying(&self.session, &self.dir).await?;
        self.read_members(children.into_iter().map(|c| c.name).collect())
            .await
    }

    /// Member names now, without their data (one round trip).
    ///
    /// # Errors
    /// Session errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn member_names(&self) -> Result<Vec<String>> {
        let children = list_retrying(&self.session, &self.dir).await?;
        Ok(children.into_iter().map(|c| c.name).collect())
    }

    /// Read the data of `names` ([`Session::get_many`]: a batch per
    /// request where the backend reads many at once); those gone meanwhile
    /// are left out. Kept in the order given.
    async fn read_members(&self, names: Vec<String>) -> Result<Vec<Member>> {
        let paths: Vec<String> = names.iter().map(|n| path::join(&self.dir, n)).collect();
        let nodes = get_many_retrying(&self.session, &paths).await?;
        Ok(names
            .into_iter()
            .zip(nodes)
            .filter_map(|(name, node)| node.map(|n| Member { name, data: n.data }))
            .collect())
    }

    /// Follow membership changes; see [`GroupWatcher`].
    pub fn watch(&self) -> GroupWatcher {
        GroupWatcher(Resumable::new(Follow {
            group: self.clone(),
            last: None,
            known: HashMap::new(),
            watch: None,
        }))
    }
}

/// Follows a group: the first [`GroupWatcher::next`] returns the group as
/// it is, each later one waits for the set of members to change. It
/// watches the directory, so it never misses that a member left or joined
/// — though a member that joins and leaves between two reads is not seen.
/// Each member's data is read once, when the watcher first sees it,
/// however often the group changes (the newcomers of a change together,
/// with [`Session::get_many`]: on etcd, Redis and PostgreSQL a batch per
/// request): a later
/// [`Membership::set_data`] shows in [`Group::members`], not in the
/// watcher's changes.
///
/// An [event stream](crate#event-streams) of `Result<GroupChange>`: an
/// error other than a lost connection is its last item.
#[derive(Debug)]
pub struct GroupWatcher(Resumable<Follow>);

/// What a [`GroupWatcher`] carries from one change to the next.
#[derive(Debug)]
struct Follow {
    group: Group,
    last: Option<Vec<String>>,
    /// The data of the members in `last`, read when each was first seen.
    known: HashMap<String, Vec<u8>>,
    watch: Option<Watch>,
}

resumable_stream!(
    GroupWatcher,
    GroupChange,
    /// The next change of the set of members; `None` after an error other
    /// than `ConnectionLost`.
    /// The same as [`StreamExt::next`](https://docs.rs/futures/latest/futures/stream/trait.StreamExt.html#method.next).
    ///
    /// # Errors
    /// `Some(Err)`: the session's end; backend errors. Connection drops
    /// are retried.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped, nothing is lost; the next call goes on from
    /// where this one was.
);

impl Advance for Follow {
    type Item = GroupChange;

    async fn advance(&mut self) -> Result<GroupChange> {
        let session = self.group.session.clone();
        let mut attempt = 0;
        loop {
            settle_watch(&mut self.watch, &mut attempt).await?;
            let (children, w) = list_watch_retrying(&session, &self.group.dir).await?;
            let names: Vec<String> = children.into_iter().map(|c| c.name).collect();
            if self.last.as_ref() == Some(&names) {
                self.watch = Some(w);
                continue;
            }
            let before: HashSet<&String> = self.last.iter().flatten().collect();
            let now: HashSet<&String> = names.iter().collect();
            let joined: Vec<String> = names
                .iter()
                .filter(|n| !before.contains(n))
                .cloned()
                .collect();
            let left: Vec<String> = self
                .last
                .iter()
                .flatten()
                .filter(|n| !now.contains(n))
                .cloned()
                .collect();
            // Keep the watch only once the change is returned: were this
            // step dropped while reading the members, the next one would
            // list again at once instead of waiting on a watch that has
            // already seen this change. Only members not read yet are
            // read (the newcomers, and any found gone while being read): a
            // member's data is read once, not again at every change (with
            // N members joining, that was O(N) reads per change).
            let unread = names
                .iter()
                .filter(|n| !self.known.contains_key(*n))
                .cloned()
                .collect();
            let fresh = self.group.read_members(unread).await?;
            let mut known: HashMap<String, Vec<u8>> = names
                .iter()
                .filter_map(|n| self.known.remove_entry(n))
                .collect();
            known.extend(fresh.into_iter().map(|m| (m.name, m.data)));
            let members = names
                .iter()
                .filter_map(|n| {
                    known.get(n).map(|data| Member {
                        name: n.clone(),
                        data: data.clone(),
                    })
                })
                .collect();
            self.known = known;
            self.watch = Some(w);
            self.last = Some(names);
            return Ok(GroupChange {
                members,
                joined,
                left,
            });
        }
    }
}

/// This process's membership in a [`Group`]. [`Membership::leave`] leaves;
/// dropping it leaves in the background; the session's end leaves too.
#[must_use = "dropping a membership leaves the group"]
#[derive(Debug)]
pub struct Membership {
    held: HeldNode,
}

impl telemetry::Outcome for Membership {
    fn holds(&mut self, f: &mut dyn FnMut(&mut dyn telemetry::Follow)) {
        f(&mut self.held);
    }
}

impl Membership {
    /// The member node's name.
    pub fn name(&self) -> &str {
        path::name(self.held.path())
    }

    /// The member node's full path.
    pub fn path(&self) -> &str {
        self.held.path()
    }

    /// Replace this member's data (any bytes, as [`Group::join`]'s).
    ///
    /// # Errors
    /// [`Error::LockLost`] when no longer a member; session errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may land after the drop.
    pub async fn set_data(&self, data: impl AsRef<[u8]>) -> Result<()> {
        let data = data.as_ref();
        path::validate_data(data)?;
        self.held
            .write(crate::backend::node::Op::Set {
                path: self.held.path().to_owned(),
                data: data.to_vec(),
                version: None,
            })
            .await?;
        Ok(())
    }

    /// Resolve when membership is lost (the session ended, or the node was
    /// deleted). Returns why.
    ///
    /// # Errors
    /// None: it resolves *to* the reason the hold was lost.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn lost(&self) -> Error {
        self.held.lost().await
    }

    /// Leave the group.
    ///
    /// # Errors
    /// [`Error::LockLost`] when already out of it; session errors.
    ///
    /// # Cancel safety
    /// Cancel safe in effect: dropped, the leave finishes in the background.
    pub async fn leave(self) -> Result<()> {
        self.held.release().await
    }
}

crate::hold::impl_hold!(Membership, |m| &m.held, leave);

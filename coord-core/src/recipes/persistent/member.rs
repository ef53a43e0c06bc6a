//! [`GroupMember`]: a [`Group`](crate::recipes::Group) membership that
//! comes back on every new session (Curator's `GroupMember`), built on
//! [`PersistentNode`].

use std::time::Duration;

use super::mode::PersistentMode;
use super::node::PersistentNode;
use super::presence::{Presence, PresenceWatcher};
use crate::client::Client;
use crate::error::Result;
use crate::path;

/// This process's membership in a [`Group`](crate::recipes::Group), kept
/// on every session of a [`Client`] with the same member name and data
/// (Curator's `GroupMember`), made by [`GroupMember::join`].
///
/// The member is the ephemeral node `<group>/<name>` with the member's
/// data, exactly as [`Group::join_as`](crate::recipes::Group::join_as)
/// makes it: [`Group::members`](crate::recipes::Group::members) and
/// [`Group::watch`](crate::recipes::Group::watch), on any session, see it.
/// It is a [`PersistentNode`] in [`PersistentMode::Ephemeral`], so:
///
/// - **re-established**: on each new session of the client the member
///   joins again, under the same name, with its data as it is then (the
///   last [`set_data`](GroupMember::set_data)'s); if the last session's
///   member node is still on the server (the client gave that session up
///   before the server ended it), it waits for it to go first, so the
///   name is never held twice; a member node deleted by someone else
///   while the session lives is made again at once. A member of the same
///   name held by another live session is waited for to leave.
/// - **reported**: [`GroupMember::watch`] reports
///   [`Presence::Present`] once a member (with the generation of the
///   session it joined on), [`Presence::Absent`] as soon as the membership
///   is lost (always before it is back), [`Presence::Failed`] if the
///   server refuses it for good (an ACL).
///
/// [`GroupMember::leave`] leaves and stops rejoining; dropping it does the
/// same with the leave in the background.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> coord_core::Result<()> {
/// use std::time::Duration;
/// use coord_core::client::ClientOptions;
/// use coord_core::recipes::{Group, GroupMember};
/// let store = coord_mem::MemStore::new();
/// let client = store.client(Duration::from_secs(10), ClientOptions::default());
/// let me = GroupMember::join(&client, "/groups/workers", "worker-7", "10.0.0.7:8080")?;
/// me.wait_joined(Duration::from_secs(5)).await?;
/// let group = Group::new(&store.open(), "/groups/workers")?;
/// assert_eq!(group.member_names().await?, ["worker-7"]);
/// me.leave().await?;
/// client.close().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping a group member leaves the group"]
#[derive(Debug)]
pub struct GroupMember {
    node: PersistentNode,
    name: String,
    path: String,
}

impl GroupMember {
    /// Join the group at `group` as `name` with `data` (any bytes), on
    /// every session of `client`. It returns at once; the member joins in
    /// the background ([`GroupMember::wait_joined`] waits for it).
    ///
    /// # Errors
    /// Before any I/O: [`Error::InvalidPath`](crate::Error::InvalidPath)
    /// for a bad group path (or `/`) or a bad name (one with a `/`), as
    /// [`Group::join_as`](crate::recipes::Group::join_as);
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for data
    /// over the limit; [`Error::SessionClosed`](crate::Error::SessionClosed)
    /// if the client is closed.
    ///
    /// # Panics
    /// Outside a tokio runtime: the member is kept by a task on it.
    pub fn join(
        client: &Client,
        group: &str,
        name: &str,
        data: impl AsRef<[u8]>,
    ) -> Result<GroupMember> {
        path::validate_non_root(group)?;
        let path = crate::path::join_segment(group, name)?;
        let node = PersistentNode::start(client, &path, data, PersistentMode::Ephemeral)?;
        Ok(GroupMember {
            node,
            name: name.to_owned(),
            path,
        })
    }

    /// The member's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The member node's path, `<group>/<name>`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The member's data: the last [`set_data`](GroupMember::set_data)'s,
    /// or the data it joined with.
    pub fn data(&self) -> Vec<u8> {
        self.node.data()
    }

    /// Whether it is a member now.
    pub fn is_member(&self) -> bool {
        self.node.is_present()
    }

    /// Change the member's data (any bytes): written now if a member, and
    /// kept for every later rejoin; see [`PersistentNode::set_data`].
    ///
    /// # Errors
    /// As [`PersistentNode::set_data`].
    ///
    /// # Cancel safety
    /// Cancel safe in effect: once polled, the data is kept and the write
    /// goes on in the member's task.
    pub async fn set_data(&self, data: impl AsRef<[u8]>) -> Result<()> {
        self.node.set_data(data).await
    }

    /// Follow the membership: [`Presence::Present`] while a member,
    /// [`Presence::Absent`] while not; see [`PresenceWatcher`].
    pub fn watch(&self) -> PresenceWatcher {
        self.node.watch()
    }

    /// The membership now.
    pub fn presence(&self) -> Presence {
        self.node.presence()
    }

    /// Wait until a member, at most `timeout`.
    ///
    /// # Errors
    /// As [`PersistentNode::wait_present`].
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches.
    pub async fn wait_joined(&self, timeout: Duration) -> Result<()> {
        self.node.wait_present(timeout).await.map(drop)
    }

    /// Leave the group and stop rejoining; see [`PersistentNode::close`].
    ///
    /// # Errors
    /// As [`PersistentNode::close`].
    ///
    /// # Cancel safety
    /// Cancel safe in effect: once called, the leave goes on in the task.
    pub async fn leave(self) -> Result<()> {
        self.node.close().await
    }
}

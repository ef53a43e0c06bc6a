//! The reliable mode's take: lease an item by creating its claim, an
//! ephemeral node named after the item.

use crate::backend::node::CreateMode;
use crate::error::{Error, Result};
use crate::hold::held::HeldNode;
use crate::machinery::pending::PendingNode;
use crate::path;
use crate::session::Session;

/// An item leased by its claim node.
pub(crate) struct Claim {
    /// The claim node, held while the lease lasts.
    pub(crate) held: HeldNode,
    /// The item's node path.
    pub(crate) item: String,
    /// The item.
    pub(crate) data: Vec<u8>,
}

/// Lease the item `name` of the item directory `items` by creating its
/// claim in `claims`. `None` when someone else holds the lease or the item
/// is gone.
pub(crate) async fn try_claim(
    session: &Session,
    claims: &str,
    items: &str,
    name: &str,
) -> Result<Option<Claim>> {
    let claim = path::join(claims, name);
    let item = path::join(items, name);
    let mut pending = PendingNode::spawn(
        session,
        claim,
        session.id().0.into_bytes(),
        CreateMode::Ephemeral,
    );
    match pending.created().await {
        Ok(_) => {}
        Err(Error::AlreadyExists { .. }) => return Ok(None),
        Err(e) => return Err(e),
    }
    let node = match session.get(&item).await {
        Ok(n) => n,
        Err(e) => {
            pending.remove().await;
            return Err(e);
        }
    };
    let Some(node) = node else {
        // Acknowledged by someone else after our listing.
        pending.remove().await;
        return Ok(None);
    };
    let created = pending
        .take()
        .ok_or_else(|| Error::backend(session.backend(), "lost track of our own claim"))?;
    Ok(Some(Claim {
        held: HeldNode::new(session.clone(), created),
        item,
        data: node.data,
    }))
}

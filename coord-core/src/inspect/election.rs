//! An [`Election`](crate::recipes::Election) at a path.

use crate::error::Result;
use crate::hold::contenders;
use crate::inspect::reader::{Listing, Reader};
use crate::inspect::report::{Inspection, Kind, Role};
use crate::layout;
use crate::recipes::election::ElectionLayout;
/// Offers carry an election layout's marker (`lock-`, `LeaderSelector`'s,
/// is told apart from a lock's by [`super::lock`]).
pub(crate) async fn probe(r: &Reader<'_>, at: &Listing<'_>, out: &mut Inspection) -> Result<bool> {
    if election_markers()
        .iter()
        .filter(|m| **m != layout::LOCK)
        .any(|m| at.marked(m))
    {
        out.kind = Kind::Election;
        for c in contenders::list(r.session, at.path, &contenders::exclusive).await? {
            out.entries
                .push(r.contender(&c, Role::Leader, Role::Candidate).await?);
        }
        return Ok(true);
    }
    Ok(false)
}

/// The markers an election's offers may take, in any layout.
fn election_markers() -> [&'static str; 2] {
    [
        ElectionLayout::LeaderLatch.marker(),
        ElectionLayout::LeaderSelector.marker(),
    ]
}

//! A [`Group`](crate::recipes::Group) at a path, and what is left when no
//! recipe is recognised.

use crate::backend::node::Child;
use crate::error::Result;
use crate::inspect::reader::{Listing, Reader};
use crate::inspect::report::{Inspection, Kind, Role};
use crate::layout::MEMBER as MEMBER_MARKER;
use crate::path;
/// A group's members joined without a name carry its marker.
pub(crate) async fn probe(r: &Reader<'_>, at: &Listing<'_>, out: &mut Inspection) -> Result<bool> {
    if at.marked(MEMBER_MARKER) {
        group(r, at.path, at.children, out).await?;
        return Ok(true);
    }
    Ok(false)
}

/// No recipe's signs: named members (`Group::join_as`) are ephemeral
/// leaves; anything else is listed as it is.
pub(crate) async fn named_or_unknown(
    r: &Reader<'_>,
    at: &Listing<'_>,
    out: &mut Inspection,
) -> Result<()> {
    let path = at.path;
    let mut nodes = Vec::new();
    for c in at.children {
        let p = path::join(path, &c.name);
        if let Some(n) = r.get(&p).await? {
            nodes.push((p, n));
        }
    }
    if !nodes.is_empty() && nodes.iter().all(|(_, n)| n.stat.ephemeral) {
        out.kind = Kind::Group;
        for (p, n) in nodes {
            out.entries.push(r.entry(Role::Member, &p, n));
        }
        out.notes.push(
            "every node here is ephemeral, as a group's named members are (the nodes of \
             another client's lock or election that names them otherwise, such as \
             etcdctl's, look the same)"
                .to_owned(),
        );
    } else {
        out.kind = Kind::Unknown;
        for (p, n) in nodes {
            out.entries.push(r.entry(Role::Child, &p, n));
        }
        out.notes
            .push("no coord recipe lays its nodes out like this".to_owned());
    }
    Ok(())
}

async fn group(r: &Reader<'_>, dir: &str, children: &[Child], out: &mut Inspection) -> Result<()> {
    out.kind = Kind::Group;
    for c in children {
        let p = path::join(dir, &c.name);
        if let Some(n) = r.get(&p).await? {
            out.entries.push(r.entry(Role::Member, &p, n));
        }
    }
    Ok(())
}

//! A queue (any of [`crate::recipes`]' queues) at a path, or its items
//! directory.

use crate::backend::node::Child;
use crate::error::Result;
use crate::inspect::reader::{Listing, Reader};
use crate::inspect::report::{Inspection, Kind, QueueState, Role};
use crate::layout::{self, ITEM as ITEM_MARKER};
use crate::path;
use crate::recipes::queue::keys as queue_keys;
/// A queue keeps `items` or `claims`.
pub(crate) async fn probe(r: &Reader<'_>, at: &Listing<'_>, out: &mut Inspection) -> Result<bool> {
    if at.has(layout::QUEUE_ITEMS) || at.has(layout::QUEUE_CLAIMS) {
        queue(r, at.path, out).await?;
        return Ok(true);
    }
    Ok(false)
}

/// A queue's item directory: show the queue it belongs to.
pub(crate) async fn probe_items(
    r: &Reader<'_>,
    at: &Listing<'_>,
    out: &mut Inspection,
) -> Result<bool> {
    let path = at.path;
    if at.marked(ITEM_MARKER) && path::name(path) == layout::QUEUE_ITEMS && path != "/" {
        let parent = path::parent(path).to_owned();
        queue(r, &parent, out).await?;
        out.notes
            .push(format!("{path} holds the items of the queue at {parent}"));
        return Ok(true);
    }
    Ok(false)
}

async fn queue(r: &Reader<'_>, dir: &str, out: &mut Inspection) -> Result<()> {
    out.kind = Kind::Queue;
    let items_dir = path::join(dir, layout::QUEUE_ITEMS);
    let claims_dir = path::join(dir, layout::QUEUE_CLAIMS);
    let mut items: Vec<Child> = r
        .children(&items_dir)
        .await?
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.sequence.is_some())
        .collect();
    // A priority or delay queue's head is not its oldest item.
    let order = queue_keys::sort_for_inspection(&mut items);
    let claims = r.children(&claims_dir).await?.unwrap_or_default();
    let claimed = |name: &str| claims.iter().any(|c| c.name == name);
    // The head: the first item still there (one taken meanwhile is skipped).
    for c in &items {
        let p = path::join(&items_dir, &c.name);
        if let Some(n) = r.get(&p).await? {
            match order {
                queue_keys::Order::Priority => out.notes.push(
                    "items carry priority keys: the head is the lowest priority, the oldest \
                     among equals"
                        .to_owned(),
                ),
                queue_keys::Order::Delay => {
                    let due = queue_keys::parse_due(&c.name);
                    let now = queue_keys::now_ms();
                    out.notes.push(if due > now {
                        format!(
                            "items carry due times: the head is the earliest due, in {:.1} s \
                             (by this host's clock)",
                            (due - now) as f64 / 1000.0
                        )
                    } else {
                        "items carry due times: the head is the earliest due, due now".to_owned()
                    });
                }
                queue_keys::Order::Fifo => {}
            }
            let mut e = r.entry(Role::Head, &p, n);
            if claimed(&c.name) {
                e.session = r.claim_owner(&claims_dir, &c.name).await?;
            }
            out.entries.push(e);
            break;
        }
    }
    let head = out.entries.first().map(|e| path::name(&e.node).to_owned());
    let mut leased = 0;
    for c in &items {
        if !claimed(&c.name) {
            continue;
        }
        leased += 1;
        if head.as_deref() == Some(c.name.as_str()) {
            continue;
        }
        let p = path::join(&items_dir, &c.name);
        if let Some(n) = r.get(&p).await? {
            let mut e = r.entry(Role::Leased, &p, n);
            e.session = r.claim_owner(&claims_dir, &c.name).await?;
            out.entries.push(e);
        }
    }
    if out
        .entries
        .first()
        .is_some_and(|e| e.role == Role::Head && e.session.is_some())
    {
        out.notes
            .push("the head item is leased to a consumer (not yet acknowledged)".to_owned());
    }
    out.queue = Some(QueueState {
        len: items.len(),
        leased,
    });
    Ok(())
}

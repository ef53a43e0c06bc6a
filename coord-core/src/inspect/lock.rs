//! The lock family at a path: a [`SimpleLock`](crate::recipes::SimpleLock),
//! a [`Semaphore`](crate::recipes::Semaphore), a
//! [`RwLock`](crate::recipes::RwLock) or a [`Lock`](crate::recipes::Lock).

use crate::error::Result;
use crate::hold::contenders;
use crate::inspect::reader::{Listing, Reader};
use crate::inspect::report::{Inspection, Kind, MaxLeases, Role, Side};
use crate::layout;
use crate::path;
use crate::recipes::election::ElectionLayout;
use crate::recipes::lock::{RwLock, Semaphore};
/// A simple lock's one ephemeral `lock` node.
pub(crate) async fn probe_simple(
    r: &Reader<'_>,
    at: &Listing<'_>,
    out: &mut Inspection,
) -> Result<bool> {
    let Some(held) = r
        .simple_lock_holder(at.path, at.has(layout::SIMPLE_LOCK_NODE))
        .await?
    else {
        return Ok(false);
    };
    out.kind = Kind::SimpleLock;
    out.entries.push(held);
    out.notes
        .push("a simple lock's waiters make no node: only its holder is listed".to_owned());
    Ok(true)
}

/// A semaphore keeps `leases` or `locks`.
pub(crate) async fn probe_semaphore(
    r: &Reader<'_>,
    at: &Listing<'_>,
    max_leases: Option<u32>,
    out: &mut Inspection,
) -> Result<bool> {
    if at.has(layout::SEMAPHORE_LEASES) || at.has(layout::SEMAPHORE_LOCKS) {
        semaphore(r, at.path, max_leases, out).await?;
        return Ok(true);
    }
    Ok(false)
}

/// A read/write lock's nodes carry a reader's or a writer's marker.
pub(crate) async fn probe_rwlock(
    r: &Reader<'_>,
    at: &Listing<'_>,
    out: &mut Inspection,
) -> Result<bool> {
    if !(at.marked(layout::READ) || at.marked(layout::WRITE) || at.marked(layout::KAZOO_READ)) {
        return Ok(false);
    }
    out.kind = Kind::RwLock;
    let listed = RwLock::new(r.session, at.path)?.participants().await?;
    for c in listed {
        let side = if path::name(&c.node).contains(layout::READ)
            || path::name(&c.node).contains(layout::KAZOO_READ)
        {
            Side::Read
        } else {
            Side::Write
        };
        let mut e = r.contender(&c, Role::Holder, Role::Waiter).await?;
        e.side = Some(side);
        out.entries.push(e);
    }
    Ok(true)
}

/// An exclusive lock's nodes carry its marker (so do a `LeaderSelector`
/// election's offers).
pub(crate) async fn probe_lock(
    r: &Reader<'_>,
    at: &Listing<'_>,
    out: &mut Inspection,
) -> Result<bool> {
    if !at.marked(layout::LOCK) {
        return Ok(false);
    }
    out.kind = Kind::Lock;
    for c in contenders::list(r.session, at.path, &contenders::exclusive).await? {
        out.entries
            .push(r.contender(&c, Role::Holder, Role::Waiter).await?);
    }
    out.notes.push(format!(
        "an election in the LeaderSelector layout (offers named `{}`) looks the same: \
         its leader is the holder",
        ElectionLayout::LeaderSelector.marker()
    ));
    Ok(true)
}

async fn semaphore(
    r: &Reader<'_>,
    dir: &str,
    max_leases: Option<u32>,
    out: &mut Inspection,
) -> Result<()> {
    out.kind = Kind::Semaphore;
    if let Some(n) = max_leases {
        out.max_leases = Some(MaxLeases::Given(n));
        let listed = Semaphore::new(r.session, dir, n)?.participants().await?;
        for c in listed {
            out.entries
                .push(r.contender(&c, Role::Holder, Role::Waiter).await?);
        }
        return Ok(());
    }
    let leases_dir = path::join(dir, layout::SEMAPHORE_LEASES);
    let mut leases = contenders::list(r.session, &leases_dir, &|_, _| false).await?;
    let waiting = contenders::list(
        r.session,
        &path::join(dir, layout::SEMAPHORE_LOCKS),
        &contenders::exclusive,
    )
    .await?;
    // The first waiter holds the internal lock and counts the leases; while
    // there is no room its own lease node is the newest: a lease made
    // after it without the lock (the semaphore's fast path) is kept only
    // if the waiter fits too, and then it is about to take its own; one
    // that does not fit is deleted at once.
    let counting = match (waiting.first(), leases.last()) {
        // Its lease is made after its lock node.
        (Some(w), Some(l)) => l.stamp > w.stamp,
        _ => false,
    };
    if counting {
        leases.pop();
        out.max_leases = Some(MaxLeases::Inferred(
            u32::try_from(leases.len()).unwrap_or(u32::MAX),
        ));
        out.notes.push(
            "the lease count is inferred: the first waiter is counting, and its own lease \
             node (the newest) is not counted as held; give the lease count to be exact"
                .to_owned(),
        );
    } else {
        out.max_leases = Some(MaxLeases::AtLeast(
            u32::try_from(leases.len()).unwrap_or(u32::MAX),
        ));
    }
    for c in &leases {
        out.entries
            .push(r.contender(c, Role::Holder, Role::Holder).await?);
    }
    for c in &waiting {
        out.entries
            .push(r.contender(c, Role::Waiter, Role::Waiter).await?);
    }
    Ok(())
}

//! A [`PeriodicJob`](crate::recipes::PeriodicJob) at a path.

use crate::backend::node::Node;
use crate::error::Result;
use crate::hold::contenders;
use crate::inspect::reader::{Listing, Reader};
use crate::inspect::report::{Inspection, JobState, Kind, Role};
use crate::layout;
use crate::path;
/// A periodic job keeps `last` or `started`, or a `lock` directory.
pub(crate) async fn probe(r: &Reader<'_>, at: &Listing<'_>, out: &mut Inspection) -> Result<bool> {
    if at.has(layout::JOB_LAST)
        || at.has(layout::JOB_STARTED)
        || (at.has(layout::JOB_LOCK) && r.is_dir(at.path, layout::JOB_LOCK).await?)
    {
        job(r, at.path, out).await?;
        return Ok(true);
    }
    Ok(false)
}

async fn job(r: &Reader<'_>, dir: &str, out: &mut Inspection) -> Result<()> {
    out.kind = Kind::PeriodicJob;
    let period = |n: Option<Node>| -> Option<u64> {
        std::str::from_utf8(&n?.data).ok()?.trim().parse().ok()
    };
    let last = r.get(&path::join(dir, layout::JOB_LAST)).await?;
    let started = r.get(&path::join(dir, layout::JOB_STARTED)).await?;
    out.job = Some(JobState {
        last_run: period(last),
        started: period(started),
    });
    let lock = path::join(dir, layout::JOB_LOCK);
    for c in contenders::list(r.session, &lock, &contenders::exclusive).await? {
        out.entries
            .push(r.contender(&c, Role::Holder, Role::Waiter).await?);
    }
    if out.count(Role::Holder) > 0 {
        out.notes.push(
            "the holder of the job's lock is running it now (its stamp is the run's \
             fencing token)"
                .to_owned(),
        );
    }
    Ok(())
}

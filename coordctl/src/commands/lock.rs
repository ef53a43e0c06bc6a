//! `coordctl lock PATH [--timeout D] [--shared | --write | --leases N]
//! [--revocable] -- CMD…`

use coordination::prelude::*;
use coordination::{Lock, RwLock, Semaphore};

use super::hold::{Held, UnderHold};
use crate::cli::LockArgs;
use crate::ctx::Ctx;
use crate::exit::{self, Failure};

pub async fn lock(ctx: &Ctx, a: LockArgs) -> Result<u8, Failure> {
    let what = format!("lock {}", a.path);
    // A bad path is a usage error before any I/O (each recipe checks the
    // same).
    coordination::path::validate_non_root(&a.path).map_err(|e| Failure::coord(&what, e))?;
    let session = ctx.open().await?;
    if let Some(n) = a.leases {
        return lease(ctx, &session, &a, n).await;
    }
    let lock: Box<dyn Lockable> = if a.shared || a.write {
        let rw = RwLock::new(&session, &a.path).map_err(|e| Failure::coord(&what, e))?;
        if a.shared {
            Box::new(rw.read_lock())
        } else {
            Box::new(rw.write_lock())
        }
    } else {
        Box::new(Lock::new(&session, &a.path).map_err(|e| Failure::coord(&what, e))?)
    };
    let under = UnderHold::new(ctx, Held::Lock(&a.path), &a.cmd)
        .fencing_token()
        .revocable(a.revocable);
    let ran = match a.timeout {
        Some(t) => lock.run_timeout(t, |hold| under.body(hold)).await,
        None => lock.run(|hold| under.body(hold)).await,
    };
    under.outcome(ran).await
}

/// `--leases N`: CMD under one of the N leases of the semaphore at PATH.
/// A lease is not a `Lockable` (a semaphore grants N), so it is acquired
/// here and held with `while_held`, as `run` does for a lock.
async fn lease(
    ctx: &Ctx,
    session: &coordination::Session,
    a: &LockArgs,
    max_leases: u32,
) -> Result<u8, Failure> {
    let what = format!("lock {}", a.path);
    let sem = Semaphore::new(session, &a.path, max_leases).map_err(|e| Failure::coord(&what, e))?;
    // Not revocable: clap refuses --revocable with --leases.
    let under = UnderHold::new(ctx, Held::Lease(&a.path), &a.cmd).fencing_token();
    let leases = match a.timeout {
        Some(t) => sem.acquire_timeout(1, t).await,
        None => sem.acquire(1).await,
    };
    let ran = match leases {
        Ok(mut leases) => match (leases.pop(), leases.is_empty()) {
            (Some(lease), true) => coordination::while_held(lease, |hold| under.body(hold)).await,
            // acquire(1) gives exactly one lease: anything else is a
            // library bug; give back what was given.
            (last, _) => {
                let n = leases.len() + usize::from(last.is_some());
                let _ = Semaphore::return_all(last.into_iter().chain(leases)).await;
                Ok(Err(Failure::new(
                    exit::BACKEND,
                    format!("{what}: asked for one lease, was given {n}"),
                )))
            }
        },
        Err(e) => Err(e),
    };
    under.outcome(ran).await
}

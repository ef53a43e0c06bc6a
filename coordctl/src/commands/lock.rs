//! `coordctl lock PATH [--timeout D] [--shared] [--revocable] -- CMD…`

use coord::prelude::*;
use coord::{Lock, RwLock};

use super::hold::{Held, UnderHold};
use crate::cli::LockArgs;
use crate::ctx::Ctx;
use crate::exit::Failure;

pub async fn lock(ctx: &Ctx, a: LockArgs) -> Result<u8, Failure> {
    let session = ctx.open().await?;
    let what = format!("lock {}", a.path);
    let lock: Box<dyn Lockable> = if a.shared {
        let rw = RwLock::new(&session, &a.path).map_err(|e| Failure::coord(&what, e))?;
        Box::new(rw.read_lock())
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

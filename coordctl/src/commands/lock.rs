//! `coordctl lock PATH [--timeout D] [--shared] -- CMD…`

use coord::{Error, Lock, LockGuard, RwLock};

use crate::cli::LockArgs;
use crate::ctx::Ctx;
use crate::exit::{self, Failure};

enum Ended {
    Cmd(u8),
    Lost(Error),
}

pub async fn lock(ctx: &Ctx, a: LockArgs) -> Result<u8, Failure> {
    let session = ctx.open().await?;
    let what = format!("lock {}", a.path);
    let acquired = if a.shared {
        let rw = RwLock::new(&session, &a.path).map_err(|e| Failure::coord(&what, e))?;
        match a.timeout {
            Some(t) => rw.read_timeout(t).await,
            None => rw.read().await,
        }
    } else {
        let lock = Lock::new(&session, &a.path).map_err(|e| Failure::coord(&what, e))?;
        match a.timeout {
            Some(t) => lock.acquire_timeout(t).await,
            None => lock.acquire().await,
        }
    };
    let guard: LockGuard = match acquired {
        Ok(g) => g,
        Err(Error::Timeout(t)) => {
            return Err(Failure::new(
                exit::TIMEOUT,
                format!("timed out after {t:?} waiting for the lock {}", a.path),
            ))
        }
        Err(e) => return Err(Failure::coord(&what, e)),
    };
    let token = guard.fencing_token();
    let child = ctx
        .children
        .spawn(&a.cmd, &[("COORD_FENCING_TOKEN", token.to_string())])?;
    let ended = {
        let lost = guard.lost();
        tokio::select! {
            code = child.wait() => Ended::Cmd(code),
            why = lost => Ended::Lost(why),
        }
    };
    match ended {
        Ended::Cmd(code) => match guard.release().await {
            Ok(()) => Ok(code),
            Err(e @ (Error::LockLost { .. } | Error::SessionExpired | Error::SessionClosed)) => {
                Err(Failure::new(
                    exit::LOST,
                    format!(
                        "the lock {} was lost before the command ended ({e}); it exited with {code}",
                        a.path
                    ),
                ))
            }
            Err(e) => {
                // The command ran under the lock to its end; the session's
                // close at exit deletes the node if this delete did not.
                eprintln!("coordctl: releasing the lock {}: {e}", a.path);
                Ok(code)
            }
        },
        Ended::Lost(why) => {
            eprintln!(
                "coordctl: lost the lock {} while the command ran ({why}); sending it SIGTERM",
                a.path
            );
            let code = child.terminate().await;
            drop(guard);
            Err(Failure::new(
                exit::LOST,
                format!("the lock {} was lost; the command was stopped (its status: {code})", a.path),
            ))
        }
    }
}

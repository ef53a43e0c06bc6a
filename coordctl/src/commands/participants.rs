//! `coordctl participants PATH [--kind K] [--max-leases N] [--json]` and
//! `coordctl revoke PATH [--kind K]`.

use coordination::prelude::*;
use coordination::{Contender, ContenderState, Election, Lock, RwLock, Semaphore, SimpleLock};

use super::output::{escaped, print_line, quoted, rfc3339};
use crate::cli::{Kind, LockKind, ParticipantsArgs, RevokeArgs};
use crate::ctx::Ctx;
use crate::exit::{self, Failure};

pub async fn participants(ctx: &Ctx, a: ParticipantsArgs) -> Result<u8, Failure> {
    let what = format!("participants {}", a.path);
    // Everything that can be refused is refused before connecting.
    let max_leases = match (a.kind, a.max_leases) {
        (Kind::Semaphore, Some(n)) => n,
        (Kind::Semaphore, None) => {
            return Err(Failure::new(
                exit::USAGE,
                "--kind semaphore needs --max-leases",
            ))
        }
        (_, Some(_)) => {
            return Err(Failure::new(
                exit::USAGE,
                "--max-leases is for --kind semaphore only",
            ))
        }
        (_, None) => 0,
    };
    coordination::path::validate_non_root(&a.path).map_err(|e| Failure::coord(&what, e))?;
    let session = ctx.open().await?;
    let fail = |e| Failure::coord(&what, e);
    let listed = match a.kind {
        Kind::Lock => {
            Lock::new(&session, &a.path)
                .map_err(fail)?
                .participants()
                .await
        }
        Kind::Rwlock => {
            RwLock::new(&session, &a.path)
                .map_err(fail)?
                .participants()
                .await
        }
        Kind::Semaphore => {
            Semaphore::new(&session, &a.path, max_leases)
                .map_err(fail)?
                .participants()
                .await
        }
        Kind::Simple => {
            SimpleLock::new(&session, &a.path)
                .map_err(fail)?
                .participants()
                .await
        }
        Kind::Election => {
            Election::new(&session, &a.path)
                .map_err(fail)?
                .participants()
                .await
        }
    };
    for c in listed.map_err(fail)? {
        let line = if a.json { json_line(&c) } else { text_line(&c) };
        print_line(line.as_bytes())?;
    }
    Ok(exit::OK)
}

pub async fn revoke(ctx: &Ctx, a: RevokeArgs) -> Result<u8, Failure> {
    let what = format!("revoke {}", a.path);
    coordination::path::validate_non_root(&a.path).map_err(|e| Failure::coord(&what, e))?;
    let session = ctx.open().await?;
    let fail = |e| Failure::coord(&what, e);
    let lock: Box<dyn Lockable> = match a.kind {
        LockKind::Lock => Box::new(Lock::new(&session, &a.path).map_err(fail)?),
        // Either half lists every holder, readers and writer alike.
        LockKind::Rwlock => Box::new(RwLock::new(&session, &a.path).map_err(fail)?.write_lock()),
        LockKind::Simple => Box::new(SimpleLock::new(&session, &a.path).map_err(fail)?),
    };
    let asked = lock.request_release().await.map_err(fail)?;
    if asked.is_empty() {
        return Err(Failure::new(
            exit::NONE,
            format!("nobody holds the lock {}", a.path),
        ));
    }
    for node in asked {
        print_line(escaped(&node).as_bytes())?;
    }
    Ok(exit::OK)
}

fn state(c: &Contender) -> &'static str {
    match c.state {
        ContenderState::Holding => "holding",
        ContenderState::Waiting => "waiting",
    }
}

/// `STATE NODE STAMP SINCE "DATA"`.
fn text_line(c: &Contender) -> String {
    format!(
        "{} {} {} {} {}",
        state(c),
        escaped(&c.node),
        c.stamp,
        c.created_at.map_or_else(|| "-".to_owned(), rfc3339),
        quoted(&String::from_utf8_lossy(&c.data)),
    )
}

/// `{"state":…,"node":…,"stamp":…,"since":…,"data":…}`.
fn json_line(c: &Contender) -> String {
    format!(
        r#"{{"state":"{}","node":{},"stamp":{},"since":{},"data":{}}}"#,
        state(c),
        quoted(&c.node),
        c.stamp,
        c.created_at
            .map_or_else(|| "null".to_owned(), |t| format!("\"{}\"", rfc3339(t))),
        quoted(&String::from_utf8_lossy(&c.data)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn lines() {
        let c = Contender::new(
            "/l/lock-0000000001".to_owned(),
            b"a\nb".to_vec(),
            ContenderState::Waiting,
            42,
            Some(UNIX_EPOCH + Duration::from_millis(1_714_564_800_123)),
        );
        assert_eq!(
            text_line(&c),
            r#"waiting /l/lock-0000000001 42 2024-05-01T12:00:00.123Z "a\nb""#
        );
        assert_eq!(
            json_line(&c),
            r#"{"state":"waiting","node":"/l/lock-0000000001","stamp":42,"since":"2024-05-01T12:00:00.123Z","data":"a\nb"}"#
        );
        let c = Contender::new(c.node, Vec::new(), ContenderState::Holding, c.stamp, None);
        assert_eq!(text_line(&c), r#"holding /l/lock-0000000001 42 - """#);
        assert!(json_line(&c).contains(r#""since":null,"data":"""#));
    }
}

//! `coordctl elect PATH VALUE [-- CMD…]` and `coordctl leader PATH [--watch]`.

use coord::{Election, Error};

use super::print_line;
use crate::cli::{ElectArgs, WatchArgs};
use crate::ctx::Ctx;
use crate::exit::{self, Failure};

pub async fn elect(ctx: &Ctx, a: ElectArgs) -> Result<u8, Failure> {
    let session = ctx.open().await?;
    let what = format!("elect {}", a.path);
    let election = Election::new(&session, &a.path).map_err(|e| Failure::coord(&what, e))?;
    let leadership = election
        .campaign(a.value.as_bytes())
        .await
        .map_err(|e| Failure::coord(&what, e))?;
    print_line(format!("leader {}", a.value).as_bytes())?;
    if a.cmd.is_empty() {
        let why = leadership.lost().await;
        return Err(lost(&a.path, &why));
    }
    let child = ctx.children.spawn(
        &a.cmd,
        &[(
            "COORD_FENCING_TOKEN",
            leadership.fencing_token().to_string(),
        )],
    )?;
    let ended = {
        let lost = leadership.lost();
        tokio::select! {
            code = child.wait() => Ok(code),
            why = lost => Err(why),
        }
    };
    match ended {
        Ok(code) => match leadership.resign().await {
            Ok(()) => Ok(code),
            Err(e @ (Error::LockLost { .. } | Error::SessionExpired | Error::SessionClosed)) => {
                Err(lost(&a.path, &e))
            }
            Err(e) => {
                eprintln!("coordctl: resigning at {}: {e}", a.path);
                Ok(code)
            }
        },
        Err(why) => {
            eprintln!(
                "coordctl: lost leadership at {} while the command ran ({why}); sending it SIGTERM",
                a.path
            );
            child.terminate().await;
            Err(lost(&a.path, &why))
        }
    }
}

fn lost(path: &str, why: &Error) -> Failure {
    Failure::new(exit::LOST, format!("lost leadership at {path}: {why}"))
}

pub async fn leader(ctx: &Ctx, a: WatchArgs) -> Result<u8, Failure> {
    let session = ctx.open().await?;
    let what = format!("leader {}", a.path);
    let election = Election::new(&session, &a.path).map_err(|e| Failure::coord(&what, e))?;
    if !a.watch {
        return match election.leader().await {
            Ok(Some(l)) => {
                print_line(&l.value)?;
                Ok(exit::OK)
            }
            Ok(None) => Err(Failure::new(exit::NONE, format!("no leader at {}", a.path))),
            Err(e) => Err(Failure::coord(&what, e)),
        };
    }
    let mut observer = election.observe();
    loop {
        let l = observer
            .next()
            .await
            .map_err(|e| Failure::coord(&what, e))?;
        print_line(&l.value)?;
    }
}

//! `coordctl join PATH DATA [-- CMD…]` and `coordctl members PATH [--watch]`.

use std::collections::HashMap;

use coord::{Error, Group};

use super::print_line;
use crate::cli::{JoinArgs, WatchArgs};
use crate::ctx::Ctx;
use crate::exit::{self, Failure};

pub async fn join(ctx: &Ctx, a: JoinArgs) -> Result<u8, Failure> {
    let session = ctx.open().await?;
    let what = format!("join {}", a.path);
    let group = Group::new(&session, &a.path).map_err(|e| Failure::coord(&what, e))?;
    let me = group
        .join(a.data.as_bytes())
        .await
        .map_err(|e| Failure::coord(&what, e))?;
    let name = me.name().to_owned();
    print_line(format!("joined {name}").as_bytes())?;
    if a.cmd.is_empty() {
        let why = me.lost().await;
        return Err(lost(&a.path, &why));
    }
    let child = ctx
        .children
        .spawn(&a.cmd, &[("COORD_MEMBER", name.clone())])?;
    let ended = {
        let lost = me.lost();
        tokio::select! {
            code = child.wait() => Ok(code),
            why = lost => Err(why),
        }
    };
    match ended {
        Ok(code) => match me.leave().await {
            Ok(()) => Ok(code),
            Err(e @ (Error::LockLost { .. } | Error::SessionExpired | Error::SessionClosed)) => {
                Err(lost(&a.path, &e))
            }
            Err(e) => {
                eprintln!("coordctl: leaving {}: {e}", a.path);
                Ok(code)
            }
        },
        Err(why) => {
            eprintln!(
                "coordctl: lost membership of {} while the command ran ({why}); sending it SIGTERM",
                a.path
            );
            child.terminate().await;
            Err(lost(&a.path, &why))
        }
    }
}

fn lost(path: &str, why: &Error) -> Failure {
    Failure::new(exit::LOST, format!("lost membership of {path}: {why}"))
}

pub async fn members(ctx: &Ctx, a: WatchArgs) -> Result<u8, Failure> {
    let session = ctx.open().await?;
    let what = format!("members {}", a.path);
    let group = Group::new(&session, &a.path).map_err(|e| Failure::coord(&what, e))?;
    if !a.watch {
        for m in group
            .members()
            .await
            .map_err(|e| Failure::coord(&what, e))?
        {
            print_line(&m.data)?;
        }
        return Ok(exit::OK);
    }
    let mut watcher = group.watch();
    let mut known: HashMap<String, Vec<u8>> = HashMap::new();
    loop {
        let change = watcher.next().await.map_err(|e| Failure::coord(&what, e))?;
        for name in &change.left {
            let data = known
                .remove(name)
                .unwrap_or_else(|| name.as_bytes().to_vec());
            print_line(&[b"- ".as_slice(), &data].concat())?;
        }
        for m in change.members {
            if change.joined.contains(&m.name) {
                print_line(&[b"+ ".as_slice(), &m.data].concat())?;
            }
            known.insert(m.name, m.data);
        }
    }
}

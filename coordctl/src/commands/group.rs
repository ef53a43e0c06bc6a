//! `coordctl join PATH DATA [--name NAME] [--rejoin] [-- CMD…]` and
//! `coordctl members PATH [--watch]`.

use std::collections::HashMap;

use coordination::{Group, GroupMember};

use super::hold::{Held, UnderHold};
use super::kept::{run_while_kept, Kept};
use super::output::print_line;
use crate::cli::{JoinArgs, WatchArgs};
use crate::ctx::Ctx;
use crate::exit::{self, Failure};

pub async fn join(ctx: &Ctx, a: JoinArgs) -> Result<u8, Failure> {
    if a.rejoin {
        return rejoin(ctx, a).await;
    }
    let session = ctx.open().await?;
    let what = format!("join {}", a.path);
    let group = Group::new(&session, &a.path).map_err(|e| Failure::coord(&what, e))?;
    let joined = match &a.name {
        Some(name) => group.join_as(name, a.data.as_bytes()).await,
        None => group.join(a.data.as_bytes()).await,
    };
    let me = joined.map_err(|e| Failure::coord(&what, e))?;
    let name = me.name().to_owned();
    let under = UnderHold::new(ctx, Held::Membership(&a.path), &a.cmd)
        .announce(format!("joined {name}"))
        .env("COORD_MEMBER", name);
    let member = coordination::while_held(me, |hold| under.body(hold)).await;
    under.outcome(member).await
}

/// `join --rejoin`: a [`GroupMember`] on a supervised client, so the
/// membership comes back, same name and data, after its session ends or
/// its node is deleted; CMD runs on through that. Each loss and comeback
/// is said on stderr. Ends when CMD does (leaving first), on a signal
/// (dropped: the member leaves in the background and the client is closed
/// at exit), or when the server refuses the membership for good (CMD is
/// stopped first).
async fn rejoin(ctx: &Ctx, a: JoinArgs) -> Result<u8, Failure> {
    let what = format!("join {}", a.path);
    let name = a
        .name
        .clone()
        .unwrap_or_else(|| format!("member-{}", uuid::Uuid::new_v4().simple()));
    let client = ctx.client().await?;
    let me = GroupMember::join(&client, &a.path, &name, a.data.as_bytes())
        .map_err(|e| Failure::coord(&what, e))?;
    let kept = Kept {
        what: &what,
        announce: format!("joined {name}"),
        env: ("COORD_MEMBER", name.clone()),
        lost: format!(
            "lost membership of {} as {name}; joining again (the command keeps running)",
            a.path
        ),
        back: format!("joined {} again as {name}", a.path),
        leaving: format!("leaving {}", a.path),
    };
    run_while_kept(ctx, me.watch(), &a.cmd, kept, me.leave()).await
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
    // The watcher ends only after an error, which `?` returns.
    while let Some(change) = watcher.next().await {
        let change = change.map_err(|e| Failure::coord(&what, e))?;
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
    Ok(exit::OK)
}

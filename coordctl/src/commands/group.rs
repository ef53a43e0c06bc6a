//! `coordctl join PATH DATA [-- CMD…]` and `coordctl members PATH [--watch]`.

use std::collections::HashMap;

use coord::Group;

use super::hold::{Held, UnderHold};
use super::output::print_line;
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
    let under = UnderHold::new(ctx, Held::Membership(&a.path), &a.cmd)
        .announce(format!("joined {name}"))
        .env("COORD_MEMBER", name);
    let member = coord::while_held(me, |hold| under.body(hold)).await;
    under.outcome(member).await
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

//! `coordctl elect PATH VALUE [-- CMD…]` and `coordctl leader PATH [--watch]`.

use coord::prelude::*;
use coord::Election;

use super::hold::{Held, UnderHold};
use super::print_line;
use crate::cli::{ElectArgs, WatchArgs};
use crate::ctx::Ctx;
use crate::exit::{self, Failure};

pub async fn elect(ctx: &Ctx, a: ElectArgs) -> Result<u8, Failure> {
    let session = ctx.open().await?;
    let what = format!("elect {}", a.path);
    let election = Election::new(&session, &a.path)
        .map_err(|e| Failure::coord(&what, e))?
        .with_layout(a.layout.into());
    let under = UnderHold::new(ctx, Held::Leadership(&a.path), &a.cmd)
        .announce(format!("leader {}", a.value))
        .fencing_token();
    let led = election
        .lead(a.value.as_bytes(), |term| under.body(term))
        .await;
    under.outcome(led).await
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

//! `coordctl elect PATH VALUE [--rejoin] [-- CMD…]` and `coordctl leader PATH [--watch]`.

use coordination::prelude::*;
use coordination::{Election, Error, RejoiningLatch, Session};

use super::hold::{Held, UnderHold};
use super::output::print_line;
use crate::cli::{ElectArgs, WatchArgs};
use crate::ctx::Ctx;
use crate::exit::{self, Failure};
use crate::logging::say;

pub async fn elect(ctx: &Ctx, a: ElectArgs) -> Result<u8, Failure> {
    if a.rejoin {
        return elect_again(ctx, a).await;
    }
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

/// `elect --rejoin`: a [`RejoiningLatch`] on a supervised client. Each
/// time it leads, print `leader VALUE` and run CMD (with that term's
/// COORD_FENCING_TOKEN); when the term ends (its session lost, its offer
/// deleted) CMD is sent SIGTERM (SIGKILL after the grace) and coordctl
/// campaigns again, on a new session if need be, and runs CMD again once
/// it leads again. Without CMD it holds leadership the same way. It ends
/// when CMD ends by itself (resigning first, with CMD's status) or on a
/// signal (forwarded to a running CMD, whose status is then the exit
/// status); never with 4.
async fn elect_again(ctx: &Ctx, a: ElectArgs) -> Result<u8, Failure> {
    let what = format!("elect {}", a.path);
    let client = ctx.client().await?;
    let latch =
        RejoiningLatch::start_with_layout(&client, &a.path, a.value.as_bytes(), a.layout.into())
            .map_err(|e| Failure::coord(&what, e))?;
    loop {
        let token = latch
            .await_leadership()
            .await
            .map_err(|e| Failure::new(exit::BACKEND, format!("{what}: the client closed ({e})")))?;
        print_line(format!("leader {}", a.value).as_bytes())?;
        if a.cmd.is_empty() {
            latch.term_ended(token).await;
            say(format_args!(
                "lost leadership of {} (token {token}); campaigning again",
                a.path
            ));
            continue;
        }
        let proc = ctx
            .children
            .spawn(&a.cmd, &[("COORD_FENCING_TOKEN", token.to_string())])?;
        tokio::select! {
            code = proc.wait() => {
                if let Err(e) = latch.close().await {
                    say(format_args!("resigning {}: {e}", a.path));
                }
                return Ok(code);
            }
            () = latch.term_ended(token) => {
                say(format_args!(
                    "lost leadership of {} (token {token}); stopping the command, then campaigning again",
                    a.path
                ));
                proc.terminate().await;
            }
        }
    }
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
    watch_leader(&session, &election, &a.path, &what).await
}

/// What `leader --watch` prints when nobody leads.
pub const NO_LEADER: &str = "no leader";

/// Print the leader's value now and at each change, and [`NO_LEADER`]
/// whenever nobody leads. The library's `LeaderObserver` reports leaders
/// only; here a children watch on the election is armed before each read
/// of the leader, so no change after a read goes unseen (a leader that
/// comes and goes between two reads may be missed, as with the observer).
async fn watch_leader(
    session: &Session,
    election: &Election,
    path: &str,
    what: &str,
) -> Result<u8, Failure> {
    let fail = |e| Failure::coord(what, e);
    // The node of the leader last printed; `Some(None)`: `no leader`.
    let mut last: Option<Option<String>> = None;
    let mut attempt = 0u32;
    loop {
        let changed = match session.children_watch(path).await {
            Ok((_, w)) => w,
            // No election there yet: make its directory, as the observer
            // does, so that there is something to watch.
            Err(Error::NotFound { .. }) => {
                session.ensure_dir(path).await.map_err(fail)?;
                continue;
            }
            Err(e) if e.is_retryable() => {
                retry_pause(&mut attempt).await;
                continue;
            }
            Err(e) => return Err(fail(e)),
        };
        let now = election.leader().await.map_err(fail)?;
        let node = now.as_ref().map(|l| l.node.clone());
        if last.as_ref() != Some(&node) {
            match &now {
                Some(l) => print_line(&l.value),
                None => print_line(NO_LEADER.as_bytes()),
            }?;
            last = Some(node);
        }
        match changed.await {
            Ok(()) => attempt = 0,
            Err(e) if e.is_retryable() => retry_pause(&mut attempt).await,
            Err(e) => return Err(fail(e)),
        }
    }
}

/// Wait before reading again after a connection error: the library's
/// backoff for recipes (20 ms doubling to 1 s, with jitter).
async fn retry_pause(attempt: &mut u32) {
    let pause = coord_core::backend::Backoff::RECIPES.next(attempt);
    tokio::time::sleep(pause).await;
}

//! Running CMD while a recipe that comes back is kept (a `GroupMember` for
//! `join --rejoin`, a `ServiceRegistration` for `discover register`):
//! wait until it is there, say so on stdout, run CMD, say each loss and
//! comeback on stderr, and leave when CMD ends.

use std::future::Future;

use coordination::{Presence, PresenceWatcher};

use super::output::print_line;
use crate::ctx::Ctx;
use crate::exit::{self, Failure};
use crate::logging::say;

/// What the command says, and what CMD is told.
pub struct Kept<'a> {
    /// The command, for failures: `join /groups/x`.
    pub what: &'a str,
    /// The stdout line once it is there first: `joined NAME`.
    pub announce: String,
    /// The variable CMD gets, and its value.
    pub env: (&'static str, String),
    /// Said on stderr when it is lost.
    pub lost: String,
    /// Said on stderr when it is back, before ` (session N)`.
    pub back: String,
    /// Said on stderr, before `: error`, when leaving fails.
    pub leaving: String,
}

/// Wait until `presence` is first `Present`, announce it, run `cmd` (none:
/// until interrupted) and follow `presence` meanwhile. Ends when CMD does
/// (`leave` first, CMD's status), or when the recipe fails for good (CMD
/// stopped first) or its client closes; a signal drops this future, and
/// the recipe goes in the background.
pub async fn run_while_kept(
    ctx: &Ctx,
    mut presence: PresenceWatcher,
    cmd: &[String],
    k: Kept<'_>,
    leave: impl Future<Output = coordination::Result<()>>,
) -> Result<u8, Failure> {
    let closed = || Failure::new(exit::BACKEND, format!("{}: the client closed", k.what));
    loop {
        match presence.next().await {
            Some(Presence::Present { .. }) => break,
            Some(Presence::Failed(e)) => return Err(Failure::coord_ref(k.what, &e)),
            None => return Err(closed()),
            Some(_) => {}
        }
    }
    print_line(k.announce.as_bytes())?;
    let proc = match cmd.is_empty() {
        true => None,
        false => Some(ctx.children.spawn(cmd, &[(k.env.0, k.env.1.clone())])?),
    };
    let cmd_ended = async {
        match &proc {
            Some(p) => p.wait().await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(cmd_ended);
    loop {
        tokio::select! {
            code = &mut cmd_ended => {
                if let Err(e) = leave.await {
                    say(format_args!("{}: {e}", k.leaving));
                }
                return Ok(code);
            }
            event = presence.next() => match event {
                Some(Presence::Absent) => say(format_args!("{}", k.lost)),
                Some(Presence::Present { generation, .. }) => {
                    say(format_args!("{} (session {generation})", k.back))
                }
                Some(Presence::Failed(e)) => {
                    let failure = Failure::coord_ref(k.what, &e);
                    if let Some(p) = &proc {
                        eprintln!("coordctl: {}; sending the command SIGTERM", failure.message);
                        p.terminate().await;
                    }
                    return Err(failure);
                }
                None => return Err(closed()),
                Some(_) => {}
            },
        }
    }
}

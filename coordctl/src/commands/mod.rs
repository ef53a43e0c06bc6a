//! One module per subcommand. Each returns the exit code, or a failure.

mod counter;
mod discover;
mod elect;
mod group;
mod hold;
mod inspect;
mod kept;
mod lock;
mod output;
mod participants;
mod queue;
mod run_once;
mod watch;

use crate::cli::Command;
use crate::ctx::Ctx;
use crate::exit::{self, Failure};

pub async fn run(ctx: &Ctx, command: Command) -> Result<u8, Failure> {
    match command {
        Command::Lock(a) => lock::lock(ctx, a).await,
        Command::RunOnce(a) => run_once::run_once(ctx, a).await,
        Command::Elect(a) => elect::elect(ctx, a).await,
        Command::Leader(a) => elect::leader(ctx, a).await,
        Command::Queue(q) => queue::queue(ctx, q).await,
        Command::Counter(a) => counter::counter(ctx, a).await,
        Command::Watch(a) => watch::watch(ctx, a).await,
        Command::Join(a) => group::join(ctx, a).await,
        Command::Members(a) => group::members(ctx, a).await,
        Command::Participants(a) => participants::participants(ctx, a).await,
        Command::Revoke(a) => participants::revoke(ctx, a).await,
        Command::Inspect(a) => inspect::inspect(ctx, a).await,
        Command::Discover(c) => discover::discover(ctx, c).await,
        Command::Demo => {
            let report = crate::demo::run(&ctx.connector).await?;
            Ok(if report.ok() { exit::OK } else { exit::NONE })
        }
    }
}

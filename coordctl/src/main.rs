//! coordctl: coord's recipes from the shell. See `coordctl --help`.
//!
//! How it ends, whatever happens: the command's future finishes (or, on
//! SIGINT/SIGTERM with no CMD running, is dropped — unless it is in a step
//! it shields from a first signal, see [`ctx::Ctx::shield`]), then every
//! session is closed, which waits for the clean-up a dropped future left
//! (a queue item given back) and releases everything held, then the
//! process exits with a documented code ([`exit::TABLE`]).
//!
//! ## Cargo features
//!
//! | feature | backend | URL | needs to build |
//! |---|---|---|---|
//! | (always) | in-process store | `mem://` | nothing |
//! | `zk` (on by default) | ZooKeeper | `zk://…` | nothing |
//! | `redis` (on by default) | Redis | `redis://…`, `rediss://…` | nothing |
//! | `pg` (on by default) | PostgreSQL | `postgres://…`, `postgresql://…` | nothing |
//! | `etcd` | etcd v3.4+ | `etcd://…` | `protoc` (etcd-client compiles its protobufs) |
//! | `all` | all four | | `protoc` |
//!
//! The default build (`cargo install coordctl`) needs no `protoc`;
//! `cargo install coordctl --features etcd` (or `all`) adds etcd. A URL
//! whose backend is not built in exits with a message that names the
//! feature to rebuild with.
#![warn(missing_docs)]

mod child;
mod cli;
mod cli_discover;
mod commands;
mod ctx;
mod demo;
mod exit;
mod logging;
mod sessions;
mod signals;

use std::process::ExitCode;
use std::sync::OnceLock;

use clap::Parser;

use crate::cli::Cli;
use crate::ctx::Ctx;
use crate::exit::Failure;
use crate::signals::Signals;

/// `--version`, with the backends compiled in.
fn long_version() -> &'static str {
    static V: OnceLock<String> = OnceLock::new();
    V.get_or_init(|| {
        let backends: Vec<&str> = coordination::compiled_backends()
            .into_iter()
            .map(|b| b.scheme())
            .collect();
        format!(
            "{} (backends: {})",
            env!("CARGO_PKG_VERSION"),
            backends.join(", ")
        )
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    logging::init(cli.verbose, cli.quiet);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("coordctl: cannot start the async runtime: {e}");
            return ExitCode::from(exit::BACKEND);
        }
    };
    let code = runtime.block_on(run(cli));
    // Background tasks (keep-alives, a late release) end with the runtime.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    ExitCode::from(code)
}

async fn run(cli: Cli) -> u8 {
    let mut connector = match coordination::Connector::new(&cli.url) {
        Ok(c) => c,
        Err(e) => return report(Failure::from(e)),
    };
    if let Some(t) = cli.session_timeout {
        connector = connector.with_session_timeout(t);
    }
    if connector.backend() == coordination::Backend::Mem && cli.command.crosses_processes() {
        logging::say(format_args!(
            "warning: `{}` runs on mem://, which lives inside this process only: no other \
             process sees it, so nothing is shared or coordinated. Pass --url (or set \
             COORD_URL) to a zk://, etcd://, redis:// or postgres:// server.",
            cli.command.name()
        ));
    }
    let mut signals = match Signals::install() {
        Ok(s) => s,
        Err(e) => {
            return report(Failure::new(
                exit::BACKEND,
                format!("cannot handle signals: {e}"),
            ))
        }
    };
    let ctx = Ctx::new(connector, signals.flag());
    let code = {
        let work = commands::run(&ctx, cli.command);
        tokio::pin!(work);
        let mut forwarded = 0;
        let mut deferred = false;
        loop {
            tokio::select! {
                r = &mut work => break r.unwrap_or_else(report),
                sig = signals.recv() => match ctx.children.running() {
                    // CMD is running: it gets the signal (a second one kills
                    // it); we keep going, so what CMD ran under stays held
                    // until it has ended, and exit with its status.
                    Some(p) => {
                        forwarded += 1;
                        if forwarded == 1 {
                            p.signal(sig.nix());
                        } else {
                            p.signal(nix::sys::signal::Signal::SIGKILL);
                        }
                    }
                    // A step that must not stop half way is running (an
                    // item printed, its acknowledgement in flight): let it
                    // finish, and exit as it says. A second signal stops it.
                    None if ctx.shielded() && !deferred => deferred = true,
                    None => {
                        if ctx.shielded() {
                            eprintln!(
                                "coordctl: interrupted again before the item printed was \
                                 acknowledged; it may be delivered again"
                            );
                        }
                        break sig.exit_code();
                    }
                },
            }
        }
    };
    // The command's future is gone: now release everything it held.
    ctx.close_all().await;
    code
}

/// Print a failure to stderr; its exit code.
fn report(f: Failure) -> u8 {
    eprintln!("coordctl: {}", f.message);
    f.code
}

//! `coord-nemesis`: the orchestrator (`run`), the client processes it
//! starts (`worker`, `producer`, `consumer`; the long-lived services
//! `latch`, `member`, `cache` and the tree `writer`) and the checker
//! (`check`).
//! See the library's docs and `scripts/nemesis`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cache;
mod common;
mod faults;
mod latch;
mod member;
mod orchestrator;
mod queue;
mod run;
mod service;
mod settle;
mod verdict;
mod worker;
mod writer;

#[derive(Debug, Parser)]
#[command(
    name = "coord-nemesis",
    about = "A nemesis for coord, and the checker of its history"
)]
struct Cli {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Debug, Subcommand)]
enum Mode {
    /// Start the client processes behind fault proxies, inject faults,
    /// then check the history (exit 1 on a violation).
    Run(orchestrator::RunArgs),
    /// A counter worker (started by `run`).
    Worker(worker::WorkerArgs),
    /// The queue producer (started by `run`).
    Producer(queue::QueueArgs),
    /// A queue consumer (started by `run`).
    Consumer(queue::QueueArgs),
    /// A service holding a rejoining leader latch (started by `run`).
    Latch(common::ProcessArgs),
    /// A service holding a rejoining group membership (started by `run`).
    Member(common::ProcessArgs),
    /// A service holding a tree cache that follows its client (started
    /// by `run`).
    Cache(common::ProcessArgs),
    /// The writer of the tree the caches follow (started by `run`).
    Writer(common::ProcessArgs),
    /// Check the history files (`*.jsonl`) of a run.
    Check {
        /// The run's history directory.
        dir: PathBuf,
        /// Succeed only if a lost update is found (the unfenced control).
        #[arg(long)]
        expect_violation: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match &cli.mode {
        // The orchestrator relays every client's traffic through its
        // proxies: two threads. A client is one sequential loop: one.
        Mode::Run(_) => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build(),
        _ => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
    };
    let runtime = match runtime {
        Ok(r) => r,
        Err(e) => {
            eprintln!("coord-nemesis: cannot start the runtime: {e}");
            return ExitCode::from(3);
        }
    };
    let result = runtime.block_on(async move {
        match cli.mode {
            Mode::Run(args) => run::run(args).await,
            Mode::Worker(args) => worker::run(args).await.map(|()| ExitCode::SUCCESS),
            Mode::Producer(args) => queue::producer(args).await.map(|()| ExitCode::SUCCESS),
            Mode::Consumer(args) => queue::consumer(args).await.map(|()| ExitCode::SUCCESS),
            Mode::Latch(args) => latch::run(args).await.map(|()| ExitCode::SUCCESS),
            Mode::Member(args) => member::run(args).await.map(|()| ExitCode::SUCCESS),
            Mode::Cache(args) => cache::run(args).await.map(|()| ExitCode::SUCCESS),
            Mode::Writer(args) => writer::run(args).await.map(|()| ExitCode::SUCCESS),
            Mode::Check {
                dir,
                expect_violation,
            } => {
                let events = coord_nemesis::history::read_dir(&dir)
                    .map_err(|e| format!("{}: {e}", dir.display()))?;
                let report = coord_nemesis::check(&events);
                print!("{report}");
                Ok(verdict::verdict(&report, expect_violation))
            }
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("coord-nemesis: {e}");
            ExitCode::from(2)
        }
    }
}

//! # coord-bench
//!
//! Benchmarks of coord's recipes against one server: workloads W1–W8 with
//! K concurrent sessions, each its own connection, and in the
//! same run the baselines — the herd [`SimpleLock`](coordination::SimpleLock),
//! zookeeper-client's own Curator-compatible lock on ZooKeeper, etcd's
//! server-side lock RPC on etcd, `pg_advisory_lock` / `pg_advisory_unlock`
//! and `SELECT … FOR UPDATE SKIP LOCKED` consumers on PostgreSQL,
//! `tokio::sync::Mutex` in memory, and each server's raw create + delete
//! round trip. Every figure is reported with
//! its ratio to its baseline ([`report::Report`]), as markdown and JSON.
//!
//! It starts no server: `coord-bench --url zk://127.0.0.1:2181`;
//! `scripts/bench` runs the whole matrix.
//!
//! Layout: [`run`] calls each workload in turn (`workloads/`, one file
//! each, its runner beside the rows it records); [`locks`] holds the
//! contender loop W1 and W2 share; a row is built with [`row::Row`] and
//! collected in a [`report::Report`].
#![warn(missing_docs)]

mod checks;
mod config;
mod context;
mod error;
pub mod locks;
pub mod report;
pub mod row;
pub mod stats;
pub mod target;
pub mod workloads;

use std::time::Instant;

pub use config::{Config, Growth};
pub use error::{BenchError, BenchResult};

use context::Ctx;
use report::Report;
use target::Target;
use workloads::{raw, rt, w1, w2, w3_w4, w5, w6, w7, w8};

/// Run every workload against `url`; a workload that fails is recorded in
/// [`Report::failures`] and the run goes on.
///
/// # Errors
/// A malformed URL or an unreachable server.
pub async fn run(url: &str, cfg: &Config) -> BenchResult<Report> {
    let target = Target::new(url)?;
    let started = Instant::now();
    let mut ctx = Ctx::new(&target, url, cfg).await?;
    // The raw round trip first: it is the yardstick of the rest.
    raw::bench(&mut ctx).await?;
    rt::bench(&mut ctx).await?;
    w1::bench(&mut ctx).await?;
    w2::bench(&mut ctx).await?;
    w3_w4::bench(&mut ctx).await?;
    w5::bench(&mut ctx).await?;
    w6::bench(&mut ctx).await?;
    w7::bench(&mut ctx).await?;
    w8::bench(&mut ctx).await?;
    let mut rep = ctx.finish().await;
    rep.elapsed = started.elapsed();
    checks::check_targets(&mut rep, cfg);
    Ok(rep)
}

/// Run the growth workloads of issue 35 against `url` (not part of
/// [`run`]): a watched group of 100 and 1,000 members, a 100,000-item
/// queue drain beside a 10,000-item one, the primitive cycle beside the
/// raw client, and resident memory per held lock and per watch
/// ([`Config::growth`] sizes them).
///
/// # Errors
/// A malformed URL or an unreachable server.
pub async fn run_growth(url: &str, cfg: &Config) -> BenchResult<Report> {
    use workloads::{cycle, group_scale, memory, queue_scale};
    let target = Target::new(url)?;
    let started = Instant::now();
    let mut ctx = Ctx::new(&target, url, cfg).await?;
    ctx.rep.config = cfg.growth.describe();
    let g = &cfg.growth;
    if g.runs("cycle") {
        cycle::bench(&mut ctx).await?;
    }
    if g.runs("memory") {
        memory::bench(&mut ctx).await?;
    }
    if g.runs("group") {
        group_scale::bench(&mut ctx).await?;
    }
    if g.runs("queue") {
        queue_scale::bench(&mut ctx).await?;
    }
    let mut rep = ctx.finish().await;
    rep.elapsed = started.elapsed();
    Ok(rep)
}

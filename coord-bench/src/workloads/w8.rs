//! W8: group membership — how long until every watcher sees all the
//! members that joined at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use coordination::{Group, Session};

use crate::context::{timed, Ctx};
use crate::error::{BenchError, BenchResult};
use crate::row::{Row, Unit};
use crate::stats::percentiles;

/// Run W8 and record its rows.
///
/// # Errors
/// Sessions that cannot be opened; a failed run is recorded in the report.
pub(crate) async fn bench(ctx: &mut Ctx<'_>) -> BenchResult<()> {
    let (w, joins) = (ctx.cfg.watchers, ctx.cfg.joins);
    let sessions = ctx.sessions(w + joins).await?;
    let dir = ctx.dir("w8");
    let run = membership(&sessions[..w], &sessions[w..], &dir);
    match timed(ctx.limit(), "W8", run).await {
        Ok(mut seen) => {
            let case = format!("Group, {joins} joins, {w} watchers");
            let max = seen.iter().max().copied().unwrap_or_default();
            let p = percentiles(&mut seen);
            let rtt = ctx.rtt();
            let row = |key: &str, metric: &str, value: f64| {
                Row::new(key, "W8", &case)
                    .metric(metric, Unit::Ms)
                    .value(value)
                    .ratio_to(rtt)
            };
            ctx.rep.push(row(
                "w8.full_view_ms",
                "until every watcher sees all",
                max.as_secs_f64() * 1e3,
            ));
            ctx.rep
                .push(row("w8.mean_ms", "until a watcher sees all (mean)", p.mean));
        }
        Err(e) => ctx.fail("W8", e),
    }
    Ok(())
}

/// W8: `joiners` each join the group at once; returns, per watcher, the
/// time from the first join until it saw every member.
///
/// # Errors
/// Server errors.
pub async fn membership(
    watchers: &[Session],
    joiners: &[Session],
    dir: &str,
) -> BenchResult<Vec<Duration>> {
    let seen = membership_counted(watchers, joiners, dir).await?;
    Ok(seen.into_iter().map(|w| w.full_view).collect())
}

/// What one watcher of [`membership_counted`] saw.
#[derive(Debug, Clone, Copy)]
pub struct WatcherView {
    /// From the first join until it saw every member.
    pub full_view: Duration,
    /// Changes it was handed after the joins began.
    pub changes: u64,
    /// Members in those changes, summed: what it was handed to read.
    pub names_seen: u64,
    /// Distinct members in its last change.
    pub members: usize,
    /// From the first join until every join had returned (the same for
    /// every watcher): the floor of `full_view`.
    pub joined: Duration,
}

/// [`membership`], with what each watcher was handed on the way.
///
/// # Errors
/// Server errors.
pub async fn membership_counted(
    watchers: &[Session],
    joiners: &[Session],
    dir: &str,
) -> BenchResult<Vec<WatcherView>> {
    let n = joiners.len();
    let ready = Arc::new(tokio::sync::Barrier::new(watchers.len() + 1));
    let (go_tx, go_rx) = tokio::sync::watch::channel::<Option<Instant>>(None);
    let mut set = tokio::task::JoinSet::new();
    for s in watchers {
        let g = Group::new(s, dir)?;
        let ready = ready.clone();
        let mut go_rx = go_rx.clone();
        set.spawn(async move {
            let mut w = g.watch();
            w.next().await.ok_or("the watcher ended")??;
            ready.wait().await;
            let (mut changes, mut names_seen) = (0u64, 0u64);
            let members = loop {
                let change = w.next().await.ok_or("the watcher ended")??;
                changes += 1;
                names_seen += change.members.len() as u64;
                if change.members.len() >= n {
                    break change.members;
                }
            };
            let seen = Instant::now();
            let t0 = match *go_rx.borrow_and_update() {
                Some(t) => t,
                None => return Err("saw members before the joins started".into()),
            };
            let distinct: std::collections::HashSet<&str> =
                members.iter().map(|m| m.name.as_str()).collect();
            Ok::<WatcherView, BenchError>(WatcherView {
                full_view: seen.saturating_duration_since(t0),
                changes,
                names_seen,
                members: distinct.len(),
                joined: Duration::ZERO,
            })
        });
    }
    ready.wait().await;
    let t0 = Instant::now();
    let _ = go_tx.send(Some(t0));
    let mut joins = tokio::task::JoinSet::new();
    for (i, s) in joiners.iter().enumerate() {
        let g = Group::new(s, dir)?;
        joins.spawn(async move { g.join(format!("member {i}").as_bytes()).await });
    }
    let mut members = Vec::new();
    while let Some(r) = joins.join_next().await {
        members.push(r??);
    }
    let joined = t0.elapsed();
    let mut seen = Vec::new();
    while let Some(r) = set.join_next().await {
        let mut view: WatcherView = r??;
        view.joined = joined;
        seen.push(view);
    }
    for m in members {
        let _ = m.leave().await;
    }
    Ok(seen)
}

//! G: group scale — W8's watched group with 100 and with 1,000 members
//! joining at once, in interleaved blocks: how much longer every watcher
//! takes to see them all, and what each watcher was handed on the way.

use coordination::Session;

use crate::context::{timed, Ctx};
use crate::error::BenchResult;
use crate::report::TargetCheck;
use crate::row::{Row, Unit};
use crate::stats::median;
use crate::workloads::w8::{membership_counted, WatcherView};

/// One block's figures at one size.
#[derive(Debug, Default, Clone)]
struct Sized {
    /// Until every watcher saw every member (ms).
    full_ms: Vec<f64>,
    /// Until every join had returned (ms).
    joined_ms: Vec<f64>,
    /// Changes per watcher (mean over watchers).
    changes: Vec<f64>,
    /// Members handed to a watcher, summed over its changes (mean).
    names: Vec<f64>,
    /// Requests a watcher sent (mean), where the backend counts them.
    requests: Vec<f64>,
    /// The fewest distinct members a watcher saw at the end.
    members: usize,
}

/// Requests the sessions have sent so far; `None` where not counted.
fn sent(sessions: &[Session]) -> Option<u64> {
    sessions.iter().map(Session::requests_sent).sum()
}

/// Run the group scale and record its rows and its target.
///
/// # Errors
/// Sessions that cannot be opened; a failed run is recorded in the report.
pub(crate) async fn bench(ctx: &mut Ctx<'_>) -> BenchResult<()> {
    let g = &ctx.cfg.growth;
    let (w, sizes, blocks, limit) = (
        ctx.cfg.watchers,
        g.group_sizes.clone(),
        g.group_blocks.max(1),
        g.timeout,
    );
    let most = sizes.iter().copied().max().unwrap_or(0);
    let sessions = ctx.sessions(w + most).await?;
    let (watchers, joiners) = sessions.split_at(w);
    let mut got: Vec<Sized> = vec![Sized::default(); sizes.len()];
    for b in 0..blocks {
        // Which size goes first alternates.
        let order: Vec<usize> = if b % 2 == 0 {
            (0..sizes.len()).collect()
        } else {
            (0..sizes.len()).rev().collect()
        };
        for i in order {
            let n = sizes[i];
            let dir = ctx.dir(&format!("g{b}n{n}"));
            let before = sent(watchers);
            let run = membership_counted(watchers, &joiners[..n], &dir);
            let views: Vec<WatcherView> = match timed(limit, "group scale", run).await {
                Ok(v) => v,
                Err(e) => {
                    ctx.fail(format!("group scale, {n} members"), e);
                    return Ok(());
                }
            };
            let k = views.len().max(1) as f64;
            let s = &mut got[i];
            let max = views.iter().map(|v| v.full_view).max().unwrap_or_default();
            s.full_ms.push(max.as_secs_f64() * 1e3);
            let joined = views.first().map(|v| v.joined).unwrap_or_default();
            s.joined_ms.push(joined.as_secs_f64() * 1e3);
            s.changes
                .push(views.iter().map(|v| v.changes as f64).sum::<f64>() / k);
            s.names
                .push(views.iter().map(|v| v.names_seen as f64).sum::<f64>() / k);
            if let (Some(a), Some(z)) = (before, sent(watchers)) {
                s.requests.push((z - a) as f64 / k);
            }
            s.members = views.iter().map(|v| v.members).min().unwrap_or(0);
        }
    }
    for (i, &n) in sizes.iter().enumerate() {
        let s = &got[i];
        let case = format!("Group, {n} members join at once, {w} watchers");
        let row = |key: &str, metric: &str, unit| {
            Row::new(format!("growth.group.n{n}.{key}"), "G", &case).metric(metric, unit)
        };
        ctx.rep.push(
            row(
                "full_view_ms",
                "until every watcher sees all (median of blocks)",
                Unit::Ms,
            )
            .value(median(&s.full_ms)),
        );
        ctx.rep.push(
            row(
                "joined_ms",
                "until every join returned (median of blocks)",
                Unit::Ms,
            )
            .value(median(&s.joined_ms)),
        );
        ctx.rep.push(
            row("members", "distinct members every watcher saw", Unit::Count)
                .value(s.members as f64)
                .ratio_to(("members joined", n as f64)),
        );
        ctx.rep.push(
            row("changes", "changes handed to a watcher", Unit::Count)
                .value(median(&s.changes))
                .ratio_to(("members joined", n as f64)),
        );
        ctx.rep.push(
            row("names", "members handed to a watcher, summed", Unit::Count)
                .value(median(&s.names))
                .ratio_to(("members joined", n as f64)),
        );
        if !s.requests.is_empty() {
            ctx.rep.push(
                row("requests", "requests a watcher sent", Unit::Requests)
                    .value(median(&s.requests))
                    .ratio_to(("members joined", n as f64)),
            );
        }
    }
    if let ([first, .., last], [a, .., z]) = (sizes.as_slice(), got.as_slice()) {
        let row = Row::new(
            "growth.group.ratio",
            "G",
            format!("Group, {last} members ÷ {first}, {w} watchers"),
        )
        .metric("until every watcher sees all", Unit::Ms)
        .blocks(&z.full_ms, (&format!("{first} members"), &a.full_ms));
        if let Some(r) = row.ratio() {
            ctx.rep.targets.push(TargetCheck {
                what: format!("group: {last} members visible within 3× the time of {first}"),
                measured: r,
                met: r <= 3.0,
            });
        }
        ctx.rep.push(row);
        // What the watchers add after the joins: the part coord's watch
        // controls (the joins alone grow with the server's write rate).
        let lag = |s: &Sized| -> Vec<f64> {
            s.full_ms
                .iter()
                .zip(&s.joined_ms)
                .map(|(f, j)| (f - j).max(0.0))
                .collect()
        };
        ctx.rep.push(
            Row::new(
                "growth.group.lag_ratio",
                "G",
                format!("Group, {last} members ÷ {first}: after the last join returned"),
            )
            .metric("until every watcher sees all", Unit::Ms)
            .blocks(&lag(z), (&format!("{first} members"), &lag(a))),
        );
        ctx.rep.push(
            Row::new(
                "growth.group.joined_ratio",
                "G",
                format!("Group, {last} members ÷ {first}: the joins alone"),
            )
            .metric("until every join returned", Unit::Ms)
            .blocks(&z.joined_ms, (&format!("{first} members"), &a.joined_ms)),
        );
    }
    Ok(())
}

//! W5: election failover — the time until the next leader is elected
//! after the leader resigns, and after its session is expired on the
//! server.

use std::time::{Duration, Instant};

use coordination::{Election, Leadership, Session};

use crate::context::{timed, Ctx};
use crate::error::BenchResult;
use crate::row::{Row, Unit};
use crate::stats::percentiles;
use crate::target::{Expirer, Target};

/// Run W5 and record its rows.
///
/// # Errors
/// None: a failure is recorded in the report.
pub(crate) async fn bench(ctx: &mut Ctx<'_>) -> BenchResult<()> {
    let (cfg, dir) = (ctx.cfg, ctx.dir("w5"));
    let run = election(
        ctx.target,
        &dir,
        cfg.participants,
        cfg.resigns,
        cfg.expiries,
    );
    match timed(ctx.limit(), "W5", run).await {
        Ok(mut f) => {
            let case = format!("Election, {} participants", cfg.participants);
            let r = percentiles(&mut f.after_resign);
            let x = percentiles(&mut f.after_expiry);
            let e = percentiles(&mut f.after_session_end);
            let max = |ds: &[Duration]| ds.last().map_or(0.0, |d| d.as_secs_f64() * 1e3);
            let rows = [
                ("w5.resign_p50_ms", "failover after resign p50", r.p50),
                (
                    "w5.resign_max_ms",
                    "failover after resign max",
                    max(&f.after_resign),
                ),
                ("w5.expiry_p50_ms", "failover after expiry p50", x.p50),
                (
                    "w5.expiry_max_ms",
                    "failover after expiry max",
                    max(&f.after_expiry),
                ),
                (
                    "w5.ended_p50_ms",
                    "failover after the server ended the session p50",
                    e.p50,
                ),
            ];
            let rtt = ctx.rtt();
            for (key, metric, value) in rows {
                ctx.rep.push(
                    Row::new(key, "W5", &case)
                        .metric(metric, Unit::Ms)
                        .value(value)
                        .ratio_to(rtt),
                );
            }
        }
        Err(e) => ctx.fail("W5", e),
    }
    Ok(())
}

/// W5's failover times.
#[derive(Debug, Clone, Default)]
pub struct Failovers {
    /// From the leader's `resign()` call to the next leader's elected.
    pub after_resign: Vec<Duration>,
    /// From the call that expires the leader's session on the server to
    /// the next leader's elected (includes the expiry hook itself: on
    /// ZooKeeper a session takeover and close).
    pub after_expiry: Vec<Duration>,
    /// From the moment the server had ended the leader's session (the
    /// expiry hook returned) to the next leader's elected.
    pub after_session_end: Vec<Duration>,
}

type Elected = (usize, BenchResult<Leadership>, Instant);

fn campaign(
    i: usize,
    s: Session,
    dir: String,
    tx: tokio::sync::mpsc::UnboundedSender<Elected>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let r = match Election::new(&s, &dir) {
            Ok(e) => e.campaign(format!("p{i}").as_bytes()).await,
            Err(e) => Err(e),
        };
        let at = Instant::now();
        let _ = tx.send((i, r.map_err(Into::into), at));
    })
}

/// Run W5 with `participants` sessions: `resigns` failovers after a
/// resignation, then `expiries` after the leader's session is expired.
///
/// # Errors
/// Server errors.
pub async fn election(
    target: &Target,
    dir: &str,
    participants: usize,
    resigns: usize,
    expiries: usize,
) -> BenchResult<Failovers> {
    let mut slots: Vec<(Session, Expirer)> = Vec::new();
    for _ in 0..participants.max(2) {
        slots.push(target.open_expirable().await?);
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Elected>();
    let mut tasks = Vec::new();
    for (i, (s, _)) in slots.iter().enumerate() {
        tasks.push(campaign(i, s.clone(), dir.to_owned(), tx.clone()));
    }
    let (mut leader_i, first, _) = rx.recv().await.ok_or("election tasks ended")?;
    let mut leadership = first?;
    let mut out = Failovers::default();
    for round in 0..resigns + expiries {
        let t0 = Instant::now();
        let mut ended = None;
        if round < resigns {
            leadership.resign().await?;
            let s = slots[leader_i].0.clone();
            tasks.push(campaign(leader_i, s, dir.to_owned(), tx.clone()));
        } else {
            target.expire(&slots[leader_i].1).await?;
            ended = Some(Instant::now());
            drop(leadership);
            let fresh = target.open_expirable().await?;
            let s = fresh.0.clone();
            let old = std::mem::replace(&mut slots[leader_i], fresh);
            drop(old);
            tasks.push(campaign(leader_i, s, dir.to_owned(), tx.clone()));
        }
        let (i, next, at) = rx.recv().await.ok_or("election tasks ended")?;
        leadership = next?;
        leader_i = i;
        let d = at.saturating_duration_since(t0);
        if round < resigns {
            out.after_resign.push(d);
        } else {
            out.after_expiry.push(d);
            if let Some(e) = ended {
                out.after_session_end.push(at.saturating_duration_since(e));
            }
        }
    }
    let _ = leadership.resign().await;
    for t in tasks {
        t.abort();
    }
    for (s, _) in slots {
        let _ = s.close().await;
    }
    Ok(out)
}

//! Quorum lost (2 of 3 members killed) for a few seconds, then restored.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use coord_core::path::join;
use coord_core::recipes::{Election, Lock, LockGuard, Queue};
use coord_core::{CreateMode, Error, Op};
use futures_util::future::join_all;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::support::{assert_all_alive, fenced_increment, make_counter, ms, read_counter, Guarded};
use super::{await_healthy, await_leader, ClusterHarness};
use crate::{await_children, within};

/// The session timeout of the quorum test: the outage and the members'
/// restart must fit well inside it, so the sessions outlive the outage.
pub const QUORUM_SESSION_TIMEOUT: Duration = Duration::from_secs(20);

/// The timeout the test's callers give their calls during the outage.
pub const CALLER_TIMEOUT: Duration = Duration::from_secs(2);

/// How late past its timeout a call may return (a loaded 2-core machine).
pub const MARGIN: Duration = Duration::from_millis(1500);

/// How long the quorum stays lost: from the kills to the restarts.
pub const OUTAGE: Duration = Duration::from_secs(4);

/// Run `fut`, timing it; `None` if it had not returned within `bound`.
async fn timed<T>(bound: Duration, fut: impl Future<Output = T>) -> (Duration, Option<T>) {
    let started = Instant::now();
    let out = tokio::time::timeout(bound, fut).await.ok();
    (started.elapsed(), out)
}

/// Whether a call made without a quorum failed as it must: with a typed
/// error — `Timeout` or `ConnectionLost`, never success, another error or
/// a hang — within `bound`. `Ok` with a short account for the figures,
/// `Err` saying what went wrong.
fn failed_in_time<T>(
    what: &str,
    bound: Duration,
    (took, out): (Duration, Option<Result<T, Error>>),
) -> Result<String, String> {
    let kind = match out {
        None => {
            return Err(format!(
                "{what}: had not returned {took:?} into the outage (bound {bound:?})"
            ))
        }
        Some(Ok(_)) => return Err(format!("{what}: succeeded without a quorum")),
        Some(Err(Error::Timeout(_))) => "Timeout",
        Some(Err(Error::ConnectionLost(_))) => "ConnectionLost",
        Some(Err(e)) => {
            return Err(format!(
                "{what}: failed with {e}, not with Timeout or ConnectionLost"
            ))
        }
    };
    if took > bound {
        return Err(format!(
            "{what}: returned {kind} after {took:?}, later than its bound {bound:?}"
        ));
    }
    Ok(format!("{kind}@{}ms", ms(took)))
}

/// The account of a call for the figures, its failure noted in `failures`.
fn account(failures: &mut Vec<String>, checked: Result<String, String>) -> String {
    checked.unwrap_or_else(|e| {
        failures.push(e);
        "FAILED".to_owned()
    })
}

/// What the contender queued behind the holder reports.
pub(crate) type Grant = (Instant, Result<LockGuard, Error>);

/// Assert the contender queued behind the holder has not been granted the
/// lock (nor failed) yet.
pub(crate) fn assert_not_granted(when: &str, granted: &mut oneshot::Receiver<Grant>) {
    match granted.try_recv() {
        Err(oneshot::error::TryRecvError::Empty) => {}
        Ok((_, Ok(g))) => panic!(
            "the contender was granted the lock (token {}) {when}",
            g.fencing_token()
        ),
        Ok((_, Err(e))) => panic!("the contender's acquire failed {when}: {e}"),
        Err(oneshot::error::TryRecvError::Closed) => panic!("the contender's task died {when}"),
    }
}

/// Lose the quorum — kill -9 the leader and one follower of 3 — for
/// [`OUTAGE`], then restart both. While there is no quorum, calls with a
/// caller's timeout (`acquire_timeout`, `campaign_timeout`, `take_timeout`,
/// all of [`CALLER_TIMEOUT`]) fail with `Timeout` or `ConnectionLost`
/// within the timeout plus [`MARGIN`], and a holder's guarded write fails
/// likewise within the backend's request timeout. Afterwards every session
/// is alive, the lock holder's guarded write lands (its hold outlived the
/// outage), the contender queued behind it was not granted meanwhile and
/// is granted on release with a larger token, the guarded counter equals
/// the accepted writes, and the timed-out attempts left no node behind.
pub async fn cluster_quorum_loss_fails_fast_and_keeps_holds(h: &dyn ClusterHarness) {
    let root = h.root("cluster_quorum_loss");
    let lock_dir = join(&root, "lock");
    let counter = join(&root, "counter");
    let scratch = join(&root, "outage-write");
    let t = QUORUM_SESSION_TIMEOUT;
    let holder = h.open(t).await;
    let waiter = h.open(t).await;
    let other = h.open(t).await;
    let sessions = [holder.clone(), waiter.clone(), other.clone()];
    make_counter(&holder, &counter).await;
    holder
        .create(&scratch, b"before", CreateMode::Persistent)
        .await
        .expect("create the scratch node");

    let g = Arc::new(Guarded::default());
    let guard = Lock::new(&holder, &lock_dir)
        .expect("lock")
        .acquire()
        .await
        .expect("acquire a free lock");
    let token_a = guard.fencing_token();
    g.enter(0, token_a);
    fenced_increment(&g, 0, &guard, &holder, &counter)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (tx, mut granted) = oneshot::channel::<Grant>();
    let next = Lock::new(&waiter, &lock_dir).expect("lock");
    tokio::spawn(async move {
        let r = next.acquire().await;
        let _ = tx.send((Instant::now(), r));
    });
    await_children(&other, &lock_dir, "the contender queued", |k| k.len() == 2).await;

    let leader = await_leader(h).await;
    let victims = [leader, (leader + 1) % h.members()];
    join_all(victims.iter().map(|m| h.kill(*m))).await;
    let lost_at = Instant::now();

    let bound = CALLER_TIMEOUT + MARGIN;
    let write_bound = h.request_timeout(t) + MARGIN;
    let other_lock = Lock::new(&other, &join(&root, "other-lock")).expect("lock");
    let election = Election::new(&other, &join(&root, "election")).expect("election");
    let queue = Queue::reliable(&other, &join(&root, "queue")).expect("queue");
    let (acquire, campaign, take, write) = tokio::join!(
        timed(bound, other_lock.acquire_timeout(CALLER_TIMEOUT)),
        timed(bound, election.campaign_timeout(b"x", CALLER_TIMEOUT)),
        timed(bound, queue.take_timeout(CALLER_TIMEOUT)),
        timed(
            write_bound,
            guard.write(Op::Set {
                path: scratch.clone(),
                data: b"outage".to_vec(),
                version: None,
            })
        ),
    );
    // Checked at the end, so one call's failure does not hide the others'
    // nor what happens to the holds.
    let mut failures = Vec::new();
    let acquire = account(
        &mut failures,
        failed_in_time("acquire_timeout(2s) without a quorum", bound, acquire),
    );
    let campaign = account(
        &mut failures,
        failed_in_time("campaign_timeout(2s) without a quorum", bound, campaign),
    );
    let take = account(
        &mut failures,
        failed_in_time("take_timeout(2s) without a quorum", bound, take),
    );
    let write = account(
        &mut failures,
        failed_in_time(
            "the holder's guarded write without a quorum",
            write_bound,
            write,
        ),
    );
    assert_not_granted("while there was no quorum", &mut granted);

    // The outage's length is the point of the test, not a wait for a
    // condition.
    tokio::time::sleep_until(lost_at + OUTAGE).await;
    let restarted_at = Instant::now();
    join_all(victims.iter().map(|m| h.restart(*m))).await;
    fenced_increment(&g, 0, &guard, &holder, &counter)
        .await
        .unwrap_or_else(|e| panic!("the holder's hold did not outlive the outage: {e}"));
    let recovered = restarted_at.elapsed();
    let outage = restarted_at - lost_at;
    assert_not_granted("while its holder still held it", &mut granted);
    assert_all_alive("after the quorum came back", &sessions).await;

    g.leave(0);
    guard.release().await.expect("release after the outage");
    let (_, got) = within("the contender's grant after the release", &mut granted)
        .await
        .expect("the contender's task");
    let next_guard = got.expect("the contender acquires");
    assert!(
        next_guard.fencing_token() > token_a,
        "the next holder's token {} is not larger than {token_a}",
        next_guard.fencing_token()
    );
    g.enter(1, next_guard.fencing_token());
    fenced_increment(&g, 1, &next_guard, &waiter, &counter)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    g.leave(1);
    next_guard.release().await.expect("release");
    g.check("holds through a quorum loss");
    let count = read_counter(&other, &counter).await;
    assert_eq!(
        count,
        g.accepted() as u64,
        "the guarded counter disagrees with the accepted writes"
    );
    await_healthy(h).await;
    for dir in ["other-lock", "election"] {
        await_children(
            &other,
            &join(&root, dir),
            "no node left by a timed-out call",
            |k| k.is_empty(),
        )
        .await;
    }
    let scratch_now = other
        .get(&scratch)
        .await
        .expect("read the scratch node")
        .map(|n| String::from_utf8_lossy(&n.data).into_owned());
    println!(
        "cluster figures: backend={} test=quorum_loss killed=member{}(leader)+member{} \
         session_timeout={}ms outage_ms={} acquire_timeout={acquire} campaign_timeout={campaign} \
         take_timeout={take} guarded_write={write} write_applied_later={} \
         restart_to_guarded_write_ms={} holds_survived=true",
        h.name(),
        victims[0],
        victims[1],
        ms(t),
        ms(outage),
        scratch_now.as_deref() == Some("outage"),
        ms(recovered),
    );
    for s in &sessions {
        let _ = s.close().await;
    }
    assert!(
        failures.is_empty(),
        "calls without a quorum: {}",
        failures.join("; ")
    );
}

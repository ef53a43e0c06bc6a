//! What the cluster tests share: the protected resource (holders counted,
//! fencing tokens checked), the guarded increment every hold makes, and
//! small timing helpers.

use std::sync::Mutex;
use std::time::Duration;

use coord_core::prelude::Hold;
use coord_core::{CreateMode, Error, Op, Session, SessionState};
use tokio::time::Instant;

use crate::CONDITION_DEADLINE;

/// The session timeout of the kill tests: well above the time a cluster
/// takes to elect a leader (about a second with the test clusters'
/// settings), so sessions must survive a member's death.
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a holder keeps its hold after its guarded write: the window in
/// which a second, overlapping grant would be caught.
pub(crate) const HOLD: Duration = Duration::from_millis(5);

/// The resource the tests protect, as a store that refuses older tokens
/// does it, plus the in-test count of who holds at each moment. Every
/// violation is recorded (tasks cannot fail the test themselves) and
/// reported by [`Guarded::check`].
#[derive(Debug, Default)]
pub(crate) struct Guarded {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Who holds now: (worker, token).
    holders: Vec<(usize, u64)>,
    /// The largest token accepted so far.
    max_token: u64,
    /// When each accepted write was accepted.
    accepted: Vec<Instant>,
    /// Retryable errors met and retried (failover noise), by the workers.
    retried: usize,
    failures: Vec<String>,
}

impl Guarded {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Worker `who` was granted the hold with `token`: nobody else may
    /// hold, and the token must be larger than every token the resource
    /// accepted before (tokens grow across successive holders).
    pub(crate) fn enter(&self, who: usize, token: u64) {
        let mut s = self.state();
        if !s.holders.is_empty() {
            let msg = format!(
                "two holders at once: worker {who} (token {token}) was granted while {:?} held",
                s.holders
            );
            s.failures.push(msg);
        }
        if token <= s.max_token {
            let msg = format!(
                "worker {who} was granted with token {token}, not larger than the last accepted {}",
                s.max_token
            );
            s.failures.push(msg);
        }
        s.holders.push((who, token));
    }

    /// Worker `who` stopped holding (before it releases).
    pub(crate) fn leave(&self, who: usize) {
        self.state().holders.retain(|(w, _)| *w != who);
    }

    /// The resource accepts a write made with `token` only if no larger
    /// token was accepted before (the same hold may write again).
    pub(crate) fn accept(&self, who: usize, token: u64) {
        let mut s = self.state();
        if token < s.max_token {
            let msg = format!(
                "worker {who}'s write with token {token} reached the resource after token {}",
                s.max_token
            );
            s.failures.push(msg);
        } else {
            s.max_token = token;
        }
        s.accepted.push(Instant::now());
    }

    pub(crate) fn retried(&self) {
        self.state().retried += 1;
    }

    pub(crate) fn fail(&self, msg: String) {
        self.state().failures.push(msg);
    }

    /// How many writes were accepted.
    pub(crate) fn accepted(&self) -> usize {
        self.state().accepted.len()
    }

    pub(crate) fn accepted_times(&self) -> Vec<Instant> {
        self.state().accepted.clone()
    }

    pub(crate) fn retries(&self) -> usize {
        self.state().retried
    }

    /// Panic with every violation recorded so far.
    pub(crate) fn check(&self, what: &str) {
        let s = self.state();
        assert!(s.failures.is_empty(), "{what}: {}", s.failures.join("; "));
    }

    /// Wait until `n` writes were accepted, failing at once on a violation.
    pub(crate) async fn await_accepted(&self, what: &str, n: usize) {
        let deadline = Instant::now() + CONDITION_DEADLINE;
        loop {
            self.check(what);
            let got = self.accepted();
            if got >= n {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: only {got} of {n} guarded writes were accepted within {CONDITION_DEADLINE:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// The counter node's data: the count, and the id of the write that made
/// it (unique per [`fenced_increment`], so a retry recognises its own
/// write after a lost answer).
fn counter_data(count: u64, write_id: &str) -> Vec<u8> {
    format!("{count}:{write_id}").into_bytes()
}

fn parse_counter(data: &[u8]) -> Option<(u64, &str)> {
    let s = std::str::from_utf8(data).ok()?;
    let (count, write_id) = s.split_once(':')?;
    Some((count.parse().ok()?, write_id))
}

/// Make the counter at `path` (count 0).
pub(crate) async fn make_counter(session: &Session, path: &str) {
    session
        .create(path, &counter_data(0, "initial"), CreateMode::Persistent)
        .await
        .unwrap_or_else(|e| panic!("create the counter {path}: {e}"));
}

/// The counter's count.
pub(crate) async fn read_counter(session: &Session, path: &str) -> u64 {
    let node = session
        .get(path)
        .await
        .unwrap_or_else(|e| panic!("read the counter {path}: {e}"))
        .unwrap_or_else(|| panic!("the counter {path} is gone"));
    parse_counter(&node.data)
        .unwrap_or_else(|| panic!("the counter {path} holds {:?}", node.data))
        .0
}

/// One attempt at the protected write: read the counter, then write
/// count + 1 through the hold's guarded write, compare-and-set on the
/// version read. Also done when a lost answer's write is found there, by
/// its id.
async fn increment_once(
    hold: &dyn Hold,
    session: &Session,
    path: &str,
    write_id: &str,
) -> Result<(), Error> {
    let node = session.get(path).await?.ok_or_else(|| Error::NotFound {
        path: path.to_owned(),
    })?;
    let Some((count, last)) = parse_counter(&node.data) else {
        return Err(Error::InvalidArgument(format!(
            "the counter {path} holds {:?}",
            node.data
        )));
    };
    if last == write_id {
        // Our earlier attempt landed; its answer was lost.
        return Ok(());
    }
    hold.write(Op::Set {
        path: path.to_owned(),
        data: counter_data(count + 1, write_id),
        version: Some(node.stat.version),
    })
    .await?;
    Ok(())
}

/// The write every hold makes, once: [`increment_once`], retried through
/// connection losses (a failover) for up to [`CONDITION_DEADLINE`]; then
/// the resource accepts the token. A version mismatch means someone wrote
/// while we held: a violation. Any other error is returned.
pub(crate) async fn fenced_increment(
    g: &Guarded,
    who: usize,
    hold: &dyn Hold,
    session: &Session,
    path: &str,
) -> Result<(), String> {
    let token = hold.fencing_token();
    let write_id = uuid::Uuid::new_v4().simple().to_string();
    let deadline = Instant::now() + CONDITION_DEADLINE;
    loop {
        match increment_once(hold, session, path, &write_id).await {
            Ok(()) => {
                g.accept(who, token);
                return Ok(());
            }
            Err(e) if e.is_retryable() && Instant::now() < deadline => {
                g.retried();
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(Error::VersionMismatch { .. }) => {
                return Err(format!(
                    "worker {who} (token {token}): the counter changed under its hold"
                ));
            }
            Err(e) => {
                return Err(format!(
                    "worker {who} (token {token}): the guarded write failed: {e}"
                ))
            }
        }
    }
}

/// Assert every session in `sessions` is alive (connected, or about to be:
/// waits up to [`CONDITION_DEADLINE`] for `Connected`), never expired.
pub(crate) async fn assert_all_alive(what: &str, sessions: &[Session]) {
    for (i, s) in sessions.iter().enumerate() {
        let mut rx = s.state_watch();
        let got = tokio::time::timeout(
            CONDITION_DEADLINE,
            rx.wait_for(|st| *st == SessionState::Connected || st.is_terminal()),
        )
        .await;
        assert!(
            matches!(got, Ok(Ok(ref st)) if **st == SessionState::Connected),
            "{what}: session {i} ({}) is {:?}, not Connected: it did not survive",
            s.id(),
            s.state()
        );
    }
}

/// Milliseconds, for figures.
pub(crate) fn ms(d: Duration) -> u128 {
    d.as_millis()
}

/// From the accepted-write instants `times` (in order): the longest gap
/// between two consecutive ones from the last before `fault` to the
/// `window`-th after it — the pause the fault caused — and how long after
/// `fault` that pause ended (writes already under way when the fault hit
/// may land inside the pause).
pub(crate) fn pause_around(
    times: &[Instant],
    fault: Instant,
    window: usize,
) -> (Duration, Duration) {
    let Some(first_after) = times.iter().position(|t| *t > fault) else {
        return (Duration::MAX, Duration::MAX);
    };
    let start = first_after.saturating_sub(1);
    let end = (first_after + window).min(times.len());
    let Some(gap_end) = (start + 1..end).max_by_key(|i| times[*i] - times[*i - 1]) else {
        return (times[first_after] - fault, times[first_after] - fault);
    };
    (
        times[gap_end] - times[gap_end - 1],
        times[gap_end].saturating_duration_since(fault),
    )
}

/// Count a session's suspensions in the background, for figures: how many
/// of the sessions had to move (or wait) during a fault.
pub(crate) fn count_suspensions(
    session: &Session,
) -> std::sync::Arc<std::sync::atomic::AtomicUsize> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let n = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = n.clone();
    let mut rx = session.state_watch();
    tokio::spawn(async move {
        while rx.changed().await.is_ok() {
            let st = *rx.borrow_and_update();
            if st == SessionState::Suspended {
                counter.fetch_add(1, Ordering::Relaxed);
            }
            if st.is_terminal() {
                return;
            }
        }
    });
    n
}

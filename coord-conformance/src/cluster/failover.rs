//! The cluster's leader killed while an election hands leadership over,
//! and while consumers drain a reliable queue.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coord_core::path::join;
use coord_core::recipes::{Election, Queue};
use coord_core::{Error, Session};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use super::support::{
    assert_all_alive, fenced_increment, make_counter, ms, pause_around, read_counter, Guarded,
    HOLD, SESSION_TIMEOUT,
};
use super::{await_healthy, await_leader, ClusterHarness};
use crate::CONDITION_DEADLINE;

/// Participants of the election test, and consumers of the queue test.
pub const PARTICIPANTS: usize = 4;

/// The term at whose end the cluster's leader is killed (the outgoing
/// leader resigns only once the member is dead), and the terms that must
/// follow it.
const KILL_TERM: usize = 10;
const AFTER_TERMS: usize = 10;

/// Items the queue test drains, and how many are acknowledged before the
/// kill.
pub const ITEMS: usize = 120;
const ACKED_BEFORE_KILL: usize = 30;

/// Asks the test to kill the cluster's leader; answered once it is dead.
type KillRequest = oneshot::Sender<()>;

/// One participant: campaign, count itself in, make the guarded write as
/// leader, hold a moment, count itself out, resign; again until told to
/// stop. The first one to end term [`KILL_TERM`] or later asks for the
/// cluster's leader to be killed and resigns only once it is dead, so the
/// election's failover runs through the cluster's.
#[allow(clippy::too_many_arguments)]
async fn election_worker(
    who: usize,
    session: Session,
    dir: String,
    counter: String,
    g: Arc<Guarded>,
    mut stop: watch::Receiver<bool>,
    kill: mpsc::Sender<KillRequest>,
    kill_claimed: Arc<AtomicBool>,
) {
    let election = match Election::new(&session, &dir) {
        Ok(e) => e,
        Err(e) => return g.fail(format!("participant {who}: Election::new: {e}")),
    };
    let value = format!("participant-{who}");
    loop {
        let campaigned = tokio::select! {
            r = election.campaign(value.as_bytes()) => r,
            _ = stop.wait_for(|s| *s) => return,
        };
        let leadership = match campaigned {
            Ok(l) => l,
            Err(e) if e.is_retryable() => {
                g.retried();
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
            Err(e) => return g.fail(format!("participant {who}: campaign failed: {e}")),
        };
        g.enter(who, leadership.fencing_token());
        let wrote = fenced_increment(&g, who, &leadership, &session, &counter).await;
        tokio::time::sleep(HOLD).await;
        g.leave(who);
        if let Err(e) = wrote {
            return g.fail(e);
        }
        if g.accepted() >= KILL_TERM && !kill_claimed.swap(true, Ordering::SeqCst) {
            let (tx, rx) = oneshot::channel();
            if kill.send(tx).await.is_ok() {
                let _ = rx.await;
            }
        }
        if let Err(e) = leadership.resign().await {
            return g.fail(format!("participant {who}: resign failed: {e}"));
        }
    }
}

/// What the observer has seen so far: the instant and token of every
/// leader, and the lost connections it went through (instant, error), read
/// by the test while the observer runs.
#[derive(Debug, Default)]
struct Sightings {
    leaders: Vec<(Instant, u64)>,
    lost: Vec<(Instant, String)>,
}

/// The sightings, whatever a panicking holder left.
fn sightings(seen: &Mutex<Sightings>) -> std::sync::MutexGuard<'_, Sightings> {
    seen.lock().unwrap_or_else(|e| e.into_inner())
}

/// Follow the election as an observer: every leader it reports must have a
/// larger token than the one before. Records each leader (and each lost
/// connection) in `seen` as it comes; returns when told to stop.
async fn observe(
    session: Session,
    dir: String,
    g: Arc<Guarded>,
    seen: Arc<Mutex<Sightings>>,
    mut stop: watch::Receiver<bool>,
) {
    let election = match Election::new(&session, &dir) {
        Ok(e) => e,
        Err(e) => return g.fail(format!("observer: Election::new: {e}")),
    };
    let mut observer = election.observe();
    loop {
        let next = tokio::select! {
            r = observer.next() => r,
            _ = stop.wait_for(|s| *s) => return,
        };
        match next {
            Some(Ok(leader)) => {
                let mut seen = sightings(&seen);
                if let Some((_, last)) = seen.leaders.last() {
                    if leader.token <= *last {
                        g.fail(format!(
                            "the observer saw leader token {} after {last}",
                            leader.token
                        ));
                    }
                }
                seen.leaders.push((Instant::now(), leader.token));
            }
            // A lost connection leaves the observer usable.
            Some(Err(e)) if e.is_retryable() => {
                sightings(&seen).lost.push((Instant::now(), e.to_string()));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Some(Err(e)) => return g.fail(format!("observer: {e}")),
            None => return g.fail("observer: ended without an error".to_owned()),
        }
    }
}

/// Wait until the observer has reported a leader that took office after
/// `killed_at` (the participants go on campaigning meanwhile): its own
/// session reconnects on its own schedule, which on a loaded machine may
/// come after the terms the test counts. Panics, saying what the observer
/// went through, when [`CONDITION_DEADLINE`] passes first.
async fn await_observed_after(
    h: &dyn ClusterHarness,
    session: &Session,
    seen: &Mutex<Sightings>,
    g: &Guarded,
    killed_at: Instant,
) {
    let deadline = Instant::now() + CONDITION_DEADLINE;
    loop {
        g.check("waiting for the observer");
        if sightings(seen).leaders.iter().any(|(t, _)| *t > killed_at) {
            return;
        }
        if Instant::now() >= deadline {
            let member = h.connected_member(session).await;
            let seen = sightings(seen);
            let since = |t: &Instant| {
                if *t >= killed_at {
                    format!("+{}ms", ms(*t - killed_at))
                } else {
                    format!("-{}ms", ms(killed_at - *t))
                }
            };
            let lost: Vec<String> = seen
                .lost
                .iter()
                .map(|(t, e)| format!("{} {e}", since(t)))
                .collect();
            panic!(
                "the observer saw no leader within {CONDITION_DEADLINE:?} of the kill, while \
                 {} terms were accepted (it saw {} leaders before, the last at {}); its \
                 session is {:?}, connected to member {member:?}; lost connections \
                 (relative to the kill): {lost:?}",
                g.accepted(),
                seen.leaders.len(),
                seen.leaders
                    .last()
                    .map_or("never".to_owned(), |(t, _)| since(t)),
                session.state(),
            );
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// kill -9 the cluster's leader while an election hands leadership from
/// one participant to the next (4 participants campaigning in turn; the
/// outgoing leader resigns only once the member is dead). One leader at a
/// time (in-test count); every leader's guarded write is accepted by a
/// resource that refuses tokens not larger than the last; the guarded term
/// counter equals the accepted writes; an observer sees leader tokens only
/// grow, and sees a leader after the kill (awaited while the participants
/// go on: its session reconnects on its own schedule); the next leader takes office
/// within the session timeout (printed as `cluster figures`); no session
/// expires.
pub async fn cluster_election_failover_survives_leader_kill(h: &dyn ClusterHarness) {
    let root = h.root("cluster_election_failover");
    let dir = join(&root, "election");
    let counter = join(&root, "term");
    let mut sessions = Vec::new();
    for _ in 0..=PARTICIPANTS {
        sessions.push(h.open(SESSION_TIMEOUT).await);
    }
    make_counter(&sessions[0], &counter).await;
    let g = Arc::new(Guarded::default());
    let (stop_tx, stop) = watch::channel(false);
    let (kill_tx, mut kill_rx) = mpsc::channel::<KillRequest>(1);
    let claimed = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Sightings::default()));
    let observer = tokio::spawn(observe(
        sessions[PARTICIPANTS].clone(),
        dir.clone(),
        g.clone(),
        seen.clone(),
        stop.clone(),
    ));
    let workers: Vec<_> = sessions[..PARTICIPANTS]
        .iter()
        .enumerate()
        .map(|(who, s)| {
            tokio::spawn(election_worker(
                who,
                s.clone(),
                dir.clone(),
                counter.clone(),
                g.clone(),
                stop.clone(),
                kill_tx.clone(),
                claimed.clone(),
            ))
        })
        .collect();

    let deadline = Instant::now() + CONDITION_DEADLINE;
    let request = loop {
        g.check("terms before the kill");
        match tokio::time::timeout(Duration::from_millis(10), kill_rx.recv()).await {
            Ok(r) => break r.expect("the participants ended before the kill"),
            Err(_) => assert!(
                Instant::now() < deadline,
                "no leader reached term {KILL_TERM} within {CONDITION_DEADLINE:?} ({} terms)",
                g.accepted()
            ),
        }
    };
    let victim = await_leader(h).await;
    let killed_at = Instant::now();
    h.kill(victim).await;
    let _ = request.send(());
    let before = g.accepted();
    g.await_accepted("terms after the kill", before + AFTER_TERMS)
        .await;
    let (longest, resumed) = pause_around(&g.accepted_times(), killed_at, AFTER_TERMS);

    h.restart(victim).await;
    await_healthy(h).await;
    let back = g.accepted();
    g.await_accepted("terms after the member came back", back + 3)
        .await;
    await_observed_after(h, &sessions[PARTICIPANTS], &seen, &g, killed_at).await;
    stop_tx.send_replace(true);
    for w in workers {
        w.await.expect("a participant panicked");
    }
    observer.await.expect("the observer panicked");
    g.check("election failover through a leader kill");
    let observed = sightings(&seen).leaders.len();
    assert_all_alive("after the leader kill", &sessions).await;
    let terms = read_counter(&sessions[0], &counter).await;
    let accepted = g.accepted() as u64;
    assert_eq!(
        terms, accepted,
        "the guarded term counter says {terms}, the resource accepted {accepted} writes"
    );
    assert!(
        longest < SESSION_TIMEOUT,
        "leadership paused for {longest:?} around the kill, more than the session timeout"
    );
    println!(
        "cluster figures: backend={} test=election_failover killed=member{victim}(leader) \
         participants={PARTICIPANTS} session_timeout={}ms terms={accepted} observed_leaders={} \
         longest_term_gap_ms={} kill_to_resumed_ms={} retried_errors={}",
        h.name(),
        ms(SESSION_TIMEOUT),
        observed,
        ms(longest),
        ms(resumed),
        g.retries(),
    );
    for s in &sessions {
        let _ = s.close().await;
    }
}

/// What the consumers of the queue test got: deliveries and
/// acknowledgements per item, and when each acknowledgement landed.
#[derive(Debug, Default)]
struct Ledger {
    inner: Mutex<LedgerInner>,
}

#[derive(Debug, Default)]
struct LedgerInner {
    /// Item → (deliveries, acknowledgements).
    items: BTreeMap<String, (u32, u32)>,
    acked_at: Vec<Instant>,
    retried: usize,
    failures: Vec<String>,
}

impl Ledger {
    fn inner(&self) -> std::sync::MutexGuard<'_, LedgerInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn acked(&self) -> usize {
        self.inner().acked_at.len()
    }

    fn fail(&self, msg: String) {
        self.inner().failures.push(msg);
    }

    fn check(&self, what: &str) {
        let inner = self.inner();
        assert!(
            inner.failures.is_empty(),
            "{what}: {}",
            inner.failures.join("; ")
        );
    }

    async fn await_acked(&self, what: &str, n: usize) {
        let deadline = Instant::now() + CONDITION_DEADLINE;
        loop {
            self.check(what);
            let got = self.acked();
            if got >= n {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: only {got} of {n} items acknowledged within {CONDITION_DEADLINE:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// One consumer: take (with a short timeout, to notice the end), note the
/// delivery, acknowledge, note the acknowledgement; until every item is
/// acknowledged or it is told to stop. Retryable errors are retried;
/// anything else is recorded as a failure and ends the consumer.
async fn consume(
    who: usize,
    session: Session,
    dir: String,
    ledger: Arc<Ledger>,
    mut stop: watch::Receiver<bool>,
) {
    let q = match Queue::reliable(&session, &dir) {
        Ok(q) => q,
        Err(e) => return ledger.fail(format!("consumer {who}: Queue::reliable: {e}")),
    };
    while ledger.acked() < ITEMS {
        let taken = tokio::select! {
            r = q.take_timeout(Duration::from_millis(500)) => r,
            _ = stop.wait_for(|s| *s) => return,
        };
        let delivery = match taken {
            Ok(d) => d,
            Err(Error::Timeout(_)) => continue,
            Err(e) if e.is_retryable() => {
                ledger.inner().retried += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
            Err(e) => return ledger.fail(format!("consumer {who}: take failed: {e}")),
        };
        let item = String::from_utf8_lossy(delivery.data()).into_owned();
        ledger.inner().items.entry(item.clone()).or_default().0 += 1;
        match delivery.ack().await {
            Ok(()) => {
                let mut inner = ledger.inner();
                inner.items.entry(item).or_default().1 += 1;
                inner.acked_at.push(Instant::now());
            }
            Err(e) => return ledger.fail(format!("consumer {who}: ack of {item} failed: {e}")),
        }
    }
}

/// kill -9 the cluster's leader while 4 consumers drain a reliable queue
/// of [`ITEMS`] items (after a quarter is acknowledged). Every item is
/// delivered exactly once and acknowledged exactly once (no loss, no
/// duplicate; no consumer session expires, so no lease ends
/// unacknowledged), the queue ends empty, and the drain's pause around
/// the kill is printed as `cluster figures`.
pub async fn cluster_queue_drain_survives_leader_kill(h: &dyn ClusterHarness) {
    let root = h.root("cluster_queue_drain");
    let dir = join(&root, "queue");
    let producer = h.open(SESSION_TIMEOUT).await;
    let q = Queue::reliable(&producer, &dir).expect("queue");
    let expected: Vec<String> = (0..ITEMS).map(|k| format!("item-{k:04}")).collect();
    for item in &expected {
        q.offer(item.as_bytes()).await.expect("offer");
    }
    let mut consumers = Vec::new();
    for _ in 0..PARTICIPANTS {
        consumers.push(h.open(SESSION_TIMEOUT).await);
    }
    let ledger = Arc::new(Ledger::default());
    let (stop_tx, stop) = watch::channel(false);
    let started = Instant::now();
    let tasks: Vec<_> = consumers
        .iter()
        .enumerate()
        .map(|(who, s)| {
            tokio::spawn(consume(
                who,
                s.clone(),
                dir.clone(),
                ledger.clone(),
                stop.clone(),
            ))
        })
        .collect();

    ledger
        .await_acked("acknowledgements before the kill", ACKED_BEFORE_KILL)
        .await;
    let victim = await_leader(h).await;
    let killed_at = Instant::now();
    h.kill(victim).await;
    ledger
        .await_acked("the rest of the drain after the kill", ITEMS)
        .await;
    let drained = started.elapsed();
    stop_tx.send_replace(true);
    for t in tasks {
        t.await.expect("a consumer panicked");
    }
    h.restart(victim).await;
    await_healthy(h).await;
    ledger.check("queue drain through a leader kill");

    let (items, acked_at, retried) = {
        let inner = ledger.inner();
        (inner.items.clone(), inner.acked_at.clone(), inner.retried)
    };
    let wrong: Vec<_> = items
        .iter()
        .filter(|(_, (delivered, acked))| *delivered != 1 || *acked != 1)
        .collect();
    assert!(
        wrong.is_empty(),
        "items not delivered and acknowledged exactly once (item: (deliveries, acks)): {wrong:?}"
    );
    let missing: Vec<_> = expected
        .iter()
        .filter(|i| !items.contains_key(*i))
        .collect();
    assert!(missing.is_empty(), "items never delivered: {missing:?}");
    assert_eq!(items.len(), ITEMS, "deliveries of items never offered");
    assert_eq!(q.len().await.expect("len"), 0, "the queue is not empty");
    assert_all_alive("after the leader kill", &consumers).await;
    let (longest, resumed) = pause_around(&acked_at, killed_at, 10);
    assert!(
        longest < SESSION_TIMEOUT,
        "the drain paused for {longest:?} around the kill, more than the session timeout"
    );
    println!(
        "cluster figures: backend={} test=queue_drain killed=member{victim}(leader) \
         consumers={PARTICIPANTS} items={ITEMS} session_timeout={}ms drain_ms={} \
         longest_ack_gap_ms={} kill_to_resumed_ms={} retried_errors={retried}",
        h.name(),
        ms(SESSION_TIMEOUT),
        ms(drained),
        ms(longest),
        ms(resumed),
    );
    for s in consumers.iter().chain([&producer]) {
        let _ = s.close().await;
    }
}

//! What the recipes built over the election, the locks and the queue
//! promise when the network fails, tested under the fault that breaks it
//! (the module [`crate::faults`] does the same for the lock, the election,
//! the group and the plain queue). Each test puts one session behind the
//! harness's [`crate::fault::Fault`] and checks the others through direct
//! sessions:
//!
//! - a partitioned [`LeaderLatch`] reports `NotLeader` before another
//!   latch leads; a cut shorter than the session changes nothing;
//! - a partitioned [`Partitioner`] member gives up its items before the
//!   healthy member owns them, and no item ever has two owners;
//! - an item leased by a partitioned consumer of a reliable priority or
//!   delay queue is delivered again, once, after the consumer learned of
//!   its loss.
//!
//! The partition tests print one line each, `recipe fault figures: …`,
//! with what they measured (from the partition to the holder's loss, and
//! from its loss to the next party's gain).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coord_core::path::join;
use coord_core::prelude::WorkQueue;
use coord_core::recipes::{
    DelayQueue, Delivery, LatchEvent, LatchWatcher, LeaderLatch, PartitionState, Partitioner,
    PriorityQueue,
};
use coord_core::{CreateMode, Error, Op, Session, SessionState};
use futures_util::future::join_all;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::faults::{PARTITION_TIMEOUT, ROUNDS, SHORT_FAULT_TIMEOUT};
use crate::{eventually, within, Harness, CONDITION_DEADLINE};

/// Print what a partition test measured: from the partition to the
/// holder's loss, and from the loss to the next party's gain.
fn report(h: &dyn Harness, test: &str, detect: &[Duration], gap: &[Duration]) {
    let figures = |v: &[Duration]| {
        let mut v: Vec<u128> = v.iter().map(Duration::as_millis).collect();
        v.sort_unstable();
        format!("{}/{}/{}", v[0], v[v.len() / 2], v[v.len() - 1])
    };
    println!(
        "recipe fault figures: backend={} test={test} session_timeout={}ms rounds={} \
         detect_ms(min/median/max)={} gap_to_next_ms(min/median/max)={}",
        h.name(),
        PARTITION_TIMEOUT.as_millis(),
        detect.len(),
        figures(detect),
        figures(gap),
    );
}

/// Await the session's state `want`.
async fn await_session_state(what: &str, session: &Session, want: SessionState) {
    let mut rx = session.state_watch();
    within(what, rx.wait_for(|s| *s == want))
        .await
        .unwrap_or_else(|_| panic!("{what}: the state watch closed"));
}

/// Await a spawned task, failing with `what` if it does not end or panics.
async fn joined<T>(what: &str, task: JoinHandle<T>) -> T {
    within(what, task)
        .await
        .unwrap_or_else(|e| panic!("{what}: the task failed: {e}"))
}

/// Start a latch through `session` and wait until it leads; returns it and
/// its token.
async fn leading_latch(session: &Session, dir: &str, id: &str) -> (LeaderLatch, u64) {
    let latch = LeaderLatch::start(session, dir, id).expect("start the latch");
    let token = within("the first latch leads", latch.await_leadership())
        .await
        .expect("the first latch of an empty election leads");
    (latch, token)
}

/// Start a latch through `session` that queues behind a leader; returns
/// once its offer is made.
async fn queued_latch(session: &Session, dir: &str, id: &str) -> LeaderLatch {
    let latch = LeaderLatch::start(session, dir, id).expect("start the latch");
    eventually("the second latch's offer is made", || async {
        latch.node_path().is_some()
    })
    .await;
    assert!(
        !latch.has_leadership(),
        "the second latch leads while the first does"
    );
    latch
}

/// The instant `watcher` first reports `NotLeader` (`None` if the latch
/// ended without saying so).
async fn not_leader_at(mut watcher: LatchWatcher) -> Option<Instant> {
    loop {
        match watcher.next().await {
            Some(LatchEvent::NotLeader) => return Some(Instant::now()),
            Some(_) => {}
            None => return None,
        }
    }
}

/// One partitioned latch leader, with a second latch queued behind it
/// through a direct session. Returns (partition → loss, loss → next lead).
async fn latch_round(h: &dyn Harness, dir: String) -> (Duration, Duration) {
    let (holder, fault) = h.open_faulty(PARTITION_TIMEOUT).await;
    let other = h.open().await;
    let (leader, token) = leading_latch(&holder, &dir, "first").await;
    let fence = leader.fence().expect("a leading latch has a fence");
    let follower = queued_latch(&other, &dir, "second").await;

    let mut w = leader.watch();
    assert_eq!(w.next().await, Some(LatchEvent::IsLeader { token }));
    // Each side is followed by its own task, so neither instant waits for
    // the other's to be taken.
    let lost = tokio::spawn(not_leader_at(w));
    let probe = leader.watch();
    let next = tokio::spawn(async move {
        let got = follower.await_leadership().await;
        let at = Instant::now();
        // What the partitioned latch says at the moment the next one
        // leads: it must already have given up.
        let leader_then = probe.current();
        (at, got, leader_then, follower)
    });

    let start = Instant::now();
    fault.partition();
    let t_lost = joined("the partitioned latch reports NotLeader", lost)
        .await
        .expect("the partitioned latch ended without reporting NotLeader");
    assert!(!leader.has_leadership());
    assert_eq!(leader.fencing_token(), None);
    let (t_next, got, leader_then, follower) = joined("the second latch leads", next).await;
    let next_token = got.expect("the second latch leads once the first's session is gone");
    assert_eq!(
        leader_then,
        LatchEvent::NotLeader,
        "the second latch led while the partitioned one still reported IsLeader"
    );
    assert!(
        t_lost < t_next,
        "the second latch led {:?} before the partitioned one reported NotLeader",
        t_lost - t_next
    );
    assert!(
        next_token > token,
        "fencing token {next_token} after {token}"
    );
    // It learned from its lease deadline: the session is over here, and
    // its writes fenced by the old term are refused.
    assert_eq!(holder.state(), SessionState::Expired);
    assert!(
        matches!(
            within("await on the lost latch", leader.await_leadership()).await,
            Err(Error::LockLost { .. })
        ),
        "await_leadership on a latch whose session was lost"
    );
    let refused = holder
        .guarded(
            &fence,
            Op::Create {
                path: format!("{dir}-fenced"),
                data: Vec::new(),
                mode: CreateMode::Persistent,
            },
        )
        .await;
    assert!(
        matches!(refused, Err(Error::SessionExpired)),
        "a write fenced by the lost term: {refused:?}"
    );
    fault.heal();
    assert!(
        leader.close().await.is_err(),
        "closing the latch whose session was lost reports why it ended"
    );
    follower.close().await.expect("close the second latch");
    let _ = holder.close().await;
    let _ = other.close().await;
    (t_lost - start, t_next - t_lost)
}

/// A [`LeaderLatch`] leader partitioned past its session timeout reports
/// `NotLeader` (its watcher, `has_leadership`, its token gone) strictly
/// before the latch queued behind it leads, and that one does lead, with a
/// larger token; the old term's fenced writes are refused. Several at
/// once, each on its own election behind its own fault.
pub async fn fault_partitioned_latch_leader_learns_first(h: &dyn Harness) {
    let root = h.root("fault_partitioned_latch_leader_learns_first");
    let rounds =
        join_all((0..ROUNDS).map(|i| latch_round(h, join(&root, &format!("latch{i}"))))).await;
    let (detect, gap): (Vec<_>, Vec<_>) = rounds.into_iter().unzip();
    report(h, "latch", &detect, &gap);
}

/// A cut shorter than the session timeout changes nothing a latch holds:
/// the leader's watcher reports no change, the queued latch never leads
/// meanwhile, and after the reconnect the leader still leads with the same
/// token (a write fenced by its term lands); when it closes, the other
/// leads.
pub async fn fault_short_cut_keeps_latch_leadership(h: &dyn Harness) {
    let root = h.root("fault_short_cut_keeps_latch_leadership");
    let dir = join(&root, "latch");
    let (holder, fault) = h.open_faulty(SHORT_FAULT_TIMEOUT).await;
    let other = h.open().await;
    let (leader, token) = leading_latch(&holder, &dir, "first").await;
    let follower = queued_latch(&other, &dir, "second").await;
    let mut w = leader.watch();
    assert_eq!(w.next().await, Some(LatchEvent::IsLeader { token }));

    let outage = async {
        fault.cut();
        await_session_state("Suspended after the cut", &holder, SessionState::Suspended).await;
        fault.heal();
        await_session_state("Connected after the heal", &holder, SessionState::Connected).await;
    };
    tokio::select! {
        ev = w.next() => panic!("the leader's latch changed to {ev:?} during a cut shorter than the session"),
        r = follower.await_leadership() => panic!("the queued latch led during a short cut of the leader: {r:?}"),
        () = outage => {}
    }
    // A session lost during the cut shows here first: its latch's task
    // learns of the loss a moment after the session state does.
    assert_eq!(
        holder.state(),
        SessionState::Connected,
        "the session did not survive a cut shorter than its timeout"
    );
    assert!(
        leader.has_leadership(),
        "the leader lost its leadership during a short cut"
    );
    let fence = leader.fence().expect("the leader still has a fence");
    let fenced = join(&root, "fenced");
    tokio::select! {
        ev = w.next() => panic!("the leader's latch changed to {ev:?} after the reconnect"),
        r = follower.await_leadership() => panic!("the queued latch led after the leader's reconnect: {r:?}"),
        r = within(
            "a write fenced by the leader's term",
            holder.guarded(
                &fence,
                Op::Create {
                    path: fenced.clone(),
                    data: b"1".to_vec(),
                    mode: CreateMode::Persistent,
                },
            ),
        ) => {
            r.expect("a write fenced by the leader's term after the reconnect: the term survived");
        }
    }
    assert!(leader.has_leadership(), "the leader lost its leadership");
    assert_eq!(leader.fencing_token(), Some(token));
    assert!(!follower.has_leadership(), "both latches lead");
    assert_eq!(holder.state(), SessionState::Connected);

    leader.close().await.expect("close the leader");
    assert_eq!(
        within("the closed leader's watcher", w.next()).await,
        Some(LatchEvent::NotLeader)
    );
    let next = within(
        "the queued latch leads after the close",
        follower.await_leadership(),
    )
    .await
    .expect("the queued latch leads");
    assert!(next > token, "fencing token {next} after {token}");
    follower.close().await.expect("close");
    other.delete(&fenced, None).await.expect("cleanup");
    let _ = holder.close().await;
    let _ = other.close().await;
}

/// Who believes it owns which item, with the instants beliefs begin and
/// end, and every moment an item was believed owned by two members.
#[derive(Debug, Default)]
struct Ownership {
    inner: Mutex<Owned>,
}

#[derive(Debug, Default)]
struct Owned {
    owners: BTreeMap<String, String>,
    /// (item, owner then, new owner).
    overlaps: Vec<(String, String, String)>,
    /// When each (member, item) belief last began.
    began: BTreeMap<(String, String), Instant>,
    /// How each member ended, and when.
    ended: BTreeMap<String, (PartitionState, Instant)>,
}

impl Ownership {
    fn lock(&self) -> std::sync::MutexGuard<'_, Owned> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn begin(&self, member: &str, items: &[String]) {
        let now = Instant::now();
        let mut o = self.lock();
        for item in items {
            if let Some(other) = o.owners.get(item).cloned() {
                if other != member {
                    o.overlaps.push((item.clone(), other, member.to_owned()));
                }
            }
            o.owners.insert(item.clone(), member.to_owned());
            o.began.insert((member.to_owned(), item.clone()), now);
        }
    }

    fn end(&self, member: &str) {
        self.lock().owners.retain(|_, m| m != member);
    }

    fn finished(&self, member: &str, state: PartitionState) {
        let now = Instant::now();
        self.lock()
            .ended
            .entry(member.to_owned())
            .or_insert((state, now));
    }

    fn split(&self) -> BTreeMap<String, Vec<String>> {
        let mut by = BTreeMap::<String, Vec<String>>::new();
        for (item, m) in &self.lock().owners {
            by.entry(m.clone()).or_default().push(item.clone());
        }
        by
    }
}

/// A partitioner member driven as a user drives one: on `Acquired` it
/// starts believing it owns the items, on `Release` it stops and then
/// acknowledges; `Failed` / `Closed` end the belief. Returns the channel
/// that closes it and the task, which returns what `close` returned.
async fn drive(
    session: &Session,
    dir: &str,
    member: &str,
    items: &[String],
    own: &Arc<Ownership>,
) -> (oneshot::Sender<()>, JoinHandle<coord_core::Result<()>>) {
    let p = Partitioner::join(session, dir, member, items.iter().cloned())
        .await
        .expect("join the partitioner");
    let own = own.clone();
    let member = member.to_owned();
    let (close_tx, mut close_rx) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let mut w = p.watch();
        loop {
            let state = tokio::select! {
                s = w.next() => s,
                _ = &mut close_rx => {
                    own.end(&member);
                    own.finished(&member, PartitionState::Closed);
                    return p.close().await;
                }
            };
            match state {
                Some(PartitionState::Acquired(items)) => own.begin(&member, &items),
                Some(PartitionState::Release) => {
                    own.end(&member);
                    // An error (the session ended meanwhile) fails the
                    // partitioner: the next state says so.
                    let _ = p.release().await;
                }
                Some(PartitionState::Allocating) => {}
                Some(other) => {
                    own.end(&member);
                    assert!(p.owned().is_empty(), "{member} owns items when {other:?}");
                    own.finished(&member, other);
                    let _ = close_rx.await;
                    return p.close().await;
                }
                None => {
                    own.end(&member);
                    let _ = close_rx.await;
                    return p.close().await;
                }
            }
        }
    });
    (close_tx, task)
}

/// Wait until the members' beliefs are exactly `want`.
async fn await_split(what: &str, own: &Ownership, want: &BTreeMap<String, Vec<String>>) {
    let deadline = Instant::now() + CONDITION_DEADLINE;
    while &own.split() != want {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for: {what}: owners {:?}",
            own.lock().owners
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Two members split six items, one behind a fault; it is partitioned past
/// its session timeout: it reports `Failed` and stops owning its items
/// before the healthy member owns any of them, every item ends owned by
/// the healthy member, and at no instant was an item owned by both.
pub async fn fault_partitioned_partitioner_member_releases_first(h: &dyn Harness) {
    let dir = h.root("fault_partitioned_partitioner_member_releases_first");
    let healthy = h.open().await;
    let (faulty, fault) = h.open_faulty(PARTITION_TIMEOUT).await;
    let items: Vec<String> = (0..6).map(|i| format!("item-{i}")).collect();
    let named =
        |ids: &[usize]| -> Vec<String> { ids.iter().map(|i| format!("item-{i}")).collect() };
    let own = Arc::new(Ownership::default());
    let (close_a, task_a) = drive(&healthy, &dir, "m-a", &items, &own).await;
    let (close_b, task_b) = drive(&faulty, &dir, "m-b", &items, &own).await;
    let halves = BTreeMap::from([
        ("m-a".to_owned(), named(&[0, 2, 4])),
        ("m-b".to_owned(), named(&[1, 3, 5])),
    ]);
    await_split("the two members own three items each", &own, &halves).await;

    let start = Instant::now();
    fault.partition();
    let all = BTreeMap::from([("m-a".to_owned(), items.clone())]);
    await_split("the healthy member owns all six items", &own, &all).await;
    let (t_failed, t_first_taken) = {
        let o = own.lock();
        assert_eq!(
            o.overlaps,
            vec![],
            "items owned by two members at once (item, owner, new owner)"
        );
        let (ended, t_failed) = o
            .ended
            .get("m-b")
            .cloned()
            .expect("the partitioned member ended");
        assert_eq!(ended, PartitionState::Failed);
        let taken: Vec<Instant> = named(&[1, 3, 5])
            .into_iter()
            .map(|item| o.began[&("m-a".to_owned(), item)])
            .collect();
        let t_first_taken = taken.iter().min().copied().expect("three items");
        assert!(
            t_failed < t_first_taken,
            "the healthy member owned a partitioned member's item {:?} before it failed",
            t_failed - t_first_taken
        );
        (t_failed, t_first_taken)
    };
    report(
        h,
        "partitioner",
        &[t_failed - start],
        &[t_first_taken - t_failed],
    );
    assert_eq!(faulty.state(), SessionState::Expired);
    fault.heal();
    let _ = close_b.send(());
    assert!(
        joined("the failed member closes", task_b).await.is_err(),
        "closing the member whose session was lost reports why it failed"
    );
    let _ = close_a.send(());
    joined("the healthy member closes", task_a)
        .await
        .expect("close the healthy member");
    assert!(own.split().is_empty(), "items owned after both closed");
    let _ = faulty.close().await;
    let _ = healthy.close().await;
}

type ReliableWorkQueue = Arc<dyn WorkQueue<Item = Delivery>>;

/// The item a delivery holds, as text.
fn text(d: &Delivery) -> String {
    String::from_utf8_lossy(d.data()).into_owned()
}

/// `first` and `second` are in the queue `make` opens, `first` to be taken
/// first. A consumer behind a fault takes `first` and does not ack; a
/// healthy consumer takes `second`, then waits. The faulty consumer is
/// partitioned past its session timeout: its delivery's `lost()` resolves,
/// from its lease deadline, before the healthy consumer gets `first`,
/// which it then gets once; the lost delivery's ack is refused, and after
/// the acks the queue is empty and delivers nothing more.
async fn partitioned_consumer_redelivered_once(
    h: &dyn Harness,
    test: &str,
    make: impl Fn(&Session) -> ReliableWorkQueue,
    (first, second): (&str, &str),
) {
    let (consumer, fault) = h.open_faulty(PARTITION_TIMEOUT).await;
    let other = h.open().await;
    let faulty_q = make(&consumer);
    let healthy_q = make(&other);
    let mut delivered = Vec::new();
    let held = within("the faulty consumer takes", faulty_q.take())
        .await
        .expect("take");
    assert_eq!(text(&held), first);
    let d = healthy_q
        .poll()
        .await
        .expect("poll")
        .expect("the item not leased");
    assert_eq!(text(&d), second, "a leased item was delivered twice");
    delivered.push(text(&d));
    d.ack().await.expect("ack");
    assert_eq!(healthy_q.len().await.expect("len"), 1, "the leased item");

    let waiting = {
        let q = healthy_q.clone();
        tokio::spawn(async move {
            let got = q.take().await;
            (Instant::now(), got)
        })
    };
    let start = Instant::now();
    fault.partition();
    let (t_lost, why) = within("the faulty consumer's lease is lost", async {
        let why = held.lost().await;
        (Instant::now(), why)
    })
    .await;
    assert!(
        matches!(why, Error::SessionExpired),
        "a partitioned consumer can only learn of its loss from its lease deadline; got {why}"
    );
    let (t_next, redelivered) = joined("the redelivery", waiting).await;
    let redelivered = redelivered.expect("take");
    assert_eq!(text(&redelivered), first);
    assert!(
        t_lost < t_next,
        "the item was delivered again {:?} before its partitioned consumer knew its lease was lost",
        t_lost - t_next
    );
    delivered.push(text(&redelivered));
    report(h, test, &[t_lost - start], &[t_next - t_lost]);
    assert_eq!(consumer.state(), SessionState::Expired);
    fault.heal();
    assert!(
        held.ack().await.is_err(),
        "the partitioned consumer's ack after its lease was lost was accepted"
    );
    redelivered.ack().await.expect("ack the redelivered item");
    // Nothing comes back: not the acknowledged items, not a second copy.
    match healthy_q.take_timeout(Duration::from_millis(300)).await {
        Err(Error::Timeout(_)) => {}
        Ok(d) => panic!("an item delivered again after every ack: {}", text(&d)),
        Err(e) => panic!("take_timeout: {e}"),
    }
    assert_eq!(healthy_q.len().await.expect("len"), 0, "items left");
    delivered.sort();
    let mut want = vec![first.to_owned(), second.to_owned()];
    want.sort();
    assert_eq!(
        delivered, want,
        "each item acknowledged once by the healthy consumer"
    );
    let _ = consumer.close().await;
    let _ = other.close().await;
}

/// A reliable priority queue: an item leased by a consumer partitioned past
/// its session timeout is delivered again once, to a healthy consumer,
/// after the partitioned one learned its lease was lost; nothing is lost,
/// nothing delivered twice.
pub async fn fault_partitioned_priority_consumer_item_redelivered_once(h: &dyn Harness) {
    let test = "fault_partitioned_priority_consumer_item_redelivered_once";
    let dir = join(&h.root(test), "q");
    let producer = h.open().await;
    let q = PriorityQueue::reliable(&producer, &dir).expect("queue");
    q.offer(b"low", 7).await.expect("offer");
    q.offer(b"urgent", -3).await.expect("offer");
    partitioned_consumer_redelivered_once(
        h,
        "priority",
        |s| Arc::new(PriorityQueue::reliable(s, &dir).expect("queue")),
        ("urgent", "low"),
    )
    .await;
    let _ = producer.close().await;
}

/// The same for a reliable delay queue, with items already due.
pub async fn fault_partitioned_delay_consumer_item_redelivered_once(h: &dyn Harness) {
    let test = "fault_partitioned_delay_consumer_item_redelivered_once";
    let dir = join(&h.root(test), "q");
    let producer = h.open().await;
    let q = DelayQueue::reliable(&producer, &dir).expect("queue");
    let now = std::time::SystemTime::now();
    q.offer_at(b"later", now - Duration::from_secs(1))
        .await
        .expect("offer");
    q.offer_at(b"earlier", now - Duration::from_secs(5))
        .await
        .expect("offer");
    partitioned_consumer_redelivered_once(
        h,
        "delay",
        |s| Arc::new(DelayQueue::reliable(s, &dir).expect("queue")),
        ("earlier", "later"),
    )
    .await;
    let _ = producer.close().await;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __recipe_faults_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            recipe_faults::fault_partitioned_latch_leader_learns_first,
            recipe_faults::fault_short_cut_keeps_latch_leadership,
            recipe_faults::fault_partitioned_partitioner_member_releases_first,
            recipe_faults::fault_partitioned_priority_consumer_item_redelivered_once,
            recipe_faults::fault_partitioned_delay_consumer_item_redelivered_once,
        );
    };
}

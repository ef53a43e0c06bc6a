//! What the recipes built over the election, the locks and the queue
//! promise when the network fails, tested under the fault that breaks it
//! (the module [`crate::faults`] does the same for the lock, the election,
//! the group and the plain queue). Each test puts one session behind the
//! harness's [`crate::fault::Fault`] and checks the others through direct
//! sessions:
//!
//! - a partitioned [`LeaderLatch`] reports `NotLeader` before another
//!   latch leads; a cut shorter than the session changes nothing;
//! - a partitioned [`Partitioner`](coord_core::recipes::Partitioner) member gives up its items before the
//!   healthy member owns them, and no item ever has two owners;
//! - an item leased by a partitioned consumer of a reliable priority or
//!   delay queue is delivered again, once, after the consumer learned of
//!   its loss.
//!
//! The partition tests print one line each, `recipe fault figures: …`,
//! with what they measured (from the partition to the holder's loss, and
//! from its loss to the next party's gain).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use coord_core::path::join;
use coord_core::prelude::WorkQueue;
use coord_core::recipes::{
    DelayQueue, Delivery, Election, LatchEvent, LatchWatcher, LeaderLatch, PartitionState,
    PriorityQueue,
};
use coord_core::{CreateMode, Error, Op, Session, SessionState};

use crate::partitioner::{await_split, drive, OverlapRecorder};
use futures_util::future::join_all;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::faults::{short_cut, PARTITION_TIMEOUT, ROUNDS, SHORT_FAULT_TIMEOUT};
use crate::{eventually, within, Harness};

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

/// Await a spawned task, failing with `what` if it does not end or panics.
async fn joined<T>(what: &str, task: JoinHandle<T>) -> T {
    within(what, task)
        .await
        .unwrap_or_else(|e| panic!("{what}: the task failed: {e}"))
}

/// Start a latch through `session` and wait until it leads; returns it and
/// its token.
async fn leading_latch(session: &Session, dir: &str, id: &str) -> (LeaderLatch, u64) {
    let latch = Election::new(session, dir)
        .and_then(|e| e.latch(id.as_bytes()))
        .expect("start the latch");
    let token = within("the first latch leads", latch.await_leadership())
        .await
        .expect("the first latch of an empty election leads");
    (latch, token)
}

/// Start a latch through `session` that queues behind a leader; returns
/// once its offer is made.
async fn queued_latch(session: &Session, dir: &str, id: &str) -> LeaderLatch {
    let latch = Election::new(session, dir)
        .and_then(|e| e.latch(id.as_bytes()))
        .expect("start the latch");
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

    let outage = short_cut(&*fault, &holder);
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
    let own = Arc::new(OverlapRecorder::default());
    let a = drive(&healthy, &dir, "m-a", &items, &own).await;
    let b = drive(&faulty, &dir, "m-b", &items, &own).await;
    let halves = BTreeMap::from([
        ("m-a".to_owned(), named(&[0, 2, 4])),
        ("m-b".to_owned(), named(&[1, 3, 5])),
    ]);
    await_split("the two members own three items each", &own, &halves).await;

    let start = Instant::now();
    fault.partition();
    let all = BTreeMap::from([("m-a".to_owned(), items.clone())]);
    await_split("the healthy member owns all six items", &own, &all).await;
    assert_eq!(
        own.overlaps(),
        vec![],
        "items owned by two members at once (item, owner, new owner)"
    );
    assert_eq!(own.ended("m-b"), Some(PartitionState::Failed));
    let t_failed = own.ended_at("m-b").expect("the partitioned member ended");
    let t_first_taken = named(&[1, 3, 5])
        .iter()
        .map(|item| own.began_at("m-a", item).expect("taken over"))
        .min()
        .expect("three items");
    assert!(
        t_failed < t_first_taken,
        "the healthy member owned a partitioned member's item {:?} before it failed",
        t_failed - t_first_taken
    );
    report(
        h,
        "partitioner",
        &[t_failed - start],
        &[t_first_taken - t_failed],
    );
    assert_eq!(faulty.state(), SessionState::Expired);
    fault.heal();
    assert!(
        b.close().await.is_err(),
        "closing the member whose session was lost reports why it failed"
    );
    a.close().await.expect("close the healthy member");
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

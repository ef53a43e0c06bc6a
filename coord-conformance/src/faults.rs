//! What a hold promises when the network fails, tested under the fault that
//! breaks it, identically on every backend: each test puts one session
//! behind the harness's [`crate::fault::Fault`] (a TCP proxy for a server
//! backend, the store's hooks in memory) and checks the others through
//! direct sessions.
//!
//! The partition tests print one line each, `fault figures: …`, with what
//! they measured (the holder's loss-detection time after the partition
//! began, and the gap from its loss to the next grant): the README's
//! guarantees table is taken from them.

use std::time::Duration;

use coord_core::layout;
use coord_core::path::join;
use coord_core::recipes::{Election, Group, Lock, LockGuard, Queue, Stats};
use coord_core::{Blockers, CreateMode, Error, Op, Place, Session, SessionState};
use futures_util::future::join_all;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::lock_kinds::{await_blocked, for_each_kind};
use crate::{await_children, await_state, children_or_none, within, Harness};

/// The session timeout of the partition tests: short, so a test that waits
/// out a session does not wait long (etcd's minimum TTL is 2 s).
pub const PARTITION_TIMEOUT: Duration = Duration::from_secs(3);

/// The session timeout of the tests whose fault must end *before* the
/// session could expire: long enough that a loaded machine does not turn a
/// short fault into a lost session.
pub const SHORT_FAULT_TIMEOUT: Duration = Duration::from_secs(8);

/// How many holders each partition test partitions (at once, each on its
/// own lock, behind its own fault).
pub const ROUNDS: usize = 10;

/// Times of one partitioned holder.
#[derive(Debug, Clone, Copy)]
struct Round {
    /// From the partition's start to the holder's `lost()`.
    detect: Duration,
    /// From the holder's `lost()` to the next holder's grant.
    gap: Duration,
}

fn ms(d: Duration) -> u128 {
    d.as_millis()
}

/// Print the figures of a partition test, for the README.
fn report(h: &dyn Harness, test: &str, rounds: &[Round]) {
    let mut detect: Vec<Duration> = rounds.iter().map(|r| r.detect).collect();
    let mut gap: Vec<Duration> = rounds.iter().map(|r| r.gap).collect();
    detect.sort();
    gap.sort();
    let mid = rounds.len() / 2;
    println!(
        "fault figures: backend={} test={test} session_timeout={}ms rounds={} \
         detect_ms(min/median/max)={}/{}/{} gap_to_next_grant_ms(min/median/max)={}/{}/{}",
        h.name(),
        ms(PARTITION_TIMEOUT),
        rounds.len(),
        ms(detect[0]),
        ms(detect[mid]),
        ms(detect[rounds.len() - 1]),
        ms(gap[0]),
        ms(gap[mid]),
        ms(gap[rounds.len() - 1]),
    );
}

/// Await the instant a spawned contender reports, failing with `what`.
async fn granted<T>(what: &str, rx: oneshot::Receiver<(Instant, T)>) -> (Instant, T) {
    within(what, rx)
        .await
        .unwrap_or_else(|_| panic!("{what}: the contender's task failed"))
}

/// Assert a hold that a partition ended ended as a lost session.
fn assert_session_lost(what: &str, why: &Error) {
    assert!(
        matches!(why, Error::SessionExpired),
        "{what}: a partitioned holder can only learn of its loss from its lease deadline; got {why}"
    );
}

/// Partition `fault`, then await the holder's loss (`lost`) and the
/// instant the next party got what it held (`next`): the holder must have
/// learned first, and from its lease deadline (`SessionExpired`). Returns
/// the times, and what `next` got.
async fn partition_and_race<T>(
    what: &str,
    fault: &dyn crate::fault::Fault,
    lost: impl std::future::Future<Output = Error>,
    next: impl std::future::Future<Output = (Instant, T)>,
) -> (Round, T) {
    let start = Instant::now();
    fault.partition();
    let lost = async {
        let why = lost.await;
        (Instant::now(), why)
    };
    let ((t_lost, why), (t_next, got)) =
        within(&format!("{what}: the loss and what follows it"), async {
            tokio::join!(lost, next)
        })
        .await;
    assert_session_lost(what, &why);
    assert!(
        t_lost < t_next,
        "{what}: the next party got it {:?} before the partitioned one knew it was lost",
        t_lost - t_next
    );
    let round = Round {
        detect: t_lost - start,
        gap: t_next - t_lost,
    };
    (round, got)
}

/// One partitioned lock holder: its `lost()` against the next grant.
async fn lock_round(h: &dyn Harness, dir: String) -> Round {
    let (holder, fault) = h.open_faulty(PARTITION_TIMEOUT).await;
    let other = h.open().await;
    let guard = Lock::new(&holder, &dir)
        .expect("lock")
        .acquire()
        .await
        .expect("the first acquire of a free lock");
    let next = Lock::new(&other, &dir).expect("lock");
    let (tx, rx) = oneshot::channel();
    tokio::spawn(async move {
        let g = next.acquire().await.expect("the next contender acquires");
        let _ = tx.send((Instant::now(), g));
    });
    await_children(&other, &dir, "the next contender queued", |k| k.len() == 2).await;

    let (round, next_guard) = partition_and_race(
        "lock holder",
        fault.as_ref(),
        guard.lost(),
        granted("the next grant", rx),
    )
    .await;
    assert_eq!(holder.state(), SessionState::Expired);
    assert!(
        matches!(
            guard
                .write(Op::Create {
                    path: join(&dir, "fenced"),
                    data: Vec::new(),
                    mode: CreateMode::Persistent,
                })
                .await,
            Err(Error::SessionExpired)
        ),
        "a guarded write after the loss is refused locally"
    );
    fault.heal();
    next_guard
        .release()
        .await
        .expect("release by the next holder");
    drop(guard);
    let _ = holder.close().await;
    let _ = other.close().await;
    round
}

/// A lock holder partitioned past its session timeout learns of the loss
/// (its `lost()` resolves, its guarded writes are refused) strictly before
/// a second session is granted the lock. Ten holders at once, each on its
/// own lock behind its own fault.
pub async fn fault_partitioned_lock_holder_learns_first(h: &dyn Harness) {
    let root = h.root("fault_partitioned_lock_holder_learns_first");
    let rounds =
        join_all((0..ROUNDS).map(|i| lock_round(h, join(&root, &format!("lock{i}"))))).await;
    report(h, "lock", &rounds);
}

async fn leader_round(h: &dyn Harness, dir: String) -> Round {
    let (holder, fault) = h.open_faulty(PARTITION_TIMEOUT).await;
    let other = h.open().await;
    let leadership = Election::new(&holder, &dir)
        .expect("election")
        .campaign(b"first")
        .await
        .expect("the first campaign leads");
    let next = Election::new(&other, &dir).expect("election");
    let (tx, rx) = oneshot::channel();
    tokio::spawn(async move {
        let l = next.campaign(b"second").await.expect("the follower leads");
        let _ = tx.send((Instant::now(), l));
    });
    await_children(&other, &dir, "the follower's offer", |k| k.len() == 2).await;

    let (round, next_leadership) = partition_and_race(
        "leader",
        fault.as_ref(),
        leadership.lost(),
        granted("the next leader", rx),
    )
    .await;
    fault.heal();
    next_leadership.resign().await.expect("resign");
    drop(leadership);
    let _ = holder.close().await;
    let _ = other.close().await;
    round
}

/// A leader partitioned past its session timeout learns it no longer leads
/// strictly before the next participant leads. Ten at once.
pub async fn fault_partitioned_leader_learns_first(h: &dyn Harness) {
    let root = h.root("fault_partitioned_leader_learns_first");
    let rounds =
        join_all((0..ROUNDS).map(|i| leader_round(h, join(&root, &format!("el{i}"))))).await;
    report(h, "leadership", &rounds);
}

async fn member_round(h: &dyn Harness, dir: String) -> Round {
    let (member_session, fault) = h.open_faulty(PARTITION_TIMEOUT).await;
    let other = h.open().await;
    let membership = Group::new(&member_session, &dir)
        .expect("group")
        .join(b"member")
        .await
        .expect("join");
    await_children(&other, &dir, "the member listed", |k| k.len() == 1).await;

    let seen_gone = async {
        await_children(&other, &dir, "the member seen gone", |k| k.is_empty()).await;
        (Instant::now(), ())
    };
    let (round, ()) =
        partition_and_race("member", fault.as_ref(), membership.lost(), seen_gone).await;
    fault.heal();
    drop(membership);
    let _ = member_session.close().await;
    let _ = other.close().await;
    round
}

/// A member partitioned past its session timeout learns it is out of the
/// group strictly before the others see it gone. Ten at once.
pub async fn fault_partitioned_member_learns_first(h: &dyn Harness) {
    let root = h.root("fault_partitioned_member_learns_first");
    let rounds =
        join_all((0..ROUNDS).map(|i| member_round(h, join(&root, &format!("g{i}"))))).await;
    report(h, "membership", &rounds);
}

/// Hold a lock through `holder` with a contender queued behind it through
/// a direct session; the contender's grant arrives on the receiver.
async fn held_with_waiter(
    h: &dyn Harness,
    holder: &Session,
    dir: &str,
) -> (LockGuard, Session, oneshot::Receiver<(Instant, LockGuard)>) {
    let guard = Lock::new(holder, dir)
        .expect("lock")
        .acquire()
        .await
        .expect("acquire a free lock");
    let other = h.open().await;
    let next = Lock::new(&other, dir).expect("lock");
    let (tx, rx) = oneshot::channel();
    tokio::spawn(async move {
        if let Ok(g) = next.acquire().await {
            let _ = tx.send((Instant::now(), g));
        }
    });
    await_children(&other, dir, "the contender queued", |k| k.len() == 2).await;
    (guard, other, rx)
}

/// Await the session's state `want`.
pub(crate) async fn await_session_state(what: &str, session: &Session, want: SessionState) {
    let mut rx = session.state_watch();
    within(what, rx.wait_for(|s| *s == want))
        .await
        .unwrap_or_else(|_| panic!("{what}: the state watch closed"));
}

/// Cut `session`'s connections, await `Suspended`, heal, await
/// `Connected`: a cut shorter than the session timeout.
pub(crate) async fn short_cut(fault: &dyn crate::fault::Fault, session: &Session) {
    fault.cut();
    await_session_state("Suspended after the cut", session, SessionState::Suspended).await;
    fault.heal();
    await_session_state("Connected after the heal", session, SessionState::Connected).await;
}

/// A connection cut shorter than the session timeout changes nothing that
/// is held: the session goes `Suspended`, then `Connected` again; `lost()`
/// never fires; the hold's guarded writes still land; nobody else gets the
/// lock meanwhile.
pub async fn fault_short_cut_keeps_the_hold(h: &dyn Harness) {
    let dir = join(&h.root("fault_short_cut_keeps_the_hold"), "lock");
    let (holder, fault) = h.open_faulty(SHORT_FAULT_TIMEOUT).await;
    let (guard, other, mut next) = held_with_waiter(h, &holder, &dir).await;

    let outage = short_cut(&*fault, &holder);
    tokio::select! {
        why = guard.lost() => panic!("lost() fired during a cut shorter than the session timeout: {why}"),
        () = outage => {}
    }
    let counter = join(&dir, "counter");
    guard
        .write(Op::Create {
            path: counter.clone(),
            data: b"1".to_vec(),
            mode: CreateMode::Persistent,
        })
        .await
        .expect("a guarded write after the reconnect: the hold survived");
    assert!(
        next.try_recv().is_err(),
        "the contender was granted the lock while the holder was only suspended"
    );
    assert_eq!(holder.state(), SessionState::Connected);
    guard.release().await.expect("release");
    let (_, g) = granted("the contender after the release", next).await;
    g.release().await.expect("release by the contender");
    other.delete(&counter, None).await.expect("cleanup");
    let _ = holder.close().await;
    let _ = other.close().await;
}

/// A partition (traffic stalled both ways, connections kept) shorter than
/// the session timeout changes nothing that is held: `lost()` never fires,
/// the hold's guarded writes land after the heal, nobody else gets the lock
/// meanwhile, and the session is `Connected` again. (A stall this short
/// may go unnoticed by the client altogether: no state is asserted during
/// it.)
pub async fn fault_short_partition_keeps_the_hold(h: &dyn Harness) {
    let dir = join(&h.root("fault_short_partition_keeps_the_hold"), "lock");
    let (holder, fault) = h.open_faulty(SHORT_FAULT_TIMEOUT).await;
    let (guard, other, mut next) = held_with_waiter(h, &holder, &dir).await;

    // The fault's length is the point of the test, not a wait for a
    // condition: well inside the lease deadline (0.9 × the timeout, less
    // the third of it that may have passed since the last renewal).
    let stall = SHORT_FAULT_TIMEOUT / 4;
    let outage = async {
        fault.partition();
        tokio::time::sleep(stall).await;
        fault.heal();
    };
    tokio::select! {
        why = guard.lost() => panic!("lost() fired during a partition shorter than the session timeout: {why}"),
        () = outage => {}
    }
    let counter = join(&dir, "counter");
    within(
        "a guarded write after the heal",
        guard.write(Op::Create {
            path: counter.clone(),
            data: b"1".to_vec(),
            mode: CreateMode::Persistent,
        }),
    )
    .await
    .expect("a guarded write after the heal: the hold survived");
    assert!(
        next.try_recv().is_err(),
        "the contender was granted the lock during a short partition"
    );
    await_session_state("Connected after the heal", &holder, SessionState::Connected).await;
    guard.release().await.expect("release");
    let (_, g) = granted("the contender after the release", next).await;
    g.release().await.expect("release by the contender");
    other.delete(&counter, None).await.expect("cleanup");
    let _ = holder.close().await;
    let _ = other.close().await;
}

/// Queue a contender through a faulty session behind a direct holder.
async fn queued_behind(
    h: &dyn Harness,
    test: &str,
) -> (
    String,
    Session,
    LockGuard,
    Session,
    Box<dyn crate::fault::Fault>,
) {
    let dir = join(&h.root(test), "lock");
    let holder = h.open().await;
    let guard = Lock::new(&holder, &dir)
        .expect("lock")
        .acquire()
        .await
        .expect("acquire a free lock");
    let (faulty, fault) = h.open_faulty(SHORT_FAULT_TIMEOUT).await;
    (dir, holder, guard, faulty, fault)
}

/// After the faulty contender gave up during the fault and the fault
/// healed: its node is deleted while its session lives on, and the next
/// contender gets the lock.
async fn withdrawn_node_is_deleted(
    dir: &str,
    holder: &Session,
    guard: LockGuard,
    faulty: &Session,
) {
    await_children(holder, dir, "the withdrawn contender's node deleted", |k| {
        k.len() == 1
    })
    .await;
    // The node must go because its delete was retried, not because the
    // session ended: the session lives on (and says so once it has heard
    // from the server again, which on some backends is the next heartbeat).
    assert!(
        !faulty.state().is_terminal(),
        "the withdrawn contender's session ended: {:?}",
        faulty.state()
    );
    await_session_state("Connected after the heal", faulty, SessionState::Connected).await;
    let third = Lock::new(holder, dir).expect("lock");
    guard.release().await.expect("release");
    let g = within("the next contender acquires", third.acquire())
        .await
        .expect("acquire");
    g.release().await.expect("release");
    assert!(children_or_none(holder, dir).await.is_empty());
}

/// An `acquire_timeout` that runs out during a partition returns (about)
/// on time, and its node is deleted once the partition heals — retried
/// until done, while the session lives on (kazoo #732, CURATOR-678).
pub async fn fault_timed_out_acquire_leaves_no_node(h: &dyn Harness) {
    let (dir, holder, guard, faulty, fault) =
        queued_behind(h, "fault_timed_out_acquire_leaves_no_node").await;
    let lock = Lock::new(&faulty, &dir).expect("lock");
    let timeout = Duration::from_secs(2);
    let attempt = tokio::spawn(async move { lock.acquire_timeout(timeout).await.map(|_| ()) });
    await_children(&holder, &dir, "the contender queued", |k| k.len() == 2).await;
    fault.partition();
    let started = Instant::now();
    let r = within("the timed-out acquire returns", attempt)
        .await
        .expect("join");
    assert!(
        matches!(r, Err(Error::Timeout(_))),
        "expected a timeout, got {r:?}"
    );
    assert!(
        started.elapsed() < SHORT_FAULT_TIMEOUT / 2,
        "acquire_timeout({timeout:?}) took {:?} to return during a partition",
        started.elapsed()
    );
    fault.heal();
    withdrawn_node_is_deleted(&dir, &holder, guard, &faulty).await;
    let _ = faulty.close().await;
    let _ = holder.close().await;
}

/// An acquire whose future is dropped while the connection is cut leaves no
/// node once the connection is back, while its session lives on.
pub async fn fault_cancelled_acquire_leaves_no_node(h: &dyn Harness) {
    let (dir, holder, guard, faulty, fault) =
        queued_behind(h, "fault_cancelled_acquire_leaves_no_node").await;
    let lock = Lock::new(&faulty, &dir).expect("lock");
    let attempt = tokio::spawn(async move { lock.acquire().await.map(|_| ()) });
    await_children(&holder, &dir, "the contender queued", |k| k.len() == 2).await;
    fault.cut();
    await_session_state("Suspended after the cut", &faulty, SessionState::Suspended).await;
    attempt.abort();
    let _ = attempt.await;
    fault.heal();
    withdrawn_node_is_deleted(&dir, &holder, guard, &faulty).await;
    let _ = faulty.close().await;
    let _ = holder.close().await;
}

/// A `release()` while the connection is cut does not return while the
/// connection is down; it deletes the node once the connection is back and
/// then returns `Ok`, and the rival waiting for it acquires — the node is
/// never left for the session's end while the session lives on. For every
/// lock kind: their releases differ (a fixed-name node is deleted through a
/// fenced delete, a lease in a semaphore's directory, a reentrant hold
/// through its owner's last guard).
pub async fn fault_release_during_cut_completes_after_heal(h: &dyn Harness) {
    for_each_kind(
        h,
        "fault_release_during_cut_completes_after_heal",
        |_| true,
        |kind, dir| async move {
            let name = kind.name;
            let (holder, fault) = h.open_faulty(SHORT_FAULT_TIMEOUT).await;
            let other = h.open().await;
            let guard = kind
                .lock(&holder, &dir, &Stats::new())
                .acquire()
                .await
                .unwrap_or_else(|e| panic!("{name}: acquire: {e}"));
            let stats = Stats::new();
            let rival = kind.rival_lock(&other, &dir, &stats);
            let next = tokio::spawn(async move { rival.acquire().await });
            await_blocked(&stats, 1, &format!("{name}: the rival waits")).await;
            fault.cut();
            await_session_state("Suspended after the cut", &holder, SessionState::Suspended).await;
            let mut release = tokio::spawn(guard.release());
            assert!(
                tokio::time::timeout(Duration::from_millis(300), &mut release)
                    .await
                    .is_err(),
                "{name}: release() returned while the connection was cut, with the node still there"
            );
            fault.heal();
            within("the release completes after the heal", release)
                .await
                .expect("join")
                .unwrap_or_else(|e| panic!("{name}: release after the heal: {e}"));
            let g = within("the rival acquires", next)
                .await
                .expect("join")
                .unwrap_or_else(|e| panic!("{name}: the rival's acquire: {e}"));
            g.release().await.expect("release by the rival");
            assert!(
                !holder.state().is_terminal(),
                "{name}: the session ended: {:?}",
                holder.state()
            );
            let _ = holder.close().await;
            let _ = other.close().await;
        },
    )
    .await;
}

/// A guard dropped while the connection is cut: its node is deleted once
/// the connection is back, and the next contender acquires, while the
/// session lives on.
pub async fn fault_dropped_guard_released_after_heal(h: &dyn Harness) {
    let dir = join(&h.root("fault_dropped_guard_released_after_heal"), "lock");
    let (holder, fault) = h.open_faulty(SHORT_FAULT_TIMEOUT).await;
    let (guard, other, next) = held_with_waiter(h, &holder, &dir).await;
    fault.cut();
    await_session_state("Suspended after the cut", &holder, SessionState::Suspended).await;
    drop(guard);
    fault.heal();
    let (_, g) = granted("the next contender acquires", next).await;
    g.release().await.expect("release by the next holder");
    assert!(
        !holder.state().is_terminal(),
        "the session ended: {:?}",
        holder.state()
    );
    await_session_state("Connected after the heal", &holder, SessionState::Connected).await;
    // Nothing left to wait for: close returns.
    within("close", holder.close()).await.expect("close");
    let _ = other.close().await;
}

/// A release whose delete's answer is lost (applied, then the connection
/// closed) still completes, and the same handle's next acquire (which, on
/// etcd, reuses the released node's name) is a new hold: it waits for a
/// rival that took the lock meanwhile, gets a larger fencing token, and
/// the rival's wait and this one never overlap.
pub async fn fault_release_answer_lost_then_reacquire(h: &dyn Harness) {
    let dir = join(&h.root("fault_release_answer_lost_then_reacquire"), "lock");
    let (holder, fault) = h.open_faulty(SHORT_FAULT_TIMEOUT).await;
    let other = h.open().await;
    let stats = Stats::new();
    let lock = Lock::new(&holder, &dir)
        .expect("lock")
        .with_stats(stats.clone());
    let first = lock.acquire().await.expect("acquire");
    let first_token = first.fencing_token();
    fault.lose_next_answer();
    within("the release whose answer was lost", first.release())
        .await
        .expect("a release whose answer was lost still completes");
    let rival = Lock::new(&other, &dir)
        .expect("lock")
        .acquire()
        .await
        .expect("the rival acquires the released lock");
    let again = {
        let lock = lock.clone();
        tokio::spawn(async move { lock.acquire().await })
    };
    await_blocked(&stats, 1, "the holder waits behind the rival").await;
    assert!(
        !again.is_finished(),
        "the holder acquired while the rival held"
    );
    let rival_token = rival.fencing_token();
    rival.release().await.expect("release by the rival");
    let held = within("the holder acquires after the rival", again)
        .await
        .expect("join")
        .expect("acquire again");
    assert!(
        held.fencing_token() > rival_token && rival_token > first_token,
        "fencing tokens out of order: {first_token}, rival {rival_token}, again {}",
        held.fencing_token()
    );
    held.release().await.expect("release");
    let _ = holder.close().await;
    let _ = other.close().await;
}

/// A create whose answer is lost (the request reached the server, the
/// answer never came back) is found again, not made twice: the session's
/// contender node exists once, at the path the create returned. The same
/// for a contender's create that reads its place
/// (`Session::create_contender`): its place, if it answers one, is first
/// (the node is alone in its directory).
pub async fn fault_lost_create_answer_is_found(h: &dyn Harness) {
    let root = h.root("fault_lost_create_answer_is_found");
    let (session, fault) = h.open_faulty(SHORT_FAULT_TIMEOUT).await;
    let observer = h.open().await;
    for contender in [false, true] {
        let dir = join(&root, if contender { "contender" } else { "lock" });
        session.ensure_dir(&dir).await.expect("ensure_dir");
        await_state(&session, SessionState::Connected).await;
        fault.lose_next_answer();
        let prefix = join(&dir, &format!("_c_{}-lock-", uuid::Uuid::new_v4()));
        let created = if contender {
            let (made, place) = within(
                "the contender create whose answer was lost",
                session.create_contender(&prefix, b"x", Blockers::All),
            )
            .await
            .expect("a contender create whose answer was lost still succeeds");
            assert!(
                matches!(place, None | Some(Place::First)),
                "alone in its directory, yet placed {place:?}"
            );
            made
        } else {
            within(
                "the create whose answer was lost",
                session.create(&prefix, b"x", CreateMode::EphemeralSequential),
            )
            .await
            .expect("a create whose answer was lost still succeeds")
        };
        let kids = children_or_none(&observer, &dir).await;
        assert_eq!(kids.len(), 1, "the create was duplicated: {kids:?}");
        assert_eq!(join(&dir, &kids[0].name), created.path);
        assert_eq!(kids[0].sequence, created.sequence);
        let node = observer
            .get(&created.path)
            .await
            .expect("get")
            .expect("the node");
        assert_eq!(node.stat.stamp, created.stamp);
        assert!(node.stat.ephemeral);
    }
    let _ = session.close().await;
    let _ = observer.close().await;
}

/// A reliable-queue delivery whose consumer is partitioned past its session
/// timeout: the consumer's `lost()` resolves first, then the item is
/// delivered to another consumer, once; the first consumer's ack is
/// refused, and nothing is delivered again after the second one's ack.
pub async fn fault_partitioned_delivery_redelivered_once(h: &dyn Harness) {
    let dir = join(&h.root("fault_partitioned_delivery_redelivered_once"), "q");
    let producer = h.open().await;
    Queue::reliable(&producer, &dir)
        .expect("queue")
        .offer(b"item-1")
        .await
        .expect("offer");
    let (consumer, fault) = h.open_faulty(PARTITION_TIMEOUT).await;
    let first = Queue::reliable(&consumer, &dir)
        .expect("queue")
        .take()
        .await
        .expect("the first consumer takes the item");
    assert_eq!(first.data(), b"item-1");
    let other = h.open().await;
    let second_q = Queue::reliable(&other, &dir).expect("queue");
    let (tx, rx) = oneshot::channel();
    {
        let q = second_q.clone();
        tokio::spawn(async move {
            if let Ok(d) = q.take().await {
                let _ = tx.send((Instant::now(), d));
            }
        });
    }
    let (_, second) = partition_and_race(
        "consumer",
        fault.as_ref(),
        first.lost(),
        granted("the redelivery", rx),
    )
    .await;
    assert_eq!(second.data(), b"item-1");
    fault.heal();
    assert!(
        first.ack().await.is_err(),
        "the first consumer's ack after its lease was lost was accepted"
    );
    second.ack().await.expect("ack by the second consumer");
    assert!(
        second_q.poll().await.expect("poll").is_none(),
        "the item was delivered again after its ack"
    );
    assert_eq!(second_q.len().await.expect("len"), 0);
    let _ = consumer.close().await;
    let _ = other.close().await;
    let _ = producer.close().await;
}

/// A queue offer whose answer is lost while another consumer takes the
/// item at once: by the time the producer's retry looks for its node, the
/// node is gone. The retry must not make the item again (a second
/// delivery): the offer reports success or [`Error::OutcomeUnknown`], the
/// item is delivered once, and the queue ends empty. The producer learns of
/// the loss only when its connection closes, 300 ms after the request (the
/// fault proxy's window, which the mem backend models too); the consumer,
/// already waiting, takes the item well within it.
pub async fn fault_lost_offer_answer_taken_meanwhile_delivered_once(h: &dyn Harness) {
    let dir = join(
        &h.root("fault_lost_offer_answer_taken_meanwhile_delivered_once"),
        "q",
    );
    let (producer, fault) = h.open_faulty(SHORT_FAULT_TIMEOUT).await;
    let consumer = h.open().await;
    let cq = Queue::new(&consumer, &dir).expect("queue");
    let pq = Queue::new(&producer, &dir).expect("queue");
    // The items directory made on its own, and one item through first, so
    // the answer lost below is the item's create itself. A directory that
    // a create makes is a container on ZooKeeper, which the server deletes
    // once it is empty (within 200 ms on the test servers): after the first
    // take, the lost create would then have failed for want of a parent,
    // and no item would ever have been made (5 of about 440 runs of this test here).
    producer
        .ensure_dir(&join(&dir, layout::QUEUE_ITEMS))
        .await
        .expect("ensure_dir");
    pq.offer(b"first").await.expect("offer");
    assert_eq!(cq.take().await.expect("take"), b"first");
    let take = {
        let cq = cq.clone();
        tokio::spawn(async move { cq.take().await })
    };
    // The consumer's take is waiting before the offer is made.
    assert_eq!(pq.len().await.expect("len"), 0);
    fault.lose_next_answer();
    let offer = tokio::spawn(async move { pq.offer(b"once").await });
    let item = within("the consumer takes the offered item", take)
        .await
        .expect("the take panicked")
        .expect("take");
    assert_eq!(item, b"once");
    let offered = within("the offer whose answer was lost", offer)
        .await
        .expect("the offer panicked");
    assert!(
        matches!(offered, Ok(()) | Err(Error::OutcomeUnknown { .. })),
        "offer: {offered:?}"
    );
    assert_eq!(
        cq.poll().await.expect("poll"),
        None,
        "the item was made again after its take (offer: {offered:?})"
    );
    assert_eq!(cq.len().await.expect("len"), 0);
    println!("lost offer answer: backend={} offer={offered:?}", h.name());
    let _ = producer.close().await;
    let _ = consumer.close().await;
}

/// A take whose delete's answer is lost (applied, then the connection
/// closed) still returns its item: the item is gone from the queue, so
/// returning nothing would lose it. On etcd the take is one delete that
/// returns the item, and its answer is what was lost: the take reads the
/// item from the history it had seen before it sent the delete.
pub async fn fault_take_answer_lost_still_delivers(h: &dyn Harness) {
    let dir = join(&h.root("fault_take_answer_lost_still_delivers"), "q");
    let producer = h.open().await;
    let (consumer, fault) = h.open_faulty(SHORT_FAULT_TIMEOUT).await;
    let pq = Queue::new(&producer, &dir).expect("queue");
    for item in [&b"first"[..], b"second"] {
        pq.offer(item).await.expect("offer");
    }
    let cq = Queue::new(&consumer, &dir).expect("queue");
    // The first take lists both items (and, where items are read ahead,
    // reads both): the next request is the second item's delete.
    assert_eq!(cq.take().await.expect("take"), b"first");
    fault.lose_next_answer();
    let got = within("the take whose answer was lost", cq.take())
        .await
        .expect("a take whose answer was lost still delivers its item");
    assert_eq!(got, b"second");
    assert_eq!(cq.poll().await.expect("poll"), None, "delivered twice");
    assert_eq!(pq.len().await.expect("len"), 0);
    let _ = consumer.close().await;
    let _ = producer.close().await;
}

/// A session the client gave up (answers stopped coming while the server
/// kept hearing its heartbeats: a one-way partition) ends itself on the
/// server as soon as it reaches it again: its holds go at once, not when
/// the server would have timed it out.
pub async fn fault_session_lost_here_ends_on_the_server(h: &dyn Harness) {
    let dir = join(
        &h.root("fault_session_lost_here_ends_on_the_server"),
        "lock",
    );
    let timeout = SHORT_FAULT_TIMEOUT;
    let (holder, fault) = h.open_faulty(timeout).await;
    let (guard, other, next) = held_with_waiter(h, &holder, &dir).await;
    fault.silence();
    let why = within("the holder's loss", guard.lost()).await;
    assert_session_lost("holder", &why);
    assert_eq!(holder.state(), SessionState::Expired);
    fault.heal();
    let healed = Instant::now();
    let (t_grant, g) = granted("the next contender acquires", next).await;
    // Without the session ending itself, the server would keep it (and the
    // lock) until a whole session timeout after the last heartbeat it
    // heard, which was at about the time of the loss.
    assert!(
        t_grant - healed < timeout / 2,
        "the lock came free {:?} after the heal: the session was not ended on the server",
        t_grant - healed
    );
    g.release().await.expect("release");
    drop(guard);
    let _ = holder.close().await;
    let _ = other.close().await;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __fault_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            faults::fault_partitioned_lock_holder_learns_first,
            faults::fault_partitioned_leader_learns_first,
            faults::fault_partitioned_member_learns_first,
            faults::fault_short_cut_keeps_the_hold,
            faults::fault_short_partition_keeps_the_hold,
            faults::fault_timed_out_acquire_leaves_no_node,
            faults::fault_cancelled_acquire_leaves_no_node,
            faults::fault_release_during_cut_completes_after_heal,
            faults::fault_dropped_guard_released_after_heal,
            faults::fault_release_answer_lost_then_reacquire,
            faults::fault_lost_create_answer_is_found,
            faults::fault_partitioned_delivery_redelivered_once,
            faults::fault_lost_offer_answer_taken_meanwhile_delivered_once,
            faults::fault_take_answer_lost_still_delivers,
            faults::fault_session_lost_here_ends_on_the_server,
        );
    };
}

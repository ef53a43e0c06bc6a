//! Services that outlive their sessions: the supervised client and the
//! rejoining latch, under the faults that end sessions.
//!
//! | promise | fault | test |
//! |---|---|---|
//! | the client opens the next session, never two at once | server-side expiry ×10 | [`client_reopens_after_expiry`] |
//! | the same, within a bound after the heal | partition past the session timeout, 10 clients | [`client_reopens_after_partition`] |
//! | a lock, a lease, a delivery held on a lost session stay lost; nothing re-takes them | server-side expiry | [`client_never_retakes_holds`] |
//! | the latch campaigns again; the old term ends first; tokens grow | server-side expiry ×10 | [`rejoining_latch_after_expiry`] |
//! | no two leaders at any instant; the latch rejoins after the heal | partition past the session timeout, 10 elections | [`rejoining_latch_after_partition`] |
//!
//! The partition tests run their ten rounds at once, each on its own
//! client behind its own proxy, so a round's wait for the session timeout
//! is paid once.

use std::time::Duration;

use coord_core::path::join;
use coord_core::recipes::{LatchEvent, Lock, Queue, RejoiningLatch, Semaphore};
use coord_core::{Backoff, ClientEvent, ClientEvents, ClientOptions, CreateMode, Error};
use futures_util::future::join_all;
use tokio::time::Instant;

use crate::{eventually, within, Harness};

/// How many times each scenario is repeated.
pub const ROUNDS: usize = 10;

/// The session timeout of these tests (etcd's minimum TTL is 2 s).
pub const CLIENT_SESSION_TIMEOUT: Duration = Duration::from_secs(2);

/// The clients' backoff: quick, so ten rounds stay fast.
pub const CLIENT_BACKOFF: Backoff =
    Backoff::new(Duration::from_millis(20), Duration::from_millis(200));

/// How soon after the fault is over (the heal, or the expiry) a recipe
/// must be back: [`CLIENT_BACKOFF`]'s cap plus 10 s for a few round trips,
/// with room for a connection the partition left stalled to be given up
/// and made again (a backend's connect timeout). Every come-back test of
/// the suite uses these settings.
pub const RECOVERY_BOUND: Duration = Duration::from_millis(10_200);

/// The options of every client here.
pub fn client_options() -> ClientOptions {
    ClientOptions::default().with_backoff(CLIENT_BACKOFF)
}

/// The next client event that is not an `OpenFailed`.
async fn next_event(events: &mut ClientEvents, what: &str) -> ClientEvent {
    loop {
        match within(what, events.next()).await {
            Some(ClientEvent::OpenFailed { .. }) => continue,
            Some(ev) => return ev,
            None => panic!("{what}: the client's events ended"),
        }
    }
}

/// Ten server-side expiries of one client's session: each time the client
/// reports `Lost` for that generation, then `Started` for the next, with a
/// new session id, the old session already over when the new one is
/// handed out; and it does so within [`RECOVERY_BOUND`].
pub async fn client_reopens_after_expiry(h: &dyn Harness) {
    let (client, _fault) = h
        .faulty_client(CLIENT_SESSION_TIMEOUT, client_options())
        .await;
    let mut events = client.events();
    let first = within("the first session", client.session()).await;
    let first = first.expect("the client opens a session");
    match next_event(&mut events, "the first Started").await {
        ClientEvent::Started { generation: 1, id } => assert_eq!(id, first.id()),
        other => panic!(
            "{}: expected Started of generation 1, got {other:?}",
            h.name()
        ),
    }
    let mut session = first;
    for round in 1..=ROUNDS as u64 {
        h.expire(&session).await;
        let expired = Instant::now();
        let mut lost = next_event(&mut events, "Lost").await;
        // ZooKeeper's client may see its connection drop first.
        while let ClientEvent::Suspended { generation, .. }
        | ClientEvent::Reconnected { generation, .. } = lost
        {
            assert_eq!(generation, round, "{}", h.name());
            lost = next_event(&mut events, "Lost").await;
        }
        match lost {
            ClientEvent::Lost {
                generation,
                id,
                reason,
            } => {
                assert_eq!((generation, &id), (round, &session.id()), "{}", h.name());
                assert!(
                    matches!(*reason, Error::SessionExpired),
                    "{}: lost for {reason}",
                    h.name()
                );
            }
            other => panic!("{}: round {round}: expected Lost, got {other:?}", h.name()),
        }
        let next = within("the next session", client.next_session(round)).await;
        let next = next.expect("the client opens the next session");
        let took = expired.elapsed();
        assert!(
            session.state().is_terminal(),
            "{}: round {round}: a new session while the old one lives",
            h.name()
        );
        assert_eq!(next.number, round + 1);
        assert_ne!(next.session.id(), session.id());
        assert!(
            took <= RECOVERY_BOUND,
            "{}: round {round}: back after {took:?}",
            h.name()
        );
        match next_event(&mut events, "Started").await {
            ClientEvent::Started { generation, id } => {
                assert_eq!((generation, id), (round + 1, next.session.id()))
            }
            other => panic!(
                "{}: round {round}: expected Started, got {other:?}",
                h.name()
            ),
        }
        // The new session works.
        let dir = h.root("client-reopens");
        next.session
            .create(&join(&dir, "x"), b"", CreateMode::Ephemeral)
            .await
            .expect("the new session writes");
        session = next.session;
    }
    client.close().await.expect("close the client");
    assert!(matches!(
        next_event(&mut events, "Closed").await,
        ClientEvent::Closed
    ));
    assert!(
        session.state().is_terminal(),
        "closing the client closes its session"
    );
    assert!(matches!(client.session().await, Err(Error::SessionClosed)));
}

/// One client of [`client_reopens_after_partition`]: partitioned past
/// its session timeout (until an observer sees its ephemeral node gone:
/// the server ended the session), then healed.
async fn partition_round(h: &dyn Harness, dir: String) -> Duration {
    let (client, fault) = h
        .faulty_client(CLIENT_SESSION_TIMEOUT, client_options())
        .await;
    let observer = h.open().await;
    let session = within("a session", client.session())
        .await
        .expect("the client opens a session");
    let marker = join(&dir, "alive");
    session
        .create(&marker, b"", CreateMode::Ephemeral)
        .await
        .expect("mark the session");
    let mut events = client.events();
    assert!(matches!(
        next_event(&mut events, "Started").await,
        ClientEvent::Started { generation: 1, .. }
    ));
    fault.partition();
    loop {
        match next_event(&mut events, "the partitioned session's loss").await {
            ClientEvent::Suspended { .. } => {}
            ClientEvent::Lost { generation: 1, .. } => break,
            other => panic!("{}: expected Lost, got {other:?}", h.name()),
        }
    }
    // Past the session timeout: the server has ended it.
    within(
        "the server ends the partitioned session",
        observer.wait_gone(&marker),
    )
    .await
    .expect("watch the partitioned session's node");
    assert!(
        client.current().is_none(),
        "{}: a live session during the partition",
        h.name()
    );
    fault.heal();
    let healed = Instant::now();
    let next = within("the session after the heal", client.next_session(1))
        .await
        .expect("the client opens the next session");
    let took = healed.elapsed();
    assert_ne!(next.session.id(), session.id());
    next.session
        .create(&marker, b"", CreateMode::Ephemeral)
        .await
        .expect("the new session writes");
    client.close().await.expect("close");
    let _ = observer.close().await;
    took
}

/// Ten clients at once, each partitioned past its session timeout: each
/// reports the loss while the partition lasts, has no live session while
/// the server may still hold the old one, and is back within
/// [`RECOVERY_BOUND`] of the heal.
pub async fn client_reopens_after_partition(h: &dyn Harness) {
    let root = h.root("client-partition");
    let rounds = (0..ROUNDS).map(|i| partition_round(h, join(&root, &i.to_string())));
    let mut took: Vec<Duration> = join_all(rounds).await;
    took.sort();
    eprintln!(
        "client figures: backend={} rounds={} back_after_heal_ms(min/median/max)={}/{}/{}",
        h.name(),
        took.len(),
        took[0].as_millis(),
        took[took.len() / 2].as_millis(),
        took[took.len() - 1].as_millis()
    );
    let worst = took[took.len() - 1];
    assert!(
        worst <= RECOVERY_BOUND,
        "{}: back {worst:?} after the heal",
        h.name()
    );
}

/// What a client's session held is lost with it and stays lost: a lock
/// guard, a semaphore lease and a reliable-queue delivery each report
/// `SessionExpired`; on the next session the client holds none of them
/// (another party takes the lock and the lease at once, and the item is
/// delivered again, to that party); nothing re-takes them.
pub async fn client_never_retakes_holds(h: &dyn Harness) {
    let dir = h.root("client-holds");
    let (lock_dir, lease_dir, queue_dir) =
        (join(&dir, "lock"), join(&dir, "lease"), join(&dir, "queue"));
    let (client, _fault) = h
        .faulty_client(CLIENT_SESSION_TIMEOUT, client_options())
        .await;
    let session = client.session().await.expect("a session");
    let guard = Lock::new(&session, &lock_dir)
        .expect("lock")
        .acquire()
        .await
        .expect("acquire a free lock");
    let lease = Semaphore::new(&session, &lease_dir, 1)
        .expect("semaphore")
        .acquire(1)
        .await
        .expect("a free lease")
        .pop()
        .expect("one lease");
    let queue = Queue::reliable(&session, &queue_dir).expect("queue");
    queue.offer(b"item").await.expect("offer");
    let delivery = queue.take().await.expect("take the item");
    h.expire(&session).await;
    for (what, reason) in [
        ("lock", within("the guard's loss", guard.lost()).await),
        ("lease", within("the lease's loss", lease.lost()).await),
        (
            "delivery",
            within("the delivery's loss", delivery.lost()).await,
        ),
    ] {
        assert!(
            matches!(reason, Error::SessionExpired),
            "{}: {what} lost for {reason}",
            h.name()
        );
    }
    let next = within("the next session", client.next_session(1))
        .await
        .expect("the next session");
    let other = h.open().await;
    let taken = within(
        "another party takes the lock",
        Lock::new(&other, &lock_dir).expect("lock").acquire(),
    )
    .await
    .expect("the lock is free");
    let leased = within(
        "another party takes the lease",
        Semaphore::new(&other, &lease_dir, 1)
            .expect("semaphore")
            .acquire(1),
    )
    .await
    .expect("the lease is free");
    let again = within(
        "the item is delivered again",
        Queue::reliable(&other, &queue_dir).expect("queue").take(),
    )
    .await
    .expect("the item went back");
    assert_eq!(again.data(), b"item");
    // The lock's one contender is the other party's: the client's new
    // session did not queue for it again.
    let kids = next.session.children(&lock_dir).await.expect("list");
    assert!(
        kids.len() == 1 && taken.node_path().ends_with(&kids[0].name),
        "{}: contenders at {lock_dir}: {kids:?}",
        h.name()
    );
    assert!(matches!(guard.lost().await, Error::SessionExpired));
    again.ack().await.expect("ack");
    drop(leased);
    taken.release().await.expect("release");
    let _ = other.close().await;
    client.close().await.expect("close");
}

/// The next latch event, within [`crate::WAIT`].
async fn next_latch(w: &mut coord_core::recipes::RejoiningLatchWatcher, what: &str) -> LatchEvent {
    within(what, w.next())
        .await
        .unwrap_or_else(|| panic!("{what}: the latch's stream ended"))
}

/// Ten server-side expiries under a leading rejoining latch: each time its
/// watcher sees the term end (`NotLeader`) before the next term begins on
/// the next session, with a larger token, within [`RECOVERY_BOUND`].
pub async fn rejoining_latch_after_expiry(h: &dyn Harness) {
    let dir = h.root("rejoining-latch");
    let (client, _fault) = h
        .faulty_client(CLIENT_SESSION_TIMEOUT, client_options())
        .await;
    let latch = RejoiningLatch::start(&client, &dir, b"me").expect("latch");
    let mut terms = latch.watch();
    let mut token = within("the first term", latch.await_leadership())
        .await
        .expect("leads alone");
    loop {
        if next_latch(&mut terms, "the first term").await == (LatchEvent::IsLeader { token }) {
            break;
        }
    }
    for round in 1..=ROUNDS as u64 {
        let session = client.session().await.expect("the live session");
        assert_eq!(latch.generation(), round, "{}", h.name());
        h.expire(&session).await;
        let expired = Instant::now();
        assert_eq!(
            next_latch(&mut terms, "the term's end").await,
            LatchEvent::NotLeader,
            "{}: round {round}: the next term began before this one ended",
            h.name()
        );
        let next = match next_latch(&mut terms, "the next term").await {
            LatchEvent::IsLeader { token } => token,
            LatchEvent::NotLeader => panic!("{}: NotLeader twice", h.name()),
            other => panic!("{}: unexpected {other:?}", h.name()),
        };
        let took = expired.elapsed();
        assert!(
            session.state().is_terminal(),
            "{}: leads again while the old session lives",
            h.name()
        );
        assert!(
            next > token,
            "{}: round {round}: token {next} after {token}",
            h.name()
        );
        assert!(
            took <= RECOVERY_BOUND,
            "{}: round {round}: leads again after {took:?}",
            h.name()
        );
        assert_eq!(latch.ended_terms(), round);
        token = next;
    }
    latch.close().await.expect("close the latch");
    assert_eq!(
        next_latch(&mut terms, "the close").await,
        LatchEvent::NotLeader
    );
    assert_eq!(within("the stream's end", terms.next()).await, None);
    let observer = h.open().await;
    assert!(
        observer
            .children(&dir)
            .await
            .map(|c| c.is_empty())
            .unwrap_or(true),
        "{}: a closed latch left its offer",
        h.name()
    );
    let _ = observer.close().await;
    client.close().await.expect("close");
}

/// What one round of [`rejoining_latch_after_partition`] measured.
struct LatchRound {
    back_after_heal: Duration,
}

/// One election: latch A (partitioned) leads, B waits on a healthy client.
/// A's term must end before B's begins; after the heal A is back in the
/// election on a new session, behind B; once B closes, A leads again with
/// a token larger than both earlier terms.
async fn latch_partition_round(h: &dyn Harness, dir: String) -> LatchRound {
    let (client_a, fault) = h
        .faulty_client(CLIENT_SESSION_TIMEOUT, client_options())
        .await;
    let (client_b, _healthy) = h
        .faulty_client(CLIENT_SESSION_TIMEOUT, client_options())
        .await;
    let a = RejoiningLatch::start(&client_a, &dir, b"a").expect("latch a");
    let first = within("A leads", a.await_leadership())
        .await
        .expect("A leads alone");
    let b = RejoiningLatch::start(&client_b, &dir, b"b").expect("latch b");
    eventually("B's offer is made", || async { b.node_path().is_some() }).await;
    assert!(!b.has_leadership());
    // Each watcher records the instant it sees the change.
    let mut a_terms = a.watch();
    let a_lost = tokio::spawn(async move {
        loop {
            match a_terms.next().await {
                Some(LatchEvent::NotLeader) => return Instant::now(),
                Some(_) => {}
                None => panic!("A's stream ended"),
            }
        }
    });
    let mut b_terms = b.watch();
    let b_granted = tokio::spawn(async move {
        loop {
            match b_terms.next().await {
                Some(LatchEvent::IsLeader { token }) => return (Instant::now(), token),
                Some(_) => {}
                None => panic!("B's stream ended"),
            }
        }
    });
    fault.partition();
    let a_lost = within("A's term ends", a_lost).await.expect("A's watcher");
    let (b_at, b_token) = within("B leads", b_granted).await.expect("B's watcher");
    assert!(
        a_lost <= b_at,
        "{}: B led {:?} before A's term ended: two leaders",
        h.name(),
        a_lost.duration_since(b_at)
    );
    assert!(b_token > first);
    fault.heal();
    let healed = Instant::now();
    eventually("A is back in the election", || async {
        a.generation() >= 2 && a.node_path().is_some()
    })
    .await;
    let back_after_heal = healed.elapsed();
    assert!(
        !a.has_leadership(),
        "{}: A leads beside B after the heal",
        h.name()
    );
    b.close().await.expect("close B");
    let again = within("A leads again", a.await_leadership())
        .await
        .expect("A leads once B is gone");
    assert!(again > b_token && again > first, "{}", h.name());
    assert_eq!(a.ended_terms(), 1);
    a.close().await.expect("close A");
    client_a.close().await.expect("close");
    client_b.close().await.expect("close");
    LatchRound { back_after_heal }
}

/// Ten elections at once, the leader of each partitioned past its session
/// timeout: no two leaders at any instant (the leader's term ends before
/// the next one begins), the partitioned latch comes back within
/// [`RECOVERY_BOUND`] of the heal and leads again later with a larger
/// token.
pub async fn rejoining_latch_after_partition(h: &dyn Harness) {
    let root = h.root("rejoining-latch-partition");
    let rounds = (0..ROUNDS).map(|i| latch_partition_round(h, join(&root, &i.to_string())));
    let mut took: Vec<Duration> = join_all(rounds)
        .await
        .into_iter()
        .map(|r| r.back_after_heal)
        .collect();
    took.sort();
    let worst = took[took.len() - 1];
    eprintln!(
        "latch figures: backend={} rounds={} back_after_heal_ms(min/median/max)={}/{}/{}",
        h.name(),
        took.len(),
        took[0].as_millis(),
        took[took.len() / 2].as_millis(),
        worst.as_millis()
    );
    assert!(
        worst <= RECOVERY_BOUND,
        "{}: back {worst:?} after the heal",
        h.name()
    );
}

#[doc(hidden)]
#[macro_export]
macro_rules! __come_back_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            come_back::client_reopens_after_expiry,
            come_back::client_reopens_after_partition,
            come_back::client_never_retakes_holds,
            come_back::rejoining_latch_after_expiry,
            come_back::rejoining_latch_after_partition,
        );
    };
}

//! Conformance of [`ReentrantLock`]: one owner (a handle and its clones)
//! re-enters at once and counts its holds; the lock is released at the
//! last one; every other owner is excluded.

use std::time::Duration;

use coord_core::path::join;
use coord_core::prelude::*;
use coord_core::recipes::{Lock, LockGuard, ReentrantLock, SemaphoreMutex, Stats};
use coord_core::{CreateMode, Error, Op, Session};

use crate::lock_kinds::{await_blocked, held_nodes};
use crate::{close_all, open_n, within, Harness, WAIT};

/// How long an acquire that must time out is given.
const SHORT: Duration = Duration::from_millis(200);

/// The owner of `lock` takes it, then re-enters it three ways (`try`,
/// `acquire_timeout`, and `acquire` through a clone), each at once, with
/// the same node and fencing token, counting its holds; `other` (a plain
/// lock at the same path, through another session) cannot take it until
/// the last hold is released, and then can.
async fn reenters<L: Lockable + 'static>(name: &str, lock: ReentrantLock<L>, other: &dyn Lockable) {
    assert!(!lock.is_held(), "{name}: held before any acquire");
    let first = lock.acquire().await.expect("acquire");
    assert_eq!(lock.hold_count(), 1, "{name}: holds after one acquire");
    let mut holds = vec![first];
    holds.push(
        lock.try_acquire()
            .await
            .expect("try")
            .unwrap_or_else(|| panic!("{name}: the owner could not re-enter at once")),
    );
    holds.push(
        lock.acquire_timeout(SHORT)
            .await
            .unwrap_or_else(|e| panic!("{name}: re-entering with a timeout: {e}")),
    );
    holds.push(
        within(
            &format!("{name}: re-entering through a clone"),
            lock.clone().acquire(),
        )
        .await
        .expect("acquire"),
    );
    assert_eq!(lock.hold_count(), 4, "{name}: holds counted");
    assert!(lock.is_held(), "{name}: is_held");
    for g in &holds[1..] {
        assert_eq!(
            (g.fencing_token(), g.node_path()),
            (holds[0].fencing_token(), holds[0].node_path()),
            "{name}: a re-entered hold is not the same hold"
        );
    }
    assert_eq!(
        held_nodes(lock.session(), lock.path()).await,
        vec![holds[0].node_path().to_owned()],
        "{name}: re-entering made nodes"
    );
    while holds.len() > 1 {
        let g = holds.pop().expect("a hold");
        g.release().await.expect("release an inner hold");
        assert_eq!(
            lock.hold_count(),
            holds.len(),
            "{name}: holds after a release"
        );
        assert!(
            other.try_acquire().await.expect("try").is_none(),
            "{name}: another session took it with {} holds left",
            holds.len()
        );
    }
    holds
        .pop()
        .expect("the first hold")
        .release()
        .await
        .expect("release the last hold");
    assert_eq!(lock.hold_count(), 0, "{name}: holds after the last release");
    assert!(!lock.is_held(), "{name}: is_held after the last release");
    let g = other
        .acquire_timeout(WAIT)
        .await
        .unwrap_or_else(|e| panic!("{name}: not free after the last release: {e}"));
    assert!(
        lock.try_acquire().await.expect("try").is_none(),
        "{name}: the owner re-entered a lock someone else holds"
    );
    g.release().await.expect("release");
}

/// The same owner re-enters at once, with the same fencing token and node,
/// and `hold_count` counts; the lock is released only at zero, whatever
/// lock is wrapped (the semaphore mutex is not reentrant by itself). An
/// owner whose session ended (here: closed) does not re-enter: its acquire
/// reports the session's end.
pub async fn reentrant_same_owner_reenters(h: &dyn Harness) {
    let root = h.root("reentrant_same_owner_reenters");
    let [a, b] = <[Session; 2]>::try_from(open_n(h, 2).await).expect("two sessions");
    let dir = join(&root, "lock");
    let lock = ReentrantLock::new(Lock::new(&a, &dir).expect("lock"));
    reenters("Lock", lock.clone(), &Lock::new(&b, &dir).expect("lock")).await;
    let mdir = join(&root, "mutex");
    reenters(
        "SemaphoreMutex",
        ReentrantLock::new(SemaphoreMutex::new(&a, &mdir).expect("mutex")),
        &SemaphoreMutex::new(&b, &mdir).expect("mutex"),
    )
    .await;

    let held = lock.acquire().await.expect("acquire");
    a.close().await.expect("close");
    let again = lock.acquire().await;
    assert!(
        matches!(again, Err(Error::SessionClosed)),
        "re-entering after the session was closed: {again:?}"
    );
    drop(held);
    close_all(&[a, b]).await;
}

/// A different owner — another `ReentrantLock::new`, even over a lock on
/// the same session — is excluded like any other contender, and gets the
/// lock when the first owner's last hold goes.
pub async fn reentrant_other_owner_excluded(h: &dyn Harness) {
    let dir = h.root("reentrant_other_owner_excluded");
    let s = h.open().await;
    let first = ReentrantLock::new(Lock::new(&s, &dir).expect("lock"));
    let stats = Stats::new();
    let second = ReentrantLock::new(Lock::new(&s, &dir).expect("lock").with_stats(stats.clone()));
    let g = first.acquire().await.expect("acquire");
    assert!(
        second.try_acquire().await.expect("try").is_none(),
        "another owner on the same session re-entered"
    );
    match second.acquire_timeout(SHORT).await {
        Err(Error::Timeout(_)) => {}
        other => panic!("another owner's acquire_timeout: {other:?}"),
    }
    assert_eq!(second.hold_count(), 0, "the excluded owner counts a hold");
    let waiting = {
        let second = second.clone();
        tokio::spawn(async move { second.acquire().await })
    };
    await_blocked(&stats, 1, "the second owner waits").await;
    let inner = first.acquire().await.expect("the first owner re-enters");
    inner.release().await.expect("release");
    assert!(
        !waiting.is_finished(),
        "the second owner got in beside the first"
    );
    g.release()
        .await
        .expect("release the first owner's last hold");
    let g2 = within("the second owner after the first's last release", waiting)
        .await
        .expect("task")
        .expect("acquire");
    assert!(
        first.try_acquire().await.expect("try").is_none(),
        "the first owner got in beside the second"
    );
    g2.release().await.expect("release");
    let _ = s.close().await;
}

/// Concurrent acquires of one owner (clones in other tasks, and two
/// futures joined in one task) queue once and share one hold: the same
/// node and token, one hold each. Dropping the guards releases the lock
/// only when the last one goes.
pub async fn reentrant_concurrent_acquires_share_one_hold(h: &dyn Harness) {
    let dir = h.root("reentrant_concurrent_acquires_share_one_hold");
    let [a, b] = <[Session; 2]>::try_from(open_n(h, 2).await).expect("two sessions");
    let other = Lock::new(&b, &dir).expect("lock");
    let blocker = other.acquire().await.expect("acquire");
    let stats = Stats::new();
    let owner = ReentrantLock::new(Lock::new(&a, &dir).expect("lock").with_stats(stats.clone()));
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let owner = owner.clone();
        tasks.push(tokio::spawn(async move {
            vec![owner.acquire().await.expect("acquire")]
        }));
    }
    {
        let owner = owner.clone();
        tasks.push(tokio::spawn(async move {
            let (x, y) = tokio::join!(owner.acquire(), owner.acquire());
            vec![x.expect("acquire"), y.expect("acquire")]
        }));
    }
    await_blocked(&stats, 1, "the owner waits").await;
    assert_eq!(owner.hold_count(), 0, "holds counted before the grant");
    blocker.release().await.expect("release");
    let mut guards: Vec<LockGuard> = Vec::new();
    for t in tasks {
        guards.extend(within("an acquire of the owner", t).await.expect("task"));
    }
    assert_eq!(owner.hold_count(), 5, "one hold per acquire");
    let node = guards[0].node_path().to_owned();
    assert!(
        guards
            .iter()
            .all(|g| g.node_path() == node && g.fencing_token() == guards[0].fencing_token()),
        "the owner's concurrent acquires got different holds"
    );
    assert_eq!(
        held_nodes(&a, &dir).await,
        vec![node],
        "one node for the owner"
    );
    while guards.len() > 1 {
        drop(guards.pop());
        assert!(
            other.try_acquire().await.expect("try").is_none(),
            "taken elsewhere with {} of the owner's guards alive",
            guards.len()
        );
    }
    drop(guards);
    let g = other
        .acquire_timeout(WAIT)
        .await
        .expect("free once the owner's last guard was dropped");
    assert_eq!(owner.hold_count(), 0, "holds after every guard was dropped");
    g.release().await.expect("release");
    close_all(&[a, b]).await;
}

/// A hold the owner lost (its node deleted by an operator) is not
/// re-entered: while another session holds the lock, the owner's try gets
/// `None` (or reports the loss), never the lost hold; once the lost
/// guard is gone, its acquire returns a live hold.
pub async fn reentrant_lost_hold_not_reentered(h: &dyn Harness) {
    let root = h.root("reentrant_lost_hold_not_reentered");
    let (dir, resource) = (join(&root, "lock"), join(&root, "resource"));
    let [a, b] = <[Session; 2]>::try_from(open_n(h, 2).await).expect("two sessions");
    let owner = ReentrantLock::new(Lock::new(&a, &dir).expect("lock"));
    let held = owner.acquire().await.expect("acquire");
    b.delete(held.node_path(), None)
        .await
        .expect("an operator deletes the node");
    let why = within("lost()", held.lost()).await;
    assert!(matches!(why, Error::LockLost { .. }), "lost() said {why:?}");
    let other = Lock::new(&b, &dir)
        .expect("lock")
        .acquire_timeout(WAIT)
        .await
        .expect("the lock is free once the holder's node is gone");
    // Refusing (the lock is held elsewhere) or reporting the loss are both
    // fine; handing back the lost hold is not.
    match owner.try_acquire().await {
        Ok(None) | Err(Error::LockLost { .. }) => {}
        Err(e) => panic!("the owner's try after its hold was lost: {e}"),
        Ok(Some(g)) => panic!(
            "the owner re-entered a lost hold ({}) while another session holds the lock ({})",
            g.node_path(),
            other.node_path()
        ),
    }
    other.release().await.expect("release");
    drop(held);
    let g = owner
        .acquire_timeout(WAIT)
        .await
        .expect("the owner takes the free lock");
    g.write(Op::Create {
        path: resource,
        data: Vec::new(),
        mode: CreateMode::Persistent,
    })
    .await
    .expect("a guarded write under the owner's new hold");
    g.release().await.expect("release");
    close_all(&[a, b]).await;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __reentrant_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            reentrant::reentrant_same_owner_reenters,
            reentrant::reentrant_other_owner_excluded,
            reentrant::reentrant_concurrent_acquires_share_one_hold,
            reentrant::reentrant_lost_hold_not_reentered,
        );
    };
}

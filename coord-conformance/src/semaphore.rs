//! Conformance of what only the semaphore ([`Semaphore`]) promises: N
//! leases, all or nothing, lease data, and the mutex on top of it not
//! being reentrant. What every lock promises, [`SemaphoreMutex`] included,
//! is tested in [`crate::locks`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coord_core::path::{self, join};
use coord_core::recipes::{Lock, Semaphore, SemaphoreMutex};
use coord_core::{CreateMode, Created, Error, Session};

use crate::{
    await_children, children_or_none, close_all, eventually, open_n, within, Harness, WAIT,
};

const LONG: Duration = WAIT;

/// Never more than N leases are held, under churn from many sessions.
pub async fn semaphore_never_more_than_n(h: &dyn Harness) {
    let dir = h.root("semaphore_never_more_than_n");
    let sessions = open_n(h, 8).await;
    let held = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for s in sessions.clone() {
        let (dir, held) = (dir.clone(), held.clone());
        tasks.push(tokio::spawn(async move {
            let sem = Semaphore::new(&s, &dir, 3).expect("semaphore");
            for _ in 0..6 {
                let leases = sem.acquire(1).await.expect("acquire");
                assert!(
                    held.fetch_add(1, Ordering::SeqCst) < 3,
                    "more than 3 leases held"
                );
                tokio::task::yield_now().await;
                held.fetch_sub(1, Ordering::SeqCst);
                Semaphore::return_all(leases).await.expect("return");
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    close_all(&sessions).await;
}

/// `acquire(qty)` is all or nothing: a timeout returns with nothing held,
/// having returned the leases it had taken.
pub async fn semaphore_all_or_nothing(h: &dyn Harness) {
    let dir = h.root("semaphore_all_or_nothing");
    let leases_dir = join(&dir, "leases");
    let [a, b] = <[Session; 2]>::try_from(open_n(h, 2).await).expect("two sessions");
    let sa = Semaphore::new(&a, &dir, 4).expect("semaphore");
    let sb = Semaphore::new(&b, &dir, 4).expect("semaphore");
    let three = sa.acquire(3).await.expect("3 of 4 leases");
    assert_eq!(three.len(), 3);
    match sb.acquire_timeout(2, Duration::from_millis(300)).await {
        Err(Error::Timeout(_)) => {}
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert_eq!(
        children_or_none(&a, &leases_dir).await.len(),
        3,
        "the timed-out acquire kept a lease"
    );
    assert!(
        sb.try_acquire(2).await.expect("try").is_none(),
        "2 leases beside 3 of 4"
    );
    let one = sb
        .try_acquire(1)
        .await
        .expect("try")
        .expect("the 4th lease");
    Semaphore::return_all(three).await.expect("return");
    let two = sb
        .acquire_timeout(2, LONG)
        .await
        .expect("2 leases once 3 are back");
    assert_eq!(children_or_none(&a, &leases_dir).await.len(), 3);
    Semaphore::return_all(one.into_iter().chain(two))
        .await
        .expect("return");
    assert!(matches!(
        sb.acquire(0).await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        sb.acquire(5).await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        Semaphore::new(&a, &dir, 0),
        Err(Error::InvalidArgument(_))
    ));
    close_all(&[a, b]).await;
}

/// A dead holder's leases come back to the waiters.
pub async fn semaphore_dead_holder_leases_return(h: &dyn Harness) {
    let dir = h.root("semaphore_dead_holder_leases_return");
    let [a, b] = <[Session; 2]>::try_from(open_n(h, 2).await).expect("two sessions");
    let held = Semaphore::new(&a, &dir, 2)
        .expect("semaphore")
        .acquire(2)
        .await
        .expect("both leases");
    let sb = Semaphore::new(&b, &dir, 2).expect("semaphore");
    let waiter = tokio::spawn(async move { sb.acquire(2).await });
    eventually("the waiter's lease node exists", || {
        let b = b.clone();
        let leases = join(&dir, "leases");
        async move { children_or_none(&b, &leases).await.len() == 3 }
    })
    .await;
    h.expire(&a).await;
    let got = tokio::time::timeout(LONG, waiter)
        .await
        .expect("the leases came back")
        .expect("task")
        .expect("acquire");
    assert_eq!(got.len(), 2);
    std::mem::forget(held); // its session is gone; nothing to release
    Semaphore::return_all(got).await.expect("return");
    close_all(&[a, b]).await;
}

/// Leases carry data and a node name; the semaphore mutex is not
/// reentrant.
pub async fn semaphore_lease_data_and_mutex(h: &dyn Harness) {
    let dir = h.root("semaphore_lease_data_and_mutex");
    let s = h.open().await;
    let sem = Semaphore::new(&s, &join(&dir, "sem"), 2)
        .expect("semaphore")
        .with_data(b"host-1")
        .expect("data");
    let leases = sem.acquire(1).await.expect("lease");
    assert_eq!(leases[0].data().await.expect("data"), b"host-1");
    let name = leases[0].node_name();
    assert!(
        name.starts_with("_c_") && name.contains("lease-"),
        "lease node name {name}"
    );
    Semaphore::return_all(leases).await.expect("return");

    let m = SemaphoreMutex::new(&s, &join(&dir, "mutex")).expect("mutex");
    let g = m.acquire().await.expect("acquire");
    assert!(
        m.try_acquire().await.expect("try").is_none(),
        "the mutex was reentered"
    );
    g.release().await.expect("release");
    let g = m.try_acquire().await.expect("try").expect("free again");
    g.release().await.expect("release");
    let _ = s.close().await;
}

/// With room, a lease is taken without the semaphore's internal lock
/// (`<path>/locks`): create the lease node, list, keep it. Shown two ways:
/// the semaphore's stats, which its internal lock counts into, count one
/// grant per uncontended lease and no lock grant beside it; and while
/// another session holds the internal lock (as a Curator acquirer does
/// while it takes a lease), a lease that is free is still granted, by
/// `try_acquire` and by `acquire_timeout`.
pub async fn semaphore_room_is_taken_without_the_internal_lock(h: &dyn Harness) {
    let dir = h.root("semaphore_room_is_taken_without_the_internal_lock");
    let leases_dir = join(&dir, "leases");
    let [a, b] = <[Session; 2]>::try_from(open_n(h, 2).await).expect("two sessions");
    let sem = Semaphore::new(&a, &dir, 2).expect("semaphore");

    let one = sem.acquire(1).await.expect("a lease");
    assert_eq!(
        sem.stats().acquisitions(),
        1,
        "an uncontended acquire took the internal lock (its grant is counted too)"
    );
    Semaphore::return_all(one).await.expect("return");

    let inner = Lock::new(&b, &join(&dir, "locks"))
        .expect("the internal lock")
        .acquire()
        .await
        .expect("the internal lock, held by another session");
    let first = sem
        .try_acquire(1)
        .await
        .expect("try")
        .expect("a free lease while the internal lock is held elsewhere");
    let second = sem
        .acquire_timeout(1, LONG)
        .await
        .expect("the last free lease while the internal lock is held elsewhere");
    assert!(
        sem.try_acquire(1).await.expect("try").is_none(),
        "a third lease of 2"
    );
    await_children(&a, &leases_dir, "only the 2 leases held", |k| k.len() == 2).await;
    assert_eq!(
        sem.stats().acquisitions(),
        3,
        "lease grants (and no internal lock grant) counted"
    );
    inner.release().await.expect("release the internal lock");
    Semaphore::return_all(first.into_iter().chain(second))
        .await
        .expect("return");
    close_all(&[a, b]).await;
}

/// One lease taken as Curator's `InterProcessSemaphoreV2` takes every
/// lease: holding the internal lock, create the lease node, list the
/// leases, wait for a change while they are more than `max`, then let go
/// of the lock. Counted in `held` from the grant until [`curator_return`].
async fn curator_lease(s: &Session, dir: &str, max: usize, held: &AtomicUsize) -> Created {
    let leases_dir = join(dir, "leases");
    let inner = Lock::new(s, &join(dir, "locks"))
        .expect("the internal lock")
        .acquire()
        .await
        .expect("the internal lock");
    let uuid = uuid::Uuid::new_v4();
    let lease = s
        .create(
            &join(&leases_dir, &format!("_c_{uuid}-lease-")),
            b"",
            CreateMode::EphemeralSequential,
        )
        .await
        .expect("create the lease node");
    let me = path::name(&lease.path).to_owned();
    loop {
        let (kids, changed) = s.children_watch(&leases_dir).await.expect("list");
        assert!(kids.iter().any(|k| k.name == me), "our lease node is gone");
        if kids.len() <= max {
            break;
        }
        within("a change of the leases", changed)
            .await
            .expect("watch");
    }
    assert!(
        held.fetch_add(1, Ordering::SeqCst) < max,
        "more than {max} leases held (a Curator-style acquirer's grant)"
    );
    inner.release().await.expect("release the internal lock");
    lease
}

/// Return a lease taken by [`curator_lease`].
async fn curator_return(s: &Session, lease: Created, held: &AtomicUsize) {
    held.fetch_sub(1, Ordering::SeqCst);
    s.delete(&lease.path, None)
        .await
        .expect("delete the lease node");
}

/// Fast-path acquirers and Curator-style ones (which always hold the
/// internal lock) on one semaphore of 2 leases, 8 sessions: never more
/// than 2 held. It starts with both leases held Curator's way and the 6
/// semaphore acquirers queued on the internal lock (each fast attempt
/// found no room), so both paths are taken; then everyone loops.
pub async fn semaphore_fast_and_locked_acquirers_mixed(h: &dyn Harness) {
    const MAX: usize = 2;
    const ROUNDS: usize = 4;
    let dir = h.root("semaphore_fast_and_locked_acquirers_mixed");
    let sessions = open_n(h, 8).await;
    let (ours, curators) = sessions.split_at(6);
    let held = Arc::new(AtomicUsize::new(0));
    let mut first = Vec::new();
    for s in curators {
        first.push(curator_lease(s, &dir, MAX, &held).await);
    }
    let stats = coord_core::recipes::Stats::new();
    let mut tasks = Vec::new();
    for s in ours {
        let (dir, held) = (dir.clone(), held.clone());
        let sem = Semaphore::new(s, &dir, MAX as u32)
            .expect("semaphore")
            .with_stats(stats.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..ROUNDS {
                let leases = sem.acquire(1).await.expect("acquire");
                assert!(
                    held.fetch_add(1, Ordering::SeqCst) < MAX,
                    "more than {MAX} leases held (a semaphore's grant)"
                );
                tokio::task::yield_now().await;
                held.fetch_sub(1, Ordering::SeqCst);
                Semaphore::return_all(leases).await.expect("return");
            }
        }));
    }
    await_children(
        &curators[0],
        &join(&dir, "locks"),
        "the 6 semaphore acquirers queued on the internal lock",
        |k| k.len() == 6,
    )
    .await;
    for (s, lease) in curators.iter().zip(first) {
        curator_return(s, lease, &held).await;
    }
    for s in curators {
        let (s, dir, held) = (s.clone(), dir.clone(), held.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..ROUNDS {
                let lease = curator_lease(&s, &dir, MAX, &held).await;
                tokio::task::yield_now().await;
                curator_return(&s, lease, &held).await;
            }
        }));
    }
    for t in tasks {
        within("every acquirer's rounds", t).await.expect("task");
    }
    assert!(
        stats.acquisitions() > (ours.len() * ROUNDS) as u64,
        "no semaphore lease was taken under the internal lock"
    );
    for d in ["leases", "locks"] {
        await_children(&sessions[0], &join(&dir, d), "every node gone", |k| {
            k.is_empty()
        })
        .await;
    }
    close_all(&sessions).await;
}

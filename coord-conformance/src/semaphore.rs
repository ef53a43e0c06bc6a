//! Conformance of what only the semaphore ([`Semaphore`]) promises: N
//! leases, all or nothing, lease data, and the mutex on top of it not
//! being reentrant. What every lock promises, [`SemaphoreMutex`] included,
//! is tested in [`crate::locks`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coord_core::path::join;
use coord_core::recipes::{Semaphore, SemaphoreMutex};
use coord_core::{Error, Session};

use crate::{children_or_none, close_all, eventually, open_n, Harness, WAIT};

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
        .with_data(b"host-1".to_vec())
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

//! Conformance of [`MultiLock`]: several locks of any kinds, all or
//! nothing, taken in path order so that overlapping sets never deadlock.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coord_core::path::join;
use coord_core::prelude::*;
use coord_core::recipes::{Lock, MultiLock, RwLock, SemaphoreMutex};
use coord_core::{Error, Session};

use crate::lock_kinds::held_nodes;
use crate::{children_or_none, close_all, eventually, open_n, within, Harness};

/// How long an acquire that must time out is given.
const SHORT: Duration = Duration::from_millis(300);

/// One lock of each of three kinds, at `a`, `b` and `c` under `root`,
/// through `s`: a [`Lock`], a [`SemaphoreMutex`] and the write half of a
/// [`RwLock`].
fn mixed(s: &Session, root: &str) -> Vec<Box<dyn Lockable>> {
    vec![
        Box::new(Lock::new(s, &join(root, "a")).expect("lock")),
        Box::new(SemaphoreMutex::new(s, &join(root, "b")).expect("mutex")),
        Box::new(
            RwLock::new(s, &join(root, "c"))
                .expect("rwlock")
                .write_lock(),
        ),
    ]
}

/// Assert that each lock of `locks` is free: it can be taken at once (and
/// is released again).
async fn assert_free<'a>(locks: impl IntoIterator<Item = &'a dyn Lockable>, what: &str) {
    for l in locks {
        let g = l
            .try_acquire()
            .await
            .expect("try")
            .unwrap_or_else(|| panic!("{what}: {} is held", l.path()));
        g.release().await.expect("release");
    }
}

/// With one lock of the set held elsewhere, `try_acquire` gets `None` and
/// `acquire_timeout` times out, each leaving none of the others held;
/// `acquire` waits for it and then holds all three (given out of path
/// order, of three kinds), so nobody else can take any; its release frees
/// all three.
pub async fn multi_lock_all_or_nothing(h: &dyn Harness) {
    let root = h.root("multi_lock_all_or_nothing");
    let [me, other] = <[Session; 2]>::try_from(open_n(h, 2).await).expect("two sessions");
    let mut given = mixed(&me, &root);
    given.reverse();
    let multi = MultiLock::new(given).expect("multi-lock");
    let paths: Vec<String> = ["a", "b", "c"].iter().map(|n| join(&root, n)).collect();
    assert_eq!(
        multi.locks().map(|l| l.path()).collect::<Vec<_>>(),
        paths,
        "the locks are taken in path order"
    );
    let others = mixed(&other, &root);
    let blocker = others[1].acquire().await.expect("hold b elsewhere");

    assert!(
        multi.try_acquire().await.expect("try").is_none(),
        "taken with one of the locks held elsewhere"
    );
    assert_eq!(
        held_nodes(&other, &root).await,
        vec![blocker.node_path().to_owned()],
        "a failed try left something held or queued"
    );
    assert_free(
        [others[0].as_ref(), others[2].as_ref()],
        "after a failed try",
    )
    .await;

    match multi.acquire_timeout(SHORT).await {
        Err(Error::Timeout(_)) => {}
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert_eq!(
        held_nodes(&other, &root).await,
        vec![blocker.node_path().to_owned()],
        "a timed-out acquire left something held or queued"
    );

    let waiting = {
        let multi = multi.clone();
        tokio::spawn(async move { multi.acquire().await })
    };
    // In path order, whatever the order given: it takes a, then waits for
    // b, and has not touched c.
    let (lock_a, lock_b) = (others[0].as_ref(), others[1].as_ref());
    eventually("the multi-lock holds a and waits for b", || async move {
        let a = lock_a.participants().await.expect("participants");
        let b = lock_b.participants().await.expect("participants");
        a.len() == 1 && a[0].is_holding() && b.len() > 1
    })
    .await;
    assert!(
        others[2]
            .participants()
            .await
            .expect("participants")
            .is_empty(),
        "the multi-lock took c before b"
    );
    blocker.release().await.expect("release b");
    let held = within("the multi-lock once b is free", waiting)
        .await
        .expect("task")
        .expect("acquire");
    assert_eq!(held.guards().len(), 3, "one guard per lock");
    for (g, p) in held.guards().iter().zip(&paths) {
        assert!(
            g.node_path().starts_with(&format!("{p}/")),
            "guard {} is not under {p}",
            g.node_path()
        );
    }
    for l in &others {
        assert!(
            l.try_acquire().await.expect("try").is_none(),
            "{} taken beside the multi-lock",
            l.path()
        );
    }
    held.release().await.expect("release");
    assert_free(others.iter().map(|l| l.as_ref()), "after the release").await;
    close_all(&[me, other]).await;
}

/// Two sessions take multi-locks over overlapping sets ({a, b, c} and
/// {d, c, b}, the shared pair given in opposite orders), again and again,
/// at once: they never deadlock and never hold the shared locks together.
pub async fn multi_lock_overlapping_sets_never_deadlock(h: &dyn Harness) {
    const ROUNDS: usize = 6;
    let root = h.root("multi_lock_overlapping_sets_never_deadlock");
    let sessions = open_n(h, 2).await;
    let p = |n: &str| join(&root, n);
    let first = MultiLock::new(vec![
        Box::new(Lock::new(&sessions[0], &p("a")).expect("lock")) as Box<dyn Lockable>,
        Box::new(Lock::new(&sessions[0], &p("b")).expect("lock")),
        Box::new(SemaphoreMutex::new(&sessions[0], &p("c")).expect("mutex")),
    ])
    .expect("multi-lock");
    let second = MultiLock::new(vec![
        Box::new(RwLock::new(&sessions[1], &p("d")).expect("rw").write_lock()) as Box<dyn Lockable>,
        Box::new(SemaphoreMutex::new(&sessions[1], &p("c")).expect("mutex")),
        Box::new(Lock::new(&sessions[1], &p("b")).expect("lock")),
    ])
    .expect("multi-lock");
    let inside = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for (who, multi) in [("first", first), ("second", second)] {
        let inside = inside.clone();
        tasks.push(tokio::spawn(async move {
            for round in 0..ROUNDS {
                let held = multi
                    .acquire()
                    .await
                    .unwrap_or_else(|e| panic!("{who}, round {round}: acquire: {e}"));
                assert_eq!(
                    inside.fetch_add(1, Ordering::SeqCst),
                    0,
                    "{who}, round {round}: both multi-locks hold b and c at once"
                );
                tokio::task::yield_now().await;
                inside.fetch_sub(1, Ordering::SeqCst);
                held.release()
                    .await
                    .unwrap_or_else(|e| panic!("{who}, round {round}: release: {e}"));
            }
        }));
    }
    for t in tasks {
        within("both multi-locks' rounds (a deadlock never ends)", t)
            .await
            .expect("task");
    }
    assert!(
        held_nodes(&sessions[0], &root).await.is_empty(),
        "nodes left after every release"
    );
    close_all(&sessions).await;
}

/// The same path twice (the same lock, two kinds, or both halves of one
/// read/write lock), or no lock at all, is refused with `InvalidArgument`
/// before any I/O.
pub async fn multi_lock_rejects_duplicates(h: &dyn Harness) {
    let root = h.root("multi_lock_rejects_duplicates");
    let s = h.open().await;
    let x = join(&root, "x");
    let rw = RwLock::new(&s, &x).expect("rw");
    let sets: Vec<(&str, Vec<Box<dyn Lockable>>)> = vec![
        (
            "the same lock twice",
            vec![
                Box::new(Lock::new(&s, &x).expect("lock")),
                Box::new(Lock::new(&s, &x).expect("lock")),
            ],
        ),
        (
            "two kinds at one path",
            vec![
                Box::new(Lock::new(&s, &join(&root, "y")).expect("lock")),
                Box::new(Lock::new(&s, &x).expect("lock")),
                Box::new(SemaphoreMutex::new(&s, &x).expect("mutex")),
            ],
        ),
        (
            "both halves of a read/write lock",
            vec![Box::new(rw.read_lock()), Box::new(rw.write_lock())],
        ),
        ("no lock", Vec::new()),
    ];
    for (what, locks) in sets {
        let r = MultiLock::new(locks);
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "{what}: {r:?}");
    }
    assert!(
        children_or_none(&s, &root).await.is_empty(),
        "a refused multi-lock made nodes"
    );
    let _ = s.close().await;
}

/// A held multi-lock's `lost()` resolves when one member's node is deleted
/// (its release then reports the loss and still frees the others), and
/// when its session expires.
pub async fn multi_lock_lost(h: &dyn Harness) {
    let root = h.root("multi_lock_lost");
    let [me, other] = <[Session; 2]>::try_from(open_n(h, 2).await).expect("two sessions");
    let multi = MultiLock::new(mixed(&me, &root)).expect("multi-lock");
    let held = multi.acquire().await.expect("acquire");
    other
        .delete(held.guards()[1].node_path(), None)
        .await
        .expect("an operator deletes one member's node");
    let why = within("lost() after a member's node was deleted", held.lost()).await;
    assert!(matches!(why, Error::LockLost { .. }), "lost() said {why:?}");
    let released = held.release().await;
    assert!(
        matches!(released, Err(Error::LockLost { .. })),
        "the release of a partly lost multi-lock said {released:?}"
    );
    let others = mixed(&other, &root);
    assert_free(
        others.iter().map(|l| l.as_ref()),
        "after releasing a partly lost multi-lock",
    )
    .await;

    let held = multi.acquire().await.expect("acquire again");
    h.expire(&me).await;
    let why = within("lost() after the session expired", held.lost()).await;
    assert!(
        matches!(why, Error::SessionExpired | Error::LockLost { .. }),
        "lost() said {why:?}"
    );
    // The server ends the session's nodes; each lock comes free.
    for l in &others {
        let g = within("a member after the session expired", l.acquire())
            .await
            .unwrap_or_else(|e| panic!("{} after the session expired: {e}", l.path()));
        g.release().await.expect("release");
    }
    drop(held);
    close_all(&[me, other]).await;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __multi_lock_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            multi_lock::multi_lock_all_or_nothing,
            multi_lock::multi_lock_overlapping_sets_never_deadlock,
            multi_lock::multi_lock_rejects_duplicates,
            multi_lock::multi_lock_lost,
        );
    };
}

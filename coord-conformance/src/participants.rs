//! Conformance of `participants()` of each lock-like recipe and of the
//! election: who holds and who waits, in queue order, with the data each
//! stored, its stamp, and since when (where the backend keeps creation
//! times). Every lock kind's holder-then-waiters listing is also checked
//! through [`Lockable`] in [`crate::locks::lock_participants`].

use std::time::{Duration, SystemTime};

use coord_core::path::join;
use coord_core::prelude::*;
use coord_core::recipes::{
    Contender, ContenderState, Election, Lock, LockGuard, RwLock, Semaphore, SemaphoreMutex,
    SimpleLock, Stats,
};
use coord_core::Result;
use tokio::task::JoinHandle;

use crate::lock_kinds::await_blocked;
use crate::{await_children, close_all, eventually, open_n, within, Harness};

use ContenderState::{Holding, Waiting};

/// How far a server's clock may be from the test's.
const SKEW: Duration = Duration::from_secs(120);

/// Whether `backend` records creation times: `Some(false)` on etcd, which
/// keeps none, `Some(true)` on the others the suite knows, `None` (either
/// way, sane if present) on a backend it does not.
fn records_times(backend: &str) -> Option<bool> {
    match backend {
        "etcd" => Some(false),
        "zk" | "redis" | "mem" => Some(true),
        _ => None,
    }
}

/// Assert the listing's states are `want` and its stamps increase, and
/// that each `created_at` is as the backend records it: present and
/// between `since` and now (give or take [`SKEW`]) where it records them,
/// absent on etcd.
fn check(what: &str, backend: &str, since: SystemTime, got: &[Contender], want: &[ContenderState]) {
    let states: Vec<ContenderState> = got.iter().map(|c| c.state).collect();
    assert_eq!(states, want, "{what}: states of {got:#?}");
    assert!(
        got.windows(2).all(|w| w[0].stamp < w[1].stamp),
        "{what}: stamps not in queue order: {got:#?}"
    );
    let now = SystemTime::now();
    for c in got {
        match (records_times(backend), c.created_at) {
            (Some(false), Some(t)) => panic!("{what}: {}: created_at {t:?} on {backend}", c.node),
            (Some(true), None) => panic!("{what}: {}: no created_at on {backend}", c.node),
            (_, Some(t)) => assert!(
                t + SKEW >= since && t <= now + SKEW,
                "{what}: {}: created_at {t:?} is not between {since:?} and {now:?}",
                c.node
            ),
            (_, None) => {}
        }
    }
}

/// Queue `lock`'s acquire in a task; wait until it is the `n`th blocked
/// waiter counted in `stats`.
async fn queue(
    what: &str,
    lock: Box<dyn Lockable>,
    stats: &Stats,
    n: u64,
) -> JoinHandle<Result<LockGuard>> {
    let t = tokio::spawn(async move { lock.acquire().await });
    await_blocked(stats, n, what).await;
    t
}

/// Await a queued acquire's grant and release it.
async fn grant_and_release(what: &str, t: JoinHandle<Result<LockGuard>>) {
    let g = within(what, t).await.expect("task").expect("acquire");
    g.release().await.expect("release");
}

/// A lock with a holder and two waiters, each with its own data: all three
/// in queue order, the holder first and holding, each with its node, data
/// and stamp (the holder's is its fencing token). Once the holder's session
/// expires it is no longer listed and the next is holding.
pub async fn participants_lock(h: &dyn Harness) {
    let dir = h.root("participants_lock");
    let sessions = open_n(h, 4).await;
    let backend = sessions[0].backend();
    let since = SystemTime::now();
    let with = |i: usize, data: &str| {
        Lock::new(&sessions[i], &dir)
            .expect("lock")
            .with_data(data.as_bytes())
            .expect("data")
    };
    let holder = with(0, "holder").acquire().await.expect("acquire");
    let stats = Stats::new();
    let first = queue(
        "first waiter",
        Box::new(with(1, "first").with_stats(stats.clone())),
        &stats,
        1,
    )
    .await;
    let second = queue(
        "second waiter",
        Box::new(with(2, "second").with_stats(stats.clone())),
        &stats,
        2,
    )
    .await;
    let viewer = Lock::new(&sessions[3], &dir).expect("lock");
    let got = viewer.participants().await.expect("participants");
    check("Lock", backend, since, &got, &[Holding, Waiting, Waiting]);
    let data: Vec<&[u8]> = got.iter().map(|c| c.data.as_slice()).collect();
    assert_eq!(
        data,
        [&b"holder"[..], b"first", b"second"],
        "data in queue order"
    );
    assert_eq!(got[0].node, holder.node_path(), "the holder's node");
    assert_eq!(got[0].stamp, holder.fencing_token(), "the holder's stamp");
    assert!(
        got.iter().all(|c| c.node.starts_with(&format!("{dir}/"))),
        "nodes outside the lock: {got:#?}"
    );

    h.expire(&sessions[0]).await;
    let listed = || async {
        viewer
            .participants()
            .await
            .expect("participants")
            .iter()
            .map(|c| (c.data.clone(), c.state))
            .collect::<Vec<_>>()
    };
    eventually(
        "the expired holder unlisted, the first waiter holding",
        || async {
            listed().await == [(b"first".to_vec(), Holding), (b"second".to_vec(), Waiting)]
        },
    )
    .await;
    let g = within("the first waiter's grant", first)
        .await
        .expect("task")
        .expect("acquire");
    assert_eq!(
        (g.node_path(), g.fencing_token()),
        (got[1].node.as_str(), got[1].stamp),
        "the grant is the node listed"
    );
    g.release().await.expect("release");
    grant_and_release("the second waiter's grant", second).await;
    drop(holder);
    close_all(&sessions).await;
}

/// A read/write lock with two readers holding, then a writer and a reader
/// waiting: both readers hold, the later reader waits behind the writer.
/// Both halves list the same.
pub async fn participants_rwlock(h: &dyn Harness) {
    let dir = h.root("participants_rwlock");
    let sessions = open_n(h, 4).await;
    let backend = sessions[0].backend();
    let since = SystemTime::now();
    let stats = Stats::new();
    let rw = |i: usize| {
        RwLock::new(&sessions[i], &dir)
            .expect("rw")
            .with_stats(stats.clone())
    };
    let r1 = rw(0).read().await.expect("read");
    let r2 = rw(1).read().await.expect("read");
    let writer = queue("the writer waits", Box::new(rw(2).write_lock()), &stats, 1).await;
    let reader = queue(
        "the later reader waits",
        Box::new(rw(3).read_lock()),
        &stats,
        2,
    )
    .await;
    let got = rw(0).participants().await.expect("participants");
    check(
        "RwLock",
        backend,
        since,
        &got,
        &[Holding, Holding, Waiting, Waiting],
    );
    assert_eq!(
        [got[0].node.as_str(), got[1].node.as_str()],
        [r1.node_path(), r2.node_path()],
        "the readers holding"
    );
    assert_eq!(
        got,
        rw(1).read_lock().participants().await.expect("read half")
    );
    assert_eq!(
        got,
        rw(2).write_lock().participants().await.expect("write half")
    );
    r1.release().await.expect("release");
    r2.release().await.expect("release");
    let w = within("the writer's grant", writer)
        .await
        .expect("task")
        .expect("write");
    assert_eq!(w.node_path(), got[2].node, "the writer listed third");
    w.release().await.expect("release");
    grant_and_release("the later reader's grant", reader).await;
    close_all(&sessions).await;
}

/// The semaphore mutex with a holder and two waiters lists each once: the
/// holder, then the two waiters in order. A semaphore of two leases with
/// three acquirers (each with its data) lists two holding and one waiting.
pub async fn participants_semaphore(h: &dyn Harness) {
    let root = h.root("participants_semaphore");
    let sessions = open_n(h, 3).await;
    let backend = sessions[0].backend();
    let since = SystemTime::now();

    let mdir = join(&root, "mutex");
    let stats = Stats::new();
    let mutex = |i: usize| {
        SemaphoreMutex::new(&sessions[i], &mdir)
            .expect("mutex")
            .with_stats(stats.clone())
    };
    let holder = mutex(0).acquire().await.expect("acquire");
    let first = queue("the mutex's first waiter", Box::new(mutex(1)), &stats, 1).await;
    let second = queue("the mutex's second waiter", Box::new(mutex(2)), &stats, 2).await;
    let got = mutex(0).participants().await.expect("participants");
    check(
        "SemaphoreMutex",
        backend,
        since,
        &got,
        &[Holding, Waiting, Waiting],
    );
    assert_eq!(got[0].node, holder.node_path(), "the holder's lease first");
    holder.release().await.expect("release");
    grant_and_release("the mutex's first waiter", first).await;
    grant_and_release("the mutex's second waiter", second).await;

    let sdir = join(&root, "sem");
    let stats = Stats::new();
    let sem = |i: usize| {
        Semaphore::new(&sessions[i], &sdir, 2)
            .expect("semaphore")
            .with_data(format!("s{i}").into_bytes())
            .expect("data")
            .with_stats(stats.clone())
    };
    let l0 = sem(0).acquire(1).await.expect("a lease");
    let l1 = sem(1).acquire(1).await.expect("a lease");
    let third = {
        let s = sem(2);
        tokio::spawn(async move { s.acquire(1).await })
    };
    await_blocked(&stats, 1, "the third acquirer waits").await;
    let got = sem(0).participants().await.expect("participants");
    check(
        "Semaphore",
        backend,
        since,
        &got,
        &[Holding, Holding, Waiting],
    );
    let data: Vec<&[u8]> = got.iter().map(|c| c.data.as_slice()).collect();
    assert_eq!(data, [&b"s0"[..], b"s1", b"s2"], "lease data in order");
    Semaphore::return_all(l0.into_iter().chain(l1))
        .await
        .expect("return");
    let l2 = within("the third acquirer's lease", third)
        .await
        .expect("task")
        .expect("acquire");
    Semaphore::return_all(l2).await.expect("return");
    close_all(&sessions).await;
}

/// The simple lock lists its holder only (its waiters make no node).
pub async fn participants_simple_lock(h: &dyn Harness) {
    let dir = h.root("participants_simple_lock");
    let sessions = open_n(h, 2).await;
    let backend = sessions[0].backend();
    let since = SystemTime::now();
    let stats = Stats::new();
    let holder = SimpleLock::new(&sessions[0], &dir)
        .expect("lock")
        .acquire()
        .await
        .expect("acquire");
    let waiter = queue(
        "the waiter blocked",
        Box::new(
            SimpleLock::new(&sessions[1], &dir)
                .expect("lock")
                .with_stats(stats.clone()),
        ),
        &stats,
        1,
    )
    .await;
    let got = SimpleLock::new(&sessions[1], &dir)
        .expect("lock")
        .participants()
        .await
        .expect("participants");
    check("SimpleLock", backend, since, &got, &[Holding]);
    assert_eq!(got[0].node, holder.node_path(), "the holder");
    assert_eq!(got[0].stamp, holder.fencing_token(), "the holder's stamp");
    holder.release().await.expect("release");
    grant_and_release("the waiter's grant", waiter).await;
    close_all(&sessions).await;
}

/// An election lists the leader first (holding, with the value it
/// offered), then the candidates in order; once the leader's session
/// expires it is no longer listed and the next candidate is holding.
pub async fn participants_election(h: &dyn Harness) {
    let dir = h.root("participants_election");
    let sessions = open_n(h, 3).await;
    let backend = sessions[0].backend();
    let since = SystemTime::now();
    let election = |i: usize| Election::new(&sessions[i], &dir).expect("election");
    let leader = election(0).campaign(b"a").await.expect("campaign");
    let mut candidates = Vec::new();
    for (i, value) in [(1, "b"), (2, "c")] {
        let e = election(i);
        candidates.push(tokio::spawn(
            async move { e.campaign(value.as_bytes()).await },
        ));
        await_children(&sessions[0], &dir, "the candidate's offer", |k| {
            k.len() == i + 1
        })
        .await;
    }
    let viewer: &dyn LeaderElection = &election(1);
    let got = viewer.participants().await.expect("participants");
    check(
        "Election",
        backend,
        since,
        &got,
        &[Holding, Waiting, Waiting],
    );
    let values: Vec<&[u8]> = got.iter().map(|c| c.data.as_slice()).collect();
    assert_eq!(values, [&b"a"[..], b"b", b"c"], "values in order");
    assert_eq!(got[0].node, leader.node_path(), "the leader first");
    assert_eq!(got[0].stamp, leader.fencing_token(), "the leader's stamp");

    h.expire(&sessions[0]).await;
    eventually("the expired leader unlisted, the next holding", || async {
        let now = viewer.participants().await.expect("participants");
        now.iter()
            .map(|c| (c.data.as_slice(), c.state))
            .collect::<Vec<_>>()
            == [(&b"b"[..], Holding), (b"c", Waiting)]
    })
    .await;
    for c in candidates {
        let l = within("a candidate leads", c)
            .await
            .expect("task")
            .expect("campaign");
        l.resign().await.expect("resign");
    }
    drop(leader);
    close_all(&sessions).await;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __participants_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            participants::participants_lock,
            participants::participants_rwlock,
            participants::participants_semaphore,
            participants::participants_simple_lock,
            participants::participants_election,
        );
    };
}

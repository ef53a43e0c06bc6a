//! Conformance of the lock recipes: [`Lock`], [`SimpleLock`], [`RwLock`],
//! [`Semaphore`] and [`SemaphoreMutex`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coord_core::path::join;
use coord_core::recipes::{Lock, LockGuard, RwLock, Semaphore, SemaphoreMutex, SimpleLock, Stats};
use coord_core::{CreateMode, Error, Op, PathErrorKind, Result, Session};
use tokio::sync::mpsc;

use crate::{await_children, children_or_none, close_all, eventually, open_n, Harness};

const LONG: Duration = Duration::from_secs(30);

/// Either kind of exclusive lock, so one test body measures both.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Flavor {
    /// [`Lock`]: a queue, each waiter watching its predecessor.
    Queue,
    /// [`SimpleLock`]: everyone watches one node.
    Herd,
}

enum AnyLock {
    Queue(Lock),
    Herd(SimpleLock),
}

impl AnyLock {
    fn new(flavor: Flavor, s: &Session, dir: &str, stats: &Stats) -> Self {
        match flavor {
            Flavor::Queue => {
                AnyLock::Queue(Lock::new(s, dir).expect("lock").with_stats(stats.clone()))
            }
            Flavor::Herd => AnyLock::Herd(
                SimpleLock::new(s, dir)
                    .expect("lock")
                    .with_stats(stats.clone()),
            ),
        }
    }

    async fn acquire(&self) -> Result<LockGuard> {
        match self {
            AnyLock::Queue(l) => l.acquire().await,
            AnyLock::Herd(l) => l.acquire().await,
        }
    }
}

/// What a run of [`handoff`] saw.
struct Handoff {
    /// Waiter indices in the order they were granted the lock.
    order: Vec<usize>,
    /// Fencing tokens of the holder, then of each waiter in grant order.
    tokens: Vec<u64>,
    /// Wake-ups caused by each release.
    wakeups: Vec<u64>,
}

/// One holder, then `n` waiters queued (one at a time, each blocked before
/// the next starts), then release after release with every wake-up counted.
async fn handoff(h: &dyn Harness, test: &str, n: usize, flavor: Flavor) -> Handoff {
    let dir = join(&h.root(test), "lock");
    let sessions = open_n(h, n + 1).await;
    let stats = Stats::new();
    let holder = AnyLock::new(flavor, &sessions[0], &dir, &stats)
        .acquire()
        .await
        .expect("the first acquire of a free lock");
    let (tx, mut rx) = mpsc::unbounded_channel::<(usize, LockGuard)>();
    let mut tasks = Vec::new();
    for (i, s) in sessions[1..].iter().enumerate() {
        let lock = AnyLock::new(flavor, s, &dir, &stats);
        let tx = tx.clone();
        tasks.push(tokio::spawn(async move {
            let g = lock.acquire().await.expect("a waiter's acquire");
            let _ = tx.send((i, g));
        }));
        eventually(&format!("waiter {i} blocked"), || {
            let st = stats.clone();
            async move { st.waiting() == (i + 1) as u64 }
        })
        .await;
    }
    let mut out = Handoff {
        order: Vec::new(),
        tokens: vec![holder.fencing_token()],
        wakeups: Vec::new(),
    };
    let mut current = holder;
    for step in 0..n {
        let before = stats.wakeups();
        current.release().await.expect("release by the holder");
        let (i, g) = tokio::time::timeout(LONG, rx.recv())
            .await
            .expect("a waiter got the lock after a release")
            .expect("waiters alive");
        let remaining = (n - step - 1) as u64;
        let expect_woken = match flavor {
            Flavor::Queue => 1,
            Flavor::Herd => remaining + 1,
        };
        eventually("the losers woken and blocked again", || {
            let st = stats.clone();
            async move { st.wakeups() - before >= expect_woken && st.waiting() == remaining }
        })
        .await;
        out.wakeups.push(stats.wakeups() - before);
        out.order.push(i);
        out.tokens.push(g.fencing_token());
        current = g;
    }
    current.release().await.expect("last release");
    for t in tasks {
        t.await.expect("waiter task");
    }
    close_all(&sessions).await;
    out
}

/// 16 sessions × many cycles never have two holders: an in-test counter,
/// and a compare-and-set write under the holder's fence that also checks
/// the token only grows.
pub async fn lock_mutual_exclusion(h: &dyn Harness) {
    const SESSIONS: usize = 16;
    const CYCLES: usize = 12;
    let root = h.root("lock_mutual_exclusion");
    let dir = join(&root, "lock");
    let resource = join(&root, "resource");
    let sessions = open_n(h, SESSIONS).await;
    sessions[0]
        .create(&resource, b"0", CreateMode::Persistent)
        .await
        .expect("create the resource");
    let inside = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for s in sessions.clone() {
        let (dir, resource, inside) = (dir.clone(), resource.clone(), inside.clone());
        tasks.push(tokio::spawn(async move {
            let lock = Lock::new(&s, &dir).expect("lock");
            for _ in 0..CYCLES {
                let g = lock.acquire().await.expect("acquire");
                assert_eq!(
                    inside.fetch_add(1, Ordering::SeqCst),
                    0,
                    "two holders at once"
                );
                let node = s
                    .get(&resource)
                    .await
                    .expect("read")
                    .expect("resource exists");
                let last: u64 = String::from_utf8_lossy(&node.data)
                    .parse()
                    .expect("a number");
                let token = g.fencing_token();
                assert!(
                    token > last,
                    "fencing token {token} not above the last writer's {last}"
                );
                g.write(Op::Set {
                    path: resource.clone(),
                    data: token.to_string().into_bytes(),
                    version: Some(node.stat.version),
                })
                .await
                .expect("the holder's guarded compare-and-set write");
                tokio::task::yield_now().await;
                inside.fetch_sub(1, Ordering::SeqCst);
                g.release().await.expect("release");
            }
        }));
    }
    for t in tasks {
        t.await.expect("contender task");
    }
    close_all(&sessions).await;
}

/// Waiters are granted the lock in the order they queued, and each later
/// holder's fencing token is larger.
pub async fn lock_grants_are_fifo(h: &dyn Harness) {
    let r = handoff(h, "lock_grants_are_fifo", 8, Flavor::Queue).await;
    assert_eq!(
        r.order,
        (0..8).collect::<Vec<_>>(),
        "grants out of queue order"
    );
    assert!(
        r.tokens.windows(2).all(|w| w[0] < w[1]),
        "fencing tokens not strictly increasing: {:?}",
        r.tokens
    );
}

/// With 16 waiters queued, each release wakes exactly one waiter.
pub async fn lock_one_release_wakes_one(h: &dyn Harness) {
    let r = handoff(h, "lock_one_release_wakes_one", 16, Flavor::Queue).await;
    assert_eq!(r.wakeups, vec![1; 16], "wake-ups per release");
}

/// The simple lock is correct but has the herd effect: a release wakes
/// every waiter, so wake-ups per release grow with the number of waiters.
pub async fn simple_lock_herd(h: &dyn Harness) {
    let r = handoff(h, "simple_lock_herd", 8, Flavor::Herd).await;
    assert_eq!(
        r.wakeups,
        (1..=8).rev().collect::<Vec<u64>>(),
        "wake-ups per release"
    );
    assert!(
        r.tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens: {:?}",
        r.tokens
    );
}

/// The simple lock never has two holders.
pub async fn simple_lock_mutual_exclusion(h: &dyn Harness) {
    let dir = h.root("simple_lock_mutual_exclusion");
    let sessions = open_n(h, 8).await;
    let inside = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for s in sessions.clone() {
        let (dir, inside) = (dir.clone(), inside.clone());
        tasks.push(tokio::spawn(async move {
            let lock = SimpleLock::new(&s, &dir).expect("lock");
            for _ in 0..8 {
                let g = lock.acquire().await.expect("acquire");
                assert_eq!(
                    inside.fetch_add(1, Ordering::SeqCst),
                    0,
                    "two holders at once"
                );
                tokio::task::yield_now().await;
                inside.fetch_sub(1, Ordering::SeqCst);
                g.release().await.expect("release");
            }
        }));
    }
    for t in tasks {
        t.await.expect("contender task");
    }
    close_all(&sessions).await;
}

/// `try_acquire` takes a free lock, returns `None` on a held one, and
/// leaves no node behind when it fails.
pub async fn lock_try_acquire(h: &dyn Harness) {
    let dir = h.root("lock_try_acquire");
    let [a, b] = <[Session; 2]>::try_from(open_n(h, 2).await).expect("two sessions");
    let la = Lock::new(&a, &dir).expect("lock");
    let lb = Lock::new(&b, &dir).expect("lock");
    let g = la
        .try_acquire()
        .await
        .expect("try")
        .expect("a free lock is taken");
    assert!(
        lb.try_acquire().await.expect("try").is_none(),
        "a held lock was taken"
    );
    assert_eq!(
        children_or_none(&a, &dir).await.len(),
        1,
        "a failed try left a node"
    );
    g.release().await.expect("release");
    let g = lb.try_acquire().await.expect("try").expect("free again");
    g.release().await.expect("release");
    close_all(&[a, b]).await;
}

/// A timed-out acquire returns `Timeout` with its node already deleted.
pub async fn lock_timeout_leaves_no_node(h: &dyn Harness) {
    let dir = h.root("lock_timeout_leaves_no_node");
    let [a, b] = <[Session; 2]>::try_from(open_n(h, 2).await).expect("two sessions");
    let g = Lock::new(&a, &dir)
        .expect("lock")
        .acquire()
        .await
        .expect("acquire");
    let lb = Lock::new(&b, &dir).expect("lock");
    match lb.acquire_timeout(Duration::from_millis(200)).await {
        Err(Error::Timeout(_)) => {}
        other => panic!("expected a timeout, got {other:?}"),
    }
    let kids = children_or_none(&a, &dir).await;
    assert_eq!(kids.len(), 1, "the timed-out waiter left a node: {kids:?}");
    g.release().await.expect("release");
    let g = lb
        .acquire_timeout(LONG)
        .await
        .expect("free lock within the timeout");
    g.release().await.expect("release");
    close_all(&[a, b]).await;
}

/// Dropping an acquire's future — while queued, or right after its first
/// poll with the create in flight — leaves no node: a later contender gets
/// the lock as soon as the holder releases.
pub async fn lock_cancel_leaves_no_node(h: &dyn Harness) {
    let dir = h.root("lock_cancel_leaves_no_node");
    let [a, b, c] = <[Session; 3]>::try_from(open_n(h, 3).await).expect("three sessions");
    let g = Lock::new(&a, &dir)
        .expect("lock")
        .acquire()
        .await
        .expect("acquire");
    let lb = Lock::new(&b, &dir).expect("lock");
    // Cancel while queued behind the holder.
    tokio::select! {
        r = lb.acquire() => panic!("acquired a held lock: {r:?}"),
        _ = await_children(&a, &dir, "the waiter queued", |k| k.len() == 2) => {}
    }
    await_children(&a, &dir, "the cancelled waiter's node deleted", |k| {
        k.len() == 1
    })
    .await;
    // Cancel right after the first poll, and at every early point.
    for _ in 0..5 {
        let _ = tokio::time::timeout(Duration::ZERO, lb.acquire()).await;
        tokio::task::yield_now().await;
    }
    g.release().await.expect("release");
    let lc = Lock::new(&c, &dir).expect("lock");
    let gc = lc
        .acquire_timeout(LONG)
        .await
        .expect("no cancelled attempt holds or blocks the lock");
    await_children(&a, &dir, "only the holder's node", |k| k.len() == 1).await;
    gc.release().await.expect("release");
    close_all(&[a, b, c]).await;
}

/// Dropping a guard without `release` releases the lock in the background.
pub async fn lock_drop_releases(h: &dyn Harness) {
    let dir = h.root("lock_drop_releases");
    let [a, b] = <[Session; 2]>::try_from(open_n(h, 2).await).expect("two sessions");
    let g = Lock::new(&a, &dir)
        .expect("lock")
        .acquire()
        .await
        .expect("acquire");
    drop(g);
    let g = Lock::new(&b, &dir)
        .expect("lock")
        .acquire_timeout(LONG)
        .await
        .expect("the dropped guard released the lock");
    g.release().await.expect("release");
    close_all(&[a, b]).await;
}

/// When the holder's session expires, the next waiter gets the lock with
/// a larger token, and the old holder's `lost()` fires.
pub async fn lock_expired_holder_hands_over(h: &dyn Harness) {
    let dir = h.root("lock_expired_holder_hands_over");
    let [a, b] = <[Session; 2]>::try_from(open_n(h, 2).await).expect("two sessions");
    let ga = Lock::new(&a, &dir)
        .expect("lock")
        .acquire()
        .await
        .expect("acquire");
    let lb = Lock::new(&b, &dir).expect("lock");
    let waiter = tokio::spawn(async move { lb.acquire().await });
    await_children(&b, &dir, "the waiter queued", |k| k.len() == 2).await;
    h.expire(&a).await;
    let gb = tokio::time::timeout(LONG, waiter)
        .await
        .expect("the waiter got the lock after the holder's session expired")
        .expect("task")
        .expect("acquire");
    assert!(
        gb.fencing_token() > ga.fencing_token(),
        "token did not grow"
    );
    let why = tokio::time::timeout(LONG, ga.lost())
        .await
        .expect("lost() fired");
    assert!(
        matches!(why, Error::SessionExpired | Error::LockLost { .. }),
        "lost() said {why:?}"
    );
    gb.release().await.expect("release");
    close_all(&[a, b]).await;
}

/// A holder whose node is deleted under it sees `lost()` fire with
/// `LockLost`, its guarded writes refused, and its release report it.
pub async fn lock_lost_when_node_deleted(h: &dyn Harness) {
    let root = h.root("lock_lost_when_node_deleted");
    let dir = join(&root, "lock");
    let resource = join(&root, "resource");
    let [a, b] = <[Session; 2]>::try_from(open_n(h, 2).await).expect("two sessions");
    b.create(&resource, b"", CreateMode::Persistent)
        .await
        .expect("resource");
    let ga = Lock::new(&a, &dir)
        .expect("lock")
        .acquire()
        .await
        .expect("acquire");
    ga.write(Op::Set {
        path: resource.clone(),
        data: b"a".to_vec(),
        version: None,
    })
    .await
    .expect("the holder writes");
    b.delete(ga.node_path(), None)
        .await
        .expect("an operator deletes the node");
    let why = tokio::time::timeout(LONG, ga.lost())
        .await
        .expect("lost() fired");
    assert!(matches!(why, Error::LockLost { .. }), "lost() said {why:?}");
    // Another holder now; the stale one's fenced write must be refused.
    let gb = Lock::new(&b, &dir)
        .expect("lock")
        .acquire_timeout(LONG)
        .await
        .expect("acquire");
    let stale = ga
        .write(Op::Set {
            path: resource.clone(),
            data: b"stale".to_vec(),
            version: None,
        })
        .await;
    assert!(
        matches!(stale, Err(Error::LockLost { .. })),
        "stale write: {stale:?}"
    );
    let data = b.get(&resource).await.expect("read").expect("exists").data;
    assert_eq!(data, b"a", "the stale holder's write landed");
    assert!(matches!(ga.release().await, Err(Error::LockLost { .. })));
    gb.release().await.expect("release");
    close_all(&[a, b]).await;
}

/// Bad paths are refused before any I/O.
pub async fn lock_rejects_bad_paths(h: &dyn Harness) {
    let s = h.open().await;
    for (p, kind) in [
        ("relative", PathErrorKind::NotAbsolute),
        ("/", PathErrorKind::Root),
        ("/a//b", PathErrorKind::EmptySegment),
    ] {
        for r in [
            Lock::new(&s, p).map(|_| ()),
            SimpleLock::new(&s, p).map(|_| ()),
            RwLock::new(&s, p).map(|_| ()),
            Semaphore::new(&s, p, 2).map(|_| ()),
            SemaphoreMutex::new(&s, p).map(|_| ()),
        ] {
            assert!(
                matches!(&r, Err(Error::InvalidPath { kind: k, .. }) if *k == kind),
                "{p}: {r:?}"
            );
        }
    }
    let big = vec![0u8; coord_core::path::MAX_DATA_LEN + 1];
    assert!(matches!(
        Lock::new(&s, "/x").expect("lock").with_data(big),
        Err(Error::InvalidArgument(_))
    ));
    let _ = s.close().await;
}

/// Readers share the lock; a writer excludes readers and writers.
pub async fn rwlock_readers_share_writer_excludes(h: &dyn Harness) {
    let dir = h.root("rwlock_readers_share_writer_excludes");
    let sessions = open_n(h, 4).await;
    let rw: Vec<RwLock> = sessions
        .iter()
        .map(|s| RwLock::new(s, &dir).expect("rw"))
        .collect();
    let r0 = rw[0]
        .try_read()
        .await
        .expect("try")
        .expect("read on a free lock");
    let r1 = rw[1].try_read().await.expect("try").expect("readers share");
    let r2 = rw[2].read_timeout(LONG).await.expect("readers share");
    assert!(
        rw[3].try_write().await.expect("try").is_none(),
        "writer beside readers"
    );
    for r in [r0, r1, r2] {
        r.release().await.expect("release");
    }
    let w = rw[3]
        .try_write()
        .await
        .expect("try")
        .expect("write on a free lock");
    assert!(
        rw[0].try_read().await.expect("try").is_none(),
        "reader beside a writer"
    );
    assert!(
        rw[1].try_write().await.expect("try").is_none(),
        "two writers"
    );
    assert_eq!(
        children_or_none(&sessions[0], &dir).await.len(),
        1,
        "failed tries left nodes"
    );
    w.release().await.expect("release");
    close_all(&sessions).await;
}

/// A writer queued behind a reader is not overtaken by a later reader: the
/// later reader waits for the writer, and gets in once the writer leaves.
pub async fn rwlock_writer_not_starved(h: &dyn Harness) {
    let dir = h.root("rwlock_writer_not_starved");
    let sessions = open_n(h, 3).await;
    let rw: Vec<RwLock> = sessions
        .iter()
        .map(|s| RwLock::new(s, &dir).expect("rw"))
        .collect();
    let r1 = rw[0].read().await.expect("read");
    let wl = rw[1].clone();
    let writer = tokio::spawn(async move { wl.write().await });
    await_children(&sessions[0], &dir, "the writer queued", |k| k.len() == 2).await;
    assert!(
        rw[2].try_read().await.expect("try").is_none(),
        "a later reader overtook a queued writer"
    );
    let rl = rw[2].clone();
    let reader = tokio::spawn(async move { rl.read().await });
    await_children(&sessions[0], &dir, "the reader queued", |k| k.len() == 3).await;
    r1.release().await.expect("release");
    let w = tokio::time::timeout(LONG, writer)
        .await
        .expect("writer in")
        .expect("task")
        .expect("write");
    assert!(!reader.is_finished(), "the reader got in beside the writer");
    w.release().await.expect("release");
    let r2 = tokio::time::timeout(LONG, reader)
        .await
        .expect("reader in")
        .expect("task")
        .expect("read");
    r2.release().await.expect("release");
    close_all(&sessions).await;
}

/// Under churn, a writer is always alone and readers never overlap one.
pub async fn rwlock_mutual_exclusion(h: &dyn Harness) {
    let dir = h.root("rwlock_mutual_exclusion");
    let sessions = open_n(h, 8).await;
    let readers = Arc::new(AtomicUsize::new(0));
    let writers = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for (i, s) in sessions.clone().into_iter().enumerate() {
        let (dir, readers, writers) = (dir.clone(), readers.clone(), writers.clone());
        tasks.push(tokio::spawn(async move {
            let rw = RwLock::new(&s, &dir).expect("rw");
            for round in 0..8 {
                if (i + round) % 4 == 0 {
                    let g = rw.write().await.expect("write");
                    assert_eq!(writers.fetch_add(1, Ordering::SeqCst), 0, "two writers");
                    assert_eq!(readers.load(Ordering::SeqCst), 0, "reader beside a writer");
                    tokio::task::yield_now().await;
                    writers.fetch_sub(1, Ordering::SeqCst);
                    g.release().await.expect("release");
                } else {
                    let g = rw.read().await.expect("read");
                    readers.fetch_add(1, Ordering::SeqCst);
                    assert_eq!(writers.load(Ordering::SeqCst), 0, "writer beside a reader");
                    tokio::task::yield_now().await;
                    readers.fetch_sub(1, Ordering::SeqCst);
                    g.release().await.expect("release");
                }
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    close_all(&sessions).await;
}

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

#[doc(hidden)]
#[macro_export]
macro_rules! __lock_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            locks::lock_mutual_exclusion,
            locks::lock_grants_are_fifo,
            locks::lock_one_release_wakes_one,
            locks::simple_lock_herd,
            locks::simple_lock_mutual_exclusion,
            locks::lock_try_acquire,
            locks::lock_timeout_leaves_no_node,
            locks::lock_cancel_leaves_no_node,
            locks::lock_drop_releases,
            locks::lock_expired_holder_hands_over,
            locks::lock_lost_when_node_deleted,
            locks::lock_rejects_bad_paths,
            locks::rwlock_readers_share_writer_excludes,
            locks::rwlock_writer_not_starved,
            locks::rwlock_mutual_exclusion,
            locks::semaphore_never_more_than_n,
            locks::semaphore_all_or_nothing,
            locks::semaphore_dead_holder_leases_return,
            locks::semaphore_lease_data_and_mutex,
        );
    };
}

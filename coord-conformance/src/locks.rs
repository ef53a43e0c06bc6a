//! Conformance of every lock, through [`Lockable`]: each test runs over
//! every kind of [`lock_kinds`] that the property applies to, all kinds at
//! once, each under its own directory, and names the kind in every
//! assertion. Tests of one recipe only are in
//! [`crate::rwlock`], [`crate::semaphore`], and here for the simple lock's
//! herd effect.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coord_core::path::join;
use coord_core::prelude::*;
use coord_core::recipes::{Lock, LockGuard, Semaphore, Stats};
use coord_core::{CreateMode, Error, Op, PathErrorKind, Session};
use tokio::sync::mpsc;

use crate::lock_kinds::{
    await_blocked, await_held_nodes, for_each_kind, held_nodes, lock_kinds, LockKind,
};
use crate::{close_all, eventually, open_n, within, Harness, WAIT};

/// How long an acquire that must time out is given.
const SHORT: Duration = Duration::from_millis(200);

/// Two sessions, as an array.
async fn two(h: &dyn Harness) -> [Session; 2] {
    <[Session; 2]>::try_from(open_n(h, 2).await).expect("two sessions")
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
/// the next starts), then release after release. After each release it
/// waits until `woken(remaining)` wake-ups have happened and the remaining
/// waiters are blocked again, then counts the wake-ups.
async fn handoff(
    h: &dyn Harness,
    kind: &LockKind,
    dir: &str,
    n: usize,
    woken: impl Fn(u64) -> u64,
) -> Handoff {
    let name = kind.name;
    let sessions = open_n(h, n + 1).await;
    let stats = Stats::new();
    let holder = kind
        .lock(&sessions[0], dir, &stats)
        .acquire()
        .await
        .unwrap_or_else(|e| panic!("{name}: the first acquire of a free lock: {e}"));
    // Where waiters queue on a gate, hold it while they arrive: a waiter's
    // first attempt may wake a waiter queued earlier (see
    // `LockKind::queue_gate`), and that wake-up may come late enough to
    // land in the first release's count.
    let gate = match kind.queue_gate {
        Some(g) => Some(
            Lock::new(&sessions[0], &join(dir, g))
                .expect("the queue gate")
                .acquire()
                .await
                .unwrap_or_else(|e| panic!("{name}: the queue gate: {e}")),
        ),
        None => None,
    };
    let (tx, mut rx) = mpsc::unbounded_channel::<(usize, LockGuard)>();
    let mut tasks = Vec::new();
    for (i, s) in sessions[1..].iter().enumerate() {
        let lock = kind.lock(s, dir, &stats);
        let tx = tx.clone();
        tasks.push(tokio::spawn(async move {
            let g = lock
                .acquire()
                .await
                .unwrap_or_else(|e| panic!("{name}: waiter {i}'s acquire: {e}"));
            let _ = tx.send((i, g));
        }));
        await_blocked(
            &stats,
            (i + 1) as u64,
            &format!("{name}: waiter {i} blocked"),
        )
        .await;
    }
    if let Some(gate) = gate {
        // Every first attempt is over: each waiter is queued on the gate.
        // Let go; the first waiter takes the gate (one wake-up) and waits
        // for the hold, and nothing else is left to wake anyone.
        let before = stats.wakeups();
        gate.release()
            .await
            .unwrap_or_else(|e| panic!("{name}: release the queue gate: {e}"));
        eventually(
            &format!("{name}: the first waiter past the gate, waiting for the hold"),
            || {
                let st = stats.clone();
                async move { st.wakeups() > before && st.waiting() == n as u64 }
            },
        )
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
        current
            .release()
            .await
            .unwrap_or_else(|e| panic!("{name}: release by the holder: {e}"));
        let (i, g) = within(&format!("{name}: a waiter's grant"), rx.recv())
            .await
            .unwrap_or_else(|| panic!("{name}: every waiter task ended"));
        let remaining = (n - step - 1) as u64;
        let want = woken(remaining);
        eventually(
            &format!("{name}: the others woken and blocked again"),
            || {
                let st = stats.clone();
                async move { st.wakeups() - before >= want && st.waiting() == remaining }
            },
        )
        .await;
        out.wakeups.push(stats.wakeups() - before);
        out.order.push(i);
        out.tokens.push(g.fencing_token());
        current = g;
    }
    current
        .release()
        .await
        .unwrap_or_else(|e| panic!("{name}: the last release: {e}"));
    for t in tasks {
        t.await.expect("waiter task");
    }
    close_all(&sessions).await;
    out
}

/// Many contenders × several cycles never hold an exclusive hold beside
/// any other (an in-test counter), and each holder's fencing token is above
/// the last one written to a resource, which exclusive holders write with
/// a compare-and-set under their fence. Shared kinds (the read half) run
/// against their exclusive rival: readers may overlap each other, never a
/// writer.
pub async fn lock_mutual_exclusion(h: &dyn Harness) {
    const SESSIONS: usize = 4;
    const CYCLES: usize = 5;
    for_each_kind(
        h,
        "lock_mutual_exclusion",
        |_| true,
        |kind, root| async move {
            let name = kind.name;
            let dir = join(&root, "lock");
            let resource = join(&root, "resource");
            let sessions = open_n(h, SESSIONS).await;
            sessions[0]
                .create(&resource, b"0", CreateMode::Persistent)
                .await
                .expect("create the resource");
            let exclusive_in = Arc::new(AtomicUsize::new(0));
            let shared_in = Arc::new(AtomicUsize::new(0));
            let mut tasks = Vec::new();
            for (i, s) in sessions.iter().enumerate() {
                let stats = Stats::new();
                // Every other contender is a rival: for an exclusive kind, the
                // kind itself again.
                let (lock, exclusive) = if i % 2 == 0 {
                    (kind.lock(s, &dir, &stats), kind.exclusive)
                } else {
                    (kind.rival_lock(s, &dir, &stats), true)
                };
                let (s, resource) = (s.clone(), resource.clone());
                let (exclusive_in, shared_in) = (exclusive_in.clone(), shared_in.clone());
                tasks.push(tokio::spawn(async move {
                    for _ in 0..CYCLES {
                        let g = lock
                            .acquire()
                            .await
                            .unwrap_or_else(|e| panic!("{name}: acquire: {e}"));
                        if exclusive {
                            assert_eq!(
                                exclusive_in.fetch_add(1, Ordering::SeqCst),
                                0,
                                "{name}: two exclusive holders at once"
                            );
                            assert_eq!(
                                shared_in.load(Ordering::SeqCst),
                                0,
                                "{name}: an exclusive holder beside a shared one"
                            );
                        } else {
                            shared_in.fetch_add(1, Ordering::SeqCst);
                            assert_eq!(
                                exclusive_in.load(Ordering::SeqCst),
                                0,
                                "{name}: a shared holder beside an exclusive one"
                            );
                        }
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
                            "{name}: fencing token {token} not above the last writer's {last}"
                        );
                        if exclusive {
                            g.write(Op::Set {
                                path: resource.clone(),
                                data: token.to_string().into_bytes(),
                                version: Some(node.stat.version),
                            })
                            .await
                            .unwrap_or_else(|e| {
                                panic!("{name}: the holder's guarded compare-and-set write: {e}")
                            });
                        }
                        tokio::task::yield_now().await;
                        if exclusive {
                            exclusive_in.fetch_sub(1, Ordering::SeqCst);
                        } else {
                            shared_in.fetch_sub(1, Ordering::SeqCst);
                        }
                        g.release()
                            .await
                            .unwrap_or_else(|e| panic!("{name}: release: {e}"));
                    }
                }));
            }
            for t in tasks {
                t.await.expect("contender task");
            }
            close_all(&sessions).await;
        },
    )
    .await;
}

/// The wake-ups a release causes in a herd-free kind that declares `n`
/// per release, with `remaining` waiters left after the grant: `n`, or
/// every waiter there was when fewer.
fn herd_free_wakeups(n: u64, remaining: u64) -> u64 {
    n.min(remaining + 1)
}

/// One holder and four waiters queued one after the other, then released
/// one by one: every exclusive kind hands the lock to one waiter at a time
/// with a larger fencing token each time; a FIFO kind in queue order; a
/// herd-free kind with the same number of wake-ups per release, however
/// many wait.
pub async fn lock_handoff(h: &dyn Harness) {
    const WAITERS: usize = 4;
    for_each_kind(
        h,
        "lock_handoff",
        |k| k.exclusive,
        |kind, dir| async move {
            let name = kind.name;
            let r = handoff(h, &kind, &dir, WAITERS, |remaining| {
                kind.wakeups_per_release
                    .map_or(0, |n| herd_free_wakeups(n, remaining))
            })
            .await;
            assert!(
                r.tokens.windows(2).all(|w| w[0] < w[1]),
                "{name}: fencing tokens not strictly increasing: {:?}",
                r.tokens
            );
            if kind.fifo {
                assert_eq!(
                    r.order,
                    (0..WAITERS).collect::<Vec<_>>(),
                    "{name}: grants out of queue order"
                );
            }
            if let Some(n) = kind.wakeups_per_release {
                let want: Vec<u64> = (0..WAITERS as u64)
                    .rev()
                    .map(|remaining| herd_free_wakeups(n, remaining))
                    .collect();
                assert_eq!(
                    r.wakeups, want,
                    "{name}: wake-ups per release, with {WAITERS} down to 1 waiting"
                );
            }
        },
    )
    .await;
}

/// The simple lock is correct but has the herd effect: a release wakes
/// every waiter, so wake-ups per release grow with the number of waiters.
pub async fn simple_lock_herd(h: &dyn Harness) {
    let kind = lock_kinds()
        .into_iter()
        .find(|k| k.name == "SimpleLock")
        .expect("the simple lock is in the list");
    let dir = h.root("simple_lock_herd");
    let r = handoff(h, &kind, &dir, 8, |remaining| remaining + 1).await;
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

/// `try_acquire` takes a free lock and returns `None` on a lock a rival
/// holds (both ways round), leaving no node behind. The holding handle's
/// own second try: `None` for a non-reentrant exclusive kind, the same
/// hold for a reentrant one, a hold of its own for a shared one.
pub async fn lock_try_acquire(h: &dyn Harness) {
    for_each_kind(
        h,
        "lock_try_acquire",
        |_| true,
        |kind, dir| async move {
            let name = kind.name;
            let [a, b] = two(h).await;
            let stats = Stats::new();
            let mine = kind.lock(&a, &dir, &stats);
            let rival = kind.rival_lock(&b, &dir, &stats);
            let g = mine
                .try_acquire()
                .await
                .unwrap_or_else(|e| panic!("{name}: try: {e}"))
                .unwrap_or_else(|| panic!("{name}: a free lock was not taken"));
            assert!(
                rival.try_acquire().await.expect("try").is_none(),
                "{name}: a rival took a held lock"
            );
            assert_eq!(
                held_nodes(&a, &dir).await,
                vec![g.node_path().to_owned()],
                "{name}: a failed try left a node"
            );
            match mine.try_acquire().await.expect("try") {
                Some(again) if kind.reentrant => {
                    assert_eq!(
                        (again.fencing_token(), again.node_path()),
                        (g.fencing_token(), g.node_path()),
                        "{name}: re-entered, but not the same hold"
                    );
                    again.release().await.expect("release the inner hold");
                }
                Some(again) if !kind.exclusive => {
                    assert_ne!(
                        again.node_path(),
                        g.node_path(),
                        "{name}: a second shared hold shares the first one's node"
                    );
                    again.release().await.expect("release the second hold");
                }
                None if kind.exclusive && !kind.reentrant => {}
                other => panic!("{name}: a second try by the holding handle got {other:?}"),
            }
            assert_eq!(
                held_nodes(&a, &dir).await,
                vec![g.node_path().to_owned()],
                "{name}: only the first hold is left"
            );
            g.release().await.expect("release");
            let g = rival
                .try_acquire()
                .await
                .expect("try")
                .unwrap_or_else(|| panic!("{name}: the released lock was not free"));
            assert!(
                mine.try_acquire().await.expect("try").is_none(),
                "{name}: taken beside a rival's hold"
            );
            assert_eq!(
                held_nodes(&a, &dir).await,
                vec![g.node_path().to_owned()],
                "{name}: a failed try left a node"
            );
            g.release().await.expect("release");
            close_all(&[a, b]).await;
        },
    )
    .await;
}

/// A timed-out acquire returns `Timeout` with its node already deleted,
/// and a timeout over the maximum is refused before any I/O.
pub async fn lock_timeout_leaves_no_node(h: &dyn Harness) {
    for_each_kind(
        h,
        "lock_timeout_leaves_no_node",
        |_| true,
        |kind, dir| async move {
            let name = kind.name;
            let [a, b] = two(h).await;
            let stats = Stats::new();
            let g = kind
                .rival_lock(&a, &dir, &stats)
                .acquire()
                .await
                .expect("acquire");
            let lock = kind.lock(&b, &dir, &stats);
            match lock.acquire_timeout(SHORT).await {
                Err(Error::Timeout(_)) => {}
                other => panic!("{name}: expected a timeout, got {other:?}"),
            }
            assert_eq!(
                held_nodes(&a, &dir).await,
                vec![g.node_path().to_owned()],
                "{name}: the timed-out acquire left a node"
            );
            let too_long = coord_core::limits::MAX_TIMEOUT + Duration::from_secs(1);
            assert!(
                matches!(
                    lock.acquire_timeout(too_long).await,
                    Err(Error::InvalidArgument(_))
                ),
                "{name}: a timeout over the maximum was accepted"
            );
            g.release().await.expect("release");
            let g = lock
                .acquire_timeout(WAIT)
                .await
                .unwrap_or_else(|e| panic!("{name}: the timed-out attempt blocks the lock: {e}"));
            g.release().await.expect("release");
            close_all(&[a, b]).await;
        },
    )
    .await;
}

/// An acquire dropped while it waits, or at any early point, leaves no
/// node and blocks nobody.
pub async fn lock_cancel_leaves_no_node(h: &dyn Harness) {
    for_each_kind(
        h,
        "lock_cancel_leaves_no_node",
        |_| true,
        |kind, dir| async move {
            let name = kind.name;
            let [a, b, c] = <[Session; 3]>::try_from(open_n(h, 3).await).expect("three sessions");
            let g = kind
                .rival_lock(&a, &dir, &Stats::new())
                .acquire()
                .await
                .expect("acquire");
            let stats = Stats::new();
            let lock = kind.lock(&b, &dir, &stats);
            // Cancel while blocked behind the holder.
            let blocked = format!("{name}: the waiter blocked");
            tokio::select! {
                r = lock.acquire() => panic!("{name}: acquired a held lock: {r:?}"),
                () = await_blocked(&stats, 1, &blocked) => {}
            }
            let holder_only = [g.node_path()];
            await_held_nodes(
                &a,
                &dir,
                &format!("{name}: the cancelled waiter's nodes deleted"),
                &holder_only,
            )
            .await;
            // Cancel right after the first poll, and at every early point.
            for _ in 0..5 {
                let _ = tokio::time::timeout(Duration::ZERO, lock.acquire()).await;
                tokio::task::yield_now().await;
            }
            await_held_nodes(
                &a,
                &dir,
                &format!("{name}: the cancelled attempts' nodes deleted"),
                &holder_only,
            )
            .await;
            g.release().await.expect("release");
            let g = kind
                .rival_lock(&c, &dir, &Stats::new())
                .acquire_timeout(WAIT)
                .await
                .unwrap_or_else(|e| {
                    panic!("{name}: a cancelled attempt holds or blocks the lock: {e}")
                });
            // Awaited, not read once: an attempt cancelled before its
            // create was sent finishes the create in the background and
            // then deletes what it made (the pending node's promise), so
            // its node may land after the checks above and go soon after.
            await_held_nodes(
                &a,
                &dir,
                &format!("{name}: only the holder's node"),
                &[g.node_path()],
            )
            .await;
            g.release().await.expect("release");
            close_all(&[a, b, c]).await;
        },
    )
    .await;
}

/// Dropping a guard releases the lock (in the background): a rival gets
/// it.
pub async fn lock_drop_releases(h: &dyn Harness) {
    for_each_kind(
        h,
        "lock_drop_releases",
        |_| true,
        |kind, dir| async move {
            let name = kind.name;
            let [a, b] = two(h).await;
            let g = kind
                .lock(&a, &dir, &Stats::new())
                .acquire()
                .await
                .expect("acquire");
            let rival = kind.rival_lock(&b, &dir, &Stats::new());
            assert!(
                rival.try_acquire().await.expect("try").is_none(),
                "{name}: a rival took a held lock"
            );
            drop(g);
            let g = rival
                .acquire_timeout(WAIT)
                .await
                .unwrap_or_else(|e| panic!("{name}: the dropped guard did not release: {e}"));
            g.release().await.expect("release");
            close_all(&[a, b]).await;
        },
    )
    .await;
}

/// When the holder's session expires, the rival waiting for it gets the
/// lock with a larger token, and the old holder's `lost()` fires.
pub async fn lock_expired_holder_hands_over(h: &dyn Harness) {
    for_each_kind(
        h,
        "lock_expired_holder_hands_over",
        |_| true,
        |kind, dir| async move {
            let name = kind.name;
            let [a, b] = two(h).await;
            let ga = kind
                .lock(&a, &dir, &Stats::new())
                .acquire()
                .await
                .expect("acquire");
            let stats = Stats::new();
            let rival = kind.rival_lock(&b, &dir, &stats);
            let waiter = tokio::spawn(async move { rival.acquire().await });
            await_blocked(&stats, 1, &format!("{name}: the rival waits")).await;
            h.expire(&a).await;
            let gb = within(
                &format!("{name}: the grant after the holder expired"),
                waiter,
            )
            .await
            .expect("task")
            .unwrap_or_else(|e| panic!("{name}: the waiter's acquire: {e}"));
            assert!(
                gb.fencing_token() > ga.fencing_token(),
                "{name}: the token did not grow"
            );
            let why = within(&format!("{name}: the expired holder's lost()"), ga.lost()).await;
            assert!(
                matches!(why, Error::SessionExpired | Error::LockLost { .. }),
                "{name}: lost() said {why:?}"
            );
            gb.release().await.expect("release");
            close_all(&[a, b]).await;
        },
    )
    .await;
}

/// A holder whose node is deleted under it sees `lost()` fire with
/// `LockLost`, its guarded writes refused once a rival holds the lock, and
/// its release report the loss.
pub async fn lock_lost_when_node_deleted(h: &dyn Harness) {
    for_each_kind(
        h,
        "lock_lost_when_node_deleted",
        |_| true,
        |kind, root| async move {
            let name = kind.name;
            let dir = join(&root, "lock");
            let resource = join(&root, "resource");
            let [a, b] = two(h).await;
            b.create(&resource, b"", CreateMode::Persistent)
                .await
                .expect("resource");
            let ga = kind
                .lock(&a, &dir, &Stats::new())
                .acquire()
                .await
                .expect("acquire");
            ga.write(Op::Set {
                path: resource.clone(),
                data: b"a".to_vec(),
                version: None,
            })
            .await
            .unwrap_or_else(|e| panic!("{name}: the holder's guarded write: {e}"));
            b.delete(ga.node_path(), None)
                .await
                .expect("an operator deletes the node");
            let why = within(&format!("{name}: lost()"), ga.lost()).await;
            assert!(
                matches!(why, Error::LockLost { .. }),
                "{name}: lost() said {why:?}"
            );
            let gb = kind
                .rival_lock(&b, &dir, &Stats::new())
                .acquire_timeout(WAIT)
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
                "{name}: stale write: {stale:?}"
            );
            let data = b.get(&resource).await.expect("read").expect("exists").data;
            assert_eq!(data, b"a", "{name}: the stale holder's write landed");
            let released = ga.release().await;
            let still = b.get(gb.node_path()).await.expect("read");
            assert_eq!(
                still.map(|n| n.stat.stamp),
                Some(gb.fencing_token()),
                "{name}: the stale holder's release deleted the new holder's node \
             (it said {released:?})"
            );
            assert!(
                matches!(released, Err(Error::LockLost { .. })),
                "{name}: the release of a lost hold said {released:?}"
            );
            gb.release().await.expect("release");
            close_all(&[a, b]).await;
        },
    )
    .await;
}

/// Bad paths are refused, typed, before any I/O, by every kind (and by
/// the semaphore); so is oversized contender data.
pub async fn lock_rejects_bad_paths(h: &dyn Harness) {
    let s = h.open().await;
    let bad = [
        ("relative", PathErrorKind::NotAbsolute),
        ("/", PathErrorKind::Root),
        ("/a//b", PathErrorKind::EmptySegment),
        ("/a/", PathErrorKind::TrailingSlash),
    ];
    for kind in lock_kinds() {
        for (p, want) in bad {
            for (which, make) in [("itself", kind.make), ("its rival", kind.rival)] {
                let r = make(&s, p, &Stats::new());
                assert!(
                    matches!(&r, Err(Error::InvalidPath { kind: k, .. }) if *k == want),
                    "{}: {which} at {p:?}: {r:?}",
                    kind.name
                );
            }
        }
    }
    for (p, want) in bad {
        let r = Semaphore::new(&s, p, 2);
        assert!(
            matches!(&r, Err(Error::InvalidPath { kind: k, .. }) if *k == want),
            "Semaphore at {p:?}: {r:?}"
        );
    }
    let big = vec![0u8; coord_core::path::MAX_DATA_LEN + 1];
    assert!(matches!(
        Lock::new(&s, "/x").expect("lock").with_data(big.clone()),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        Semaphore::new(&s, "/x", 1)
            .expect("semaphore")
            .with_data(big),
        Err(Error::InvalidArgument(_))
    ));
    let _ = s.close().await;
}

/// Successive holds, alternating the kind and its rival through two
/// sessions, get strictly increasing fencing tokens; every guard is a
/// [`Hold`] that reports the same token, node and session.
pub async fn lock_fencing_tokens_increase(h: &dyn Harness) {
    for_each_kind(
        h,
        "lock_fencing_tokens_increase",
        |_| true,
        |kind, dir| async move {
            let name = kind.name;
            let [a, b] = two(h).await;
            let mut tokens = Vec::new();
            for round in 0..4 {
                let (s, lock) = if round % 2 == 0 {
                    (&a, kind.lock(&a, &dir, &Stats::new()))
                } else {
                    (&b, kind.rival_lock(&b, &dir, &Stats::new()))
                };
                let g = lock.acquire().await.expect("acquire");
                let (token, node) = (g.fencing_token(), g.node_path().to_owned());
                let stamp = s
                    .get(&node)
                    .await
                    .expect("get")
                    .unwrap_or_else(|| panic!("{name}: the holder's node {node} is missing"))
                    .stat
                    .stamp;
                assert_eq!(token, stamp, "{name}: the token is not the node's stamp");
                let hold: Box<dyn Hold> = Box::new(g);
                assert_eq!(
                    (hold.fencing_token(), hold.node_path(), hold.session().id()),
                    (token, node.as_str(), s.id()),
                    "{name}: the guard as a Hold"
                );
                assert_eq!(hold.fence().stamp, token, "{name}: the fence's stamp");
                tokens.push(token);
                hold.release().await.expect("release through Hold");
            }
            assert!(
                tokens.windows(2).all(|w| w[0] < w[1]),
                "{name}: fencing tokens not strictly increasing: {tokens:?}"
            );
            close_all(&[a, b]).await;
        },
    )
    .await;
}

/// `participants()` of every kind, from any handle: the holder first,
/// holding, with its node and stamp; then the rivals waiting behind it, in
/// queue order (for a kind that lists waiters).
pub async fn lock_participants(h: &dyn Harness) {
    for_each_kind(
        h,
        "lock_participants",
        |_| true,
        |kind, dir| async move {
            let name = kind.name;
            let sessions = open_n(h, 3).await;
            let viewer = kind.lock(&sessions[0], &dir, &Stats::new());
            assert!(
                viewer
                    .participants()
                    .await
                    .expect("participants")
                    .is_empty(),
                "{name}: a free lock has participants"
            );
            let g = kind
                .lock(&sessions[0], &dir, &Stats::new())
                .acquire()
                .await
                .expect("acquire");
            let stats = Stats::new();
            let mut waiters = Vec::new();
            for (i, s) in sessions[1..].iter().enumerate() {
                let rival = kind.rival_lock(s, &dir, &stats);
                // Each releases as soon as it is granted: grants of a kind
                // that is not FIFO come in any order.
                waiters.push(tokio::spawn(async move {
                    let g = rival.acquire().await?;
                    g.release().await
                }));
                await_blocked(&stats, (i + 1) as u64, &format!("{name}: rival {i} waits")).await;
            }
            let got = viewer.participants().await.expect("participants");
            let states: Vec<bool> = got.iter().map(|c| c.is_holding()).collect();
            let want = if kind.lists_waiters {
                vec![true, false, false]
            } else {
                vec![true]
            };
            assert_eq!(states, want, "{name}: holding/waiting of {got:?}");
            assert_eq!(got[0].node, g.node_path(), "{name}: the holder first");
            assert_eq!(
                got[0].stamp,
                g.fencing_token(),
                "{name}: the holder's stamp"
            );
            assert!(
                got.windows(2).all(|w| w[0].stamp < w[1].stamp),
                "{name}: stamps not in queue order: {got:?}"
            );
            g.release().await.expect("release");
            for w in waiters {
                within(&format!("{name}: a rival's grant and release"), w)
                    .await
                    .expect("task")
                    .unwrap_or_else(|e| panic!("{name}: a rival's acquire or release: {e}"));
            }
            assert!(
                viewer
                    .participants()
                    .await
                    .expect("participants")
                    .is_empty(),
                "{name}: participants left after every release"
            );
            close_all(&sessions).await;
        },
    )
    .await;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __lock_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            locks::lock_mutual_exclusion,
            locks::lock_handoff,
            locks::simple_lock_herd,
            locks::lock_try_acquire,
            locks::lock_timeout_leaves_no_node,
            locks::lock_cancel_leaves_no_node,
            locks::lock_drop_releases,
            locks::lock_expired_holder_hands_over,
            locks::lock_lost_when_node_deleted,
            locks::lock_rejects_bad_paths,
            locks::lock_fencing_tokens_increase,
            locks::lock_participants,
            rwlock::rwlock_readers_share_writer_excludes,
            rwlock::rwlock_writer_not_starved,
            semaphore::semaphore_never_more_than_n,
            semaphore::semaphore_all_or_nothing,
            semaphore::semaphore_dead_holder_leases_return,
            semaphore::semaphore_lease_data_and_mutex,
            semaphore::semaphore_room_is_taken_without_the_internal_lock,
            semaphore::semaphore_fast_and_locked_acquirers_mixed,
        );
    };
}

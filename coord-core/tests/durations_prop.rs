//! Arbitrary durations and paths against the recipes, on the in-memory
//! backend: nothing panics; a timeout over [`limits::MAX_TIMEOUT`] is an
//! [`Error::InvalidArgument`] before any I/O (the store is left as it
//! was); a timeout within it behaves as a timeout (at once on a free
//! recipe, `Timeout` on a busy one); an invalid path is an
//! [`Error::InvalidPath`] from the constructor.
//!
//! Waits are short (busy recipes get timeouts under 40 ms, on a paused
//! clock; long timeouts only meet free recipes, which answer at once), so
//! every property runs in a second or so.

use std::future::Future;
use std::time::Duration;

use coord_core::limits::{self, MAX_SESSION_TIMEOUT, MAX_TIMEOUT};
use coord_core::prelude::*;
use coord_core::recipes::{
    period_index, Barrier, DoubleBarrier, Election, Group, Lock, MultiLock, PeriodicJob, Queue,
    ReentrantLock, RwLock, Semaphore, SemaphoreMutex, SimpleLock,
};
use coord_core::{path, Error, Session};
use coord_mem::MemStore;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

type Outcome = std::result::Result<(), TestCaseError>;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"))
}

/// A runtime whose clock is paused: it jumps ahead whenever every task
/// waits, so a wait that must run out does at once.
fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"))
}

/// Durations around every limit, the extremes, and anything at all.
fn durations() -> impl Strategy<Value = Duration> {
    prop_oneof![
        Just(Duration::ZERO),
        Just(Duration::MAX),
        Just(MAX_TIMEOUT),
        Just(MAX_TIMEOUT + Duration::from_nanos(1)),
        (0u64..=1_000_000).prop_map(|n| MAX_TIMEOUT + Duration::from_nanos(n)),
        (1u64..=1_000_000).prop_map(|n| MAX_TIMEOUT - Duration::from_nanos(n)),
        (0u64..=1_000).prop_map(|n| MAX_SESSION_TIMEOUT + Duration::from_nanos(n)),
        (0u64..=MAX_TIMEOUT.as_secs()).prop_map(Duration::from_secs),
        (any::<u64>(), 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n)),
        (u64::MAX - 1_000..=u64::MAX).prop_map(|s| Duration::new(s, 999_999_999)),
        (0u64..50).prop_map(Duration::from_millis),
    ]
}

/// Paths of every kind: valid, and breaking each rule of [`path`].
fn paths() -> impl Strategy<Value = String> {
    let odd = prop_oneof![
        Just('/'),
        Just('a'),
        Just('.'),
        Just('\0'),
        Just('\u{1f}'),
        Just('\u{7f}'),
        Just('\u{9f}'),
        Just('\u{e000}'),
        Just('\u{f8ff}'),
        Just('\u{fff0}'),
        Just('\u{ffff}'),
        Just('é'),
        Just('😀'),
        Just(' '),
    ];
    prop_oneof![
        any::<String>(),
        "(/[a-z._-]{0,4}){0,5}/?",
        "/[a-z]{1,8}(/\\PC{1,6}){0,3}",
        prop::collection::vec(odd, 0..12).prop_map(|c| c.into_iter().collect()),
        (1_000usize..1_030).prop_map(|n| format!("/{}", "a".repeat(n - 1))),
        (1usize..40).prop_map(|n| "/x".repeat(n)),
        Just("/".to_owned()),
        Just(String::new()),
    ]
}

/// Every node in the store, as seen by `s`.
async fn tree(s: &Session) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec!["/".to_owned()];
    while let Some(dir) = dirs.pop() {
        let children = s
            .children(&dir)
            .await
            .unwrap_or_else(|e| panic!("children of {dir}: {e}"));
        for c in children {
            let p = path::join(&dir, &c.name);
            out.push(p.clone());
            dirs.push(p);
        }
    }
    out.sort();
    out
}

/// Run one timed call with `d` on a recipe nobody else holds: over the
/// limit it must fail with `InvalidArgument` and change nothing in the
/// store; within it, succeed (`done` then gives back what it got) — or,
/// for a `d` under [`NO_ROUND_TRIP`], time out with `d`: a timed call
/// bounds every step, the answers of a healthy server included (a
/// partition looks like a slow answer until the session says otherwise),
/// and a zero timeout leaves no time for even the in-process store's task
/// hops.
async fn free<T, F, D, DF>(s: &Session, what: &str, d: Duration, call: F, done: D) -> Outcome
where
    F: Future<Output = coord_core::Result<T>>,
    D: FnOnce(T) -> DF,
    DF: Future<Output = coord_core::Result<()>>,
{
    let before = tree(s).await;
    let r = call.await;
    if d > MAX_TIMEOUT {
        prop_assert!(
            matches!(r, Err(Error::InvalidArgument(_))),
            "{what}({d:?}): {:?}",
            r.err()
        );
        prop_assert_eq!(tree(s).await, before, "{}({:?}) did I/O", what, d);
    } else {
        match r {
            Ok(t) => {
                let given_back = done(t).await;
                prop_assert!(given_back.is_ok(), "{what}: {given_back:?}");
            }
            Err(Error::Timeout(t)) if d < NO_ROUND_TRIP && t == d => {}
            Err(e) => prop_assert!(false, "{what}({d:?}) on a free recipe: {e}"),
        }
    }
    Ok(())
}

/// Too short to count on an answer, even from the in-process store on a
/// loaded machine.
const NO_ROUND_TRIP: Duration = Duration::from_millis(50);

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Every timed wait, on recipes nobody else holds.
    #[test]
    fn timed_waits_take_any_duration(d in durations()) {
        runtime().block_on(async {
            let store = MemStore::new();
            let s = store.open();
            let lock = Lock::new(&s, "/l").map_err(|e| TestCaseError::fail(e.to_string()))?;
            free(&s, "Lock::acquire_timeout", d, lock.acquire_timeout(d), |g| g.release()).await?;
            let rw = RwLock::new(&s, "/rw").map_err(|e| TestCaseError::fail(e.to_string()))?;
            free(&s, "RwLock::read_timeout", d, rw.read_timeout(d), |g| g.release()).await?;
            free(&s, "RwLock::write_timeout", d, rw.write_timeout(d), |g| g.release()).await?;
            let simple = SimpleLock::new(&s, "/simple").map_err(|e| TestCaseError::fail(e.to_string()))?;
            free(&s, "SimpleLock::acquire_timeout", d, simple.acquire_timeout(d), |g| g.release()).await?;
            let sem = Semaphore::new(&s, "/sem", 2).map_err(|e| TestCaseError::fail(e.to_string()))?;
            free(&s, "Semaphore::acquire_timeout", d, sem.acquire_timeout(2, d), Semaphore::return_all).await?;
            let mutex = SemaphoreMutex::new(&s, "/mutex").map_err(|e| TestCaseError::fail(e.to_string()))?;
            free(&s, "SemaphoreMutex::acquire_timeout", d, mutex.acquire_timeout(d), |g| g.release()).await?;
            let multi = MultiLock::new(vec![
                Box::new(Lock::new(&s, "/m2").map_err(|e| TestCaseError::fail(e.to_string()))?) as Box<dyn Lockable>,
                Box::new(SemaphoreMutex::new(&s, "/m1").map_err(|e| TestCaseError::fail(e.to_string()))?),
            ]).map_err(|e| TestCaseError::fail(e.to_string()))?;
            free(&s, "MultiLock::acquire_timeout", d, multi.acquire_timeout(d), |g| g.release()).await?;
            let reentrant = ReentrantLock::new(Lock::new(&s, "/re").map_err(|e| TestCaseError::fail(e.to_string()))?);
            free(&s, "ReentrantLock::acquire_timeout", d, reentrant.acquire_timeout(d), |g| g.release()).await?;
            let any: &dyn Lockable = &lock;
            free(&s, "LockableExt::run_timeout", d, any.run_timeout(d, |held| async move { held.fencing_token() }), |_| async { Ok(()) }).await?;
            let election = Election::new(&s, "/e").map_err(|e| TestCaseError::fail(e.to_string()))?;
            free(&s, "Election::campaign_timeout", d, election.campaign_timeout(b"me", d), |l| l.resign()).await?;
            let barrier = Barrier::new(&s, "/b").map_err(|e| TestCaseError::fail(e.to_string()))?;
            free(&s, "Barrier::wait_timeout", d, barrier.wait_timeout(d), |()| async { Ok(()) }).await?;
            let double = DoubleBarrier::new(&s, "/db", 1).map_err(|e| TestCaseError::fail(e.to_string()))?;
            free(&s, "DoubleBarrier::enter_timeout", d, double.enter_timeout(d), |inside| inside.leave()).await?;
            if let Ok(inside) = double.enter().await {
                let r = inside.leave_timeout(d).await;
                if d > MAX_TIMEOUT {
                    prop_assert!(matches!(r, Err(Error::InvalidArgument(_))), "leave_timeout({d:?}): {r:?}");
                } else {
                    prop_assert!(r.is_ok(), "leave_timeout({d:?}): {r:?}");
                }
            }

            let q = Queue::new(&s, "/q").map_err(|e| TestCaseError::fail(e.to_string()))?;
            q.offer(b"x").await.map_err(|e| TestCaseError::fail(e.to_string()))?;
            free(&s, "Queue::take_timeout", d, q.take_timeout(d), |item| async move {
                assert_eq!(item, b"x".to_vec());
                Ok(())
            }).await?;
            let rq = Queue::reliable(&s, "/rq").map_err(|e| TestCaseError::fail(e.to_string()))?;
            rq.offer(b"y").await.map_err(|e| TestCaseError::fail(e.to_string()))?;
            free(&s, "ReliableQueue::take_timeout", d, rq.take_timeout(d), |delivery| delivery.ack()).await?;
            // Nothing is left leased or waiting: the store is as the
            // successful calls left it, whatever `d` was.
            let _ = period_index(std::time::SystemTime::now(), d);
            let r = s.close().await;
            prop_assert!(r.is_ok(), "close: {r:?}");
            Ok(())
        })?;
    }

    /// Timed waits on recipes someone else holds, with short timeouts:
    /// `Timeout`, carrying the duration asked, and no node left behind.
    #[test]
    fn timed_waits_run_out(ms in 0u64..40, nanos in 0u32..1_000_000) {
        let d = Duration::from_millis(ms) + Duration::from_nanos(u64::from(nanos));
        paused_runtime().block_on(async {
            let store = MemStore::new();
            let holder = store.open();
            let waiter = store.open();
            let err = |e: Error| TestCaseError::fail(e.to_string());

            let held = Lock::new(&holder, "/l").map_err(err)?.acquire().await.map_err(err)?;
            let written = RwLock::new(&holder, "/rw").map_err(err)?.write().await.map_err(err)?;
            let leases = Semaphore::new(&holder, "/sem", 1).map_err(err)?.acquire(1).await.map_err(err)?;
            let leader = Election::new(&holder, "/e").map_err(err)?.campaign(b"a").await.map_err(err)?;
            let before = tree(&holder).await;

            let r = Lock::new(&waiter, "/l").map_err(err)?.acquire_timeout(d).await;
            prop_assert!(matches!(r, Err(Error::Timeout(t)) if t == d), "Lock: {:?}", r.map(|g| g.fencing_token()));
            let rw = RwLock::new(&waiter, "/rw").map_err(err)?;
            let r = rw.write_timeout(d).await;
            prop_assert!(matches!(r, Err(Error::Timeout(t)) if t == d), "RwLock::write_timeout: {:?}", r.map(|g| g.fencing_token()));
            let r = rw.read_timeout(d).await;
            prop_assert!(matches!(r, Err(Error::Timeout(t)) if t == d), "RwLock::read_timeout: {:?}", r.map(|g| g.fencing_token()));
            let r = Semaphore::new(&waiter, "/sem", 1).map_err(err)?.acquire_timeout(1, d).await;
            prop_assert!(matches!(r, Err(Error::Timeout(t)) if t == d), "Semaphore: {:?}", r.map(|l| l.len()));
            // A multi-lock whose second lock (by path) is held: the first
            // is taken, then given back when the time runs out.
            let multi = MultiLock::new(vec![
                Box::new(Lock::new(&waiter, "/l").map_err(err)?) as Box<dyn Lockable>,
                Box::new(Lock::new(&waiter, "/a-free").map_err(err)?),
            ]).map_err(err)?;
            let r = multi.acquire_timeout(d).await;
            prop_assert!(matches!(r, Err(Error::Timeout(t)) if t == d), "MultiLock: {:?}", r.map(|g| g.guards().len()));
            let r = ReentrantLock::new(Lock::new(&waiter, "/l").map_err(err)?).acquire_timeout(d).await;
            prop_assert!(matches!(r, Err(Error::Timeout(t)) if t == d), "ReentrantLock: {:?}", r.map(|g| g.fencing_token()));
            let r = Election::new(&waiter, "/e").map_err(err)?.campaign_timeout(b"b", d).await;
            prop_assert!(matches!(r, Err(Error::Timeout(t)) if t == d), "Election: {:?}", r.map(|l| l.fencing_token()));
            let r = Queue::new(&waiter, "/q").map_err(err)?.take_timeout(d).await;
            prop_assert!(matches!(r, Err(Error::Timeout(t)) if t == d), "Queue: {r:?}");
            let r = Queue::reliable(&waiter, "/rq").map_err(err)?.take_timeout(d).await;
            prop_assert!(matches!(r, Err(Error::Timeout(t)) if t == d), "ReliableQueue: {:?}", r.map(|x| x.item_path().to_owned()));
            let r = DoubleBarrier::new(&waiter, "/db", 2).map_err(err)?.enter_timeout(d).await;
            prop_assert!(matches!(r, Err(Error::Timeout(t)) if t == d), "DoubleBarrier: {:?}", r.map(|x| x.node_path().to_owned()));

            // Once the waiter's session has closed (close waits for the
            // background deletes of its withdrawn nodes), all it left are
            // the directories made on first use: no contender, claim or
            // participant node (their names start with `_c_`).
            waiter.close().await.map_err(err)?;
            let left: Vec<String> = tree(&holder)
                .await
                .into_iter()
                .filter(|p| !before.contains(p) && path::name(p).starts_with("_c_"))
                .collect();
            prop_assert!(left.is_empty(), "the waiter left {left:?}");
            coord_core::recipes::Semaphore::return_all(leases).await.map_err(err)?;
            written.release().await.map_err(err)?;
            held.release().await.map_err(err)?;
            leader.resign().await.map_err(err)?;
            holder.close().await.map_err(err)?;
            Ok(())
        })?;
    }

    /// Every constructor takes any string: an invalid path is
    /// `InvalidPath`, a valid one builds a recipe whose first use fails
    /// with nothing worse than `InvalidPath` (a path so long that the
    /// recipe's own nodes under it would be too long).
    #[test]
    fn constructors_take_any_path(p in paths(), n in 0u32..3) {
        runtime().block_on(async {
            let store = MemStore::new();
            let s = store.open();
            let valid = path::validate_non_root(&p).is_ok();
            let check = |what: &str, r: coord_core::Result<()>| -> Outcome {
                match r {
                    Ok(()) => prop_assert!(valid, "{what}({p:?}) accepted an invalid path"),
                    Err(Error::InvalidPath { .. }) => {
                        // Invalid, or valid but too long for what goes under it.
                        prop_assert!(
                            !valid || p.len() + 64 > path::MAX_PATH_LEN,
                            "{what}({p:?}): refused a valid path"
                        );
                    }
                    Err(Error::InvalidArgument(m)) if n == 0 && valid => {
                        prop_assert!(m.contains("at least one"), "{what}({p:?}): {m}");
                    }
                    Err(e) => prop_assert!(false, "{what}({p:?}): {e}"),
                }
                Ok(())
            };
            let use_err = |r: coord_core::Result<()>| match r {
                Err(e @ Error::InvalidPath { .. }) => Err(e),
                Err(e) => panic!("{p:?}: {e}"),
                Ok(()) => Ok(()),
            };

            let r = match Lock::new(&s, &p) {
                Ok(l) => use_err(l.try_acquire().await.map(drop)),
                Err(e) => Err(e),
            };
            check("Lock::new", r)?;
            let r = match RwLock::new(&s, &p) {
                Ok(l) => use_err(l.try_read().await.map(drop)),
                Err(e) => Err(e),
            };
            check("RwLock::new", r)?;
            let r = match SimpleLock::new(&s, &p) {
                Ok(l) => use_err(l.try_acquire().await.map(drop)),
                Err(e) => Err(e),
            };
            check("SimpleLock::new", r)?;
            let r = match Semaphore::new(&s, &p, n) {
                Ok(sem) => use_err(sem.try_acquire(1).await.map(drop)),
                Err(e) => Err(e),
            };
            check("Semaphore::new", r)?;
            let r = match SemaphoreMutex::new(&s, &p) {
                Ok(m) => use_err(m.try_acquire().await.map(drop)),
                Err(e) => Err(e),
            };
            check("SemaphoreMutex::new", r)?;
            let r = match Queue::new(&s, &p) {
                Ok(q) => use_err(async { q.offer(b"x").await?; q.poll().await.map(drop) }.await),
                Err(e) => Err(e),
            };
            check("Queue::new", r)?;
            let r = match Queue::reliable(&s, &p) {
                Ok(q) => use_err(async { q.offer(b"x").await?; q.poll().await.map(drop) }.await),
                Err(e) => Err(e),
            };
            check("Queue::reliable", r)?;
            let r = match Election::new(&s, &p) {
                Ok(e) => use_err(e.leader().await.map(drop)),
                Err(e) => Err(e),
            };
            check("Election::new", r)?;
            let r = match Barrier::new(&s, &p) {
                // Raised: the recipes before made a node at `p`.
                Ok(b) => use_err(match b.wait_timeout(Duration::ZERO).await {
                    Err(Error::Timeout(_)) => Ok(()),
                    r => r,
                }),
                Err(e) => Err(e),
            };
            check("Barrier::new", r)?;
            let r = match DoubleBarrier::new(&s, &p, n as usize) {
                Ok(b) => use_err(match b.enter_timeout(Duration::ZERO).await {
                    Err(Error::Timeout(_)) => Ok(()),
                    r => r.map(drop),
                }),
                Err(e) => Err(e),
            };
            check("DoubleBarrier::new", r)?;
            let r = match Group::new(&s, &p) {
                Ok(g) => use_err(g.members().await.map(drop)),
                Err(e) => Err(e),
            };
            check("Group::new", r)?;
            let r = match PeriodicJob::new(&s, &p) {
                Ok(j) => use_err(j.last_run().await.map(drop)),
                Err(e) => Err(e),
            };
            check("PeriodicJob::new", r)?;
            let r = s.close().await;
            prop_assert!(r.is_ok(), "close: {r:?}");
            Ok(())
        })?;
    }

    /// The limits themselves: checks and deadlines never panic.
    #[test]
    fn limits_never_panic(d in durations()) {
        runtime().block_on(async {
            prop_assert_eq!(limits::check_timeout(d).is_ok(), d <= MAX_TIMEOUT);
            prop_assert_eq!(
                limits::check_session_timeout(d).is_ok(),
                !d.is_zero() && d <= MAX_SESSION_TIMEOUT
            );
            match limits::deadline(d) {
                Ok((_, back)) => prop_assert_eq!(back, d),
                Err(e) => {
                    prop_assert!(d > MAX_TIMEOUT, "deadline({d:?}): {e}");
                    prop_assert!(matches!(e, Error::InvalidArgument(_)));
                }
            }
            Ok(())
        })?;
    }
}

/// What a `Session` call with path `p` may answer: an invalid path is
/// `InvalidPath`, found before any I/O; a valid one never is (any other
/// answer — a node, `NotFound`, `AlreadyExists`… — is the store's).
fn path_answer<T: std::fmt::Debug>(
    what: &str,
    p: &str,
    valid: bool,
    r: &coord_core::Result<T>,
) -> Outcome {
    match r {
        Err(Error::InvalidPath { .. }) => {
            prop_assert!(!valid, "Session::{what}({p:?}) refused a valid path")
        }
        _ => prop_assert!(valid, "Session::{what}({p:?}) took an invalid path: {r:?}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Every `Session` method takes any path string without panicking,
    /// refuses the invalid ones with `InvalidPath` before any I/O (the
    /// store is unchanged), and data over the limit with
    /// `InvalidArgument`.
    #[test]
    fn session_methods_take_any_path(p in paths(), big in any::<bool>()) {
        runtime().block_on(async {
            let store = MemStore::new();
            let s = store.open();
            let before = tree(&s).await;
            let any_path = path::validate(&p).is_ok();
            let below_root = path::validate_non_root(&p).is_ok();
            let data = if big { vec![0u8; path::MAX_DATA_LEN + 1] } else { b"x".to_vec() };

            path_answer("get", &p, any_path, &s.get(&p).await)?;
            path_answer("children", &p, any_path, &s.children(&p).await)?;
            path_answer("children_watch", &p, any_path, &s.children_watch(&p).await.map(|(c, _)| c))?;
            path_answer("watch_gone", &p, below_root, &s.watch_gone(&p).await.map(|w| w.is_some()))?;
            path_answer("delete", &p, below_root, &s.delete(&p, Some(7)).await)?;
            let fence = coord_core::Fence { path: p.clone(), stamp: 1 };
            let guarded = s.guarded(&fence, coord_core::Op::Delete { path: "/x".into(), version: None }).await;
            path_answer("guarded", &p, below_root, &guarded)?;
            prop_assert_eq!(tree(&s).await, before.clone(), "a refused or failed call changed the store");

            let created = s.create(&p, &data, coord_core::CreateMode::Ephemeral).await;
            if below_root && big {
                prop_assert!(matches!(created, Err(Error::InvalidArgument(_))), "oversized data: {:?}", created);
            } else {
                path_answer("create", &p, below_root, &created)?;
            }
            if created.is_err() {
                prop_assert_eq!(tree(&s).await, before, "a refused create changed the store");
            }
            let set = s.set(&p, &data, None).await;
            if !(below_root && big) {
                path_answer("set", &p, below_root, &set)?;
            }
            let _ = s.close().await;
            Ok(())
        })?;
    }
}

//! Conformance of [`coord_core::inspect`]: each recipe set up with real
//! holders and waiters (on their own sessions), then inspected from another
//! session, which must tell the recipe by its nodes alone and report who
//! holds and who waits, in order, with their data, stamps and ages; a
//! queue's length and head; a periodic job's last run; and say so when a
//! path is empty or unknown.

use std::time::{Duration, SystemTime};

use coord_core::inspect::{
    inspect, inspect_with, Entry, InspectOptions, Inspection, Kind, MaxLeases, Role, Side,
};
use coord_core::path::join;
use coord_core::prelude::*;
use coord_core::recipes::{
    DelayQueue, Election, ElectionLayout, Group, Lock, OnCrash, PeriodicJob, PriorityQueue, Queue,
    RunOutcome, RwLock, Semaphore, SimpleLock, Stats,
};
use coord_core::{CreateMode, Error, Session};

use crate::lock_kinds::await_blocked;
use crate::{await_children, close_all, open_n, within, Harness};

/// How far a server's clock may be from the test's.
const SKEW: Duration = Duration::from_secs(120);

/// Inspect `path` from `s`, failing the test on an error.
async fn look(s: &Session, path: &str) -> Inspection {
    inspect(s, path)
        .await
        .unwrap_or_else(|e| panic!("inspect {path}: {e}"))
}

/// The roles of the entries, in order.
fn roles(i: &Inspection) -> Vec<Role> {
    i.entries.iter().map(|e| e.role).collect()
}

/// The data of the entries, in order, as text.
fn data(i: &Inspection) -> Vec<String> {
    i.entries
        .iter()
        .map(|e| String::from_utf8_lossy(&e.data).into_owned())
        .collect()
}

/// Every entry's node is under `dir`, its stamps increase in the order
/// listed (when `ordered`), and its creation time and age are as the
/// backend keeps them: present (and between `since` and now, give or take
/// [`SKEW`]) everywhere but on etcd, where both are absent.
fn sane(what: &str, backend: &str, since: SystemTime, dir: &str, i: &Inspection, ordered: bool) {
    let now = SystemTime::now();
    for e in &i.entries {
        assert!(
            e.node.starts_with(&format!("{dir}/")),
            "{what}: {} is not under {dir}: {i:#?}",
            e.node
        );
        match (backend, e.created_at, e.age) {
            ("etcd", None, None) => {}
            ("etcd", _, _) => panic!("{what}: a creation time on etcd: {e:#?}"),
            (_, Some(t), Some(age)) => {
                assert!(
                    t + SKEW >= since && t <= now + SKEW,
                    "{what}: created_at {t:?} not between {since:?} and {now:?}: {e:#?}"
                );
                assert!(
                    age <= now.duration_since(since).unwrap_or_default() + SKEW,
                    "{what}: age {age:?} older than the test: {e:#?}"
                );
            }
            (_, _, _) => panic!("{what}: no creation time or age on {backend}: {e:#?}"),
        }
    }
    if ordered {
        assert!(
            i.entries.windows(2).all(|w| w[0].stamp < w[1].stamp),
            "{what}: stamps out of order: {i:#?}"
        );
    }
}

/// A lock with a holder and two waiters, each with its data: inspected, it
/// is a lock, the holder first (its node and stamp are the guard's), the
/// waiters after it in queue order with their data; every node ephemeral.
/// Once the holder releases, the first waiter is reported holding.
pub async fn inspect_lock(h: &dyn Harness) {
    let dir = h.root("inspect_lock");
    let sessions = open_n(h, 4).await;
    let backend = sessions[0].backend();
    let since = SystemTime::now();
    let with = |i: usize, d: &str| {
        Lock::new(&sessions[i], &dir)
            .expect("lock")
            .with_data(d.as_bytes())
            .expect("data")
    };
    let holder = with(0, "holder").acquire().await.expect("acquire");
    let stats = Stats::new();
    let mut waiters = Vec::new();
    for (i, d) in [(1, "first"), (2, "second")] {
        let l = with(i, d).with_stats(stats.clone());
        waiters.push(tokio::spawn(async move { l.acquire().await }));
        await_blocked(&stats, i as u64, "a waiter queued").await;
    }
    let got = look(&sessions[3], &dir).await;
    assert_eq!(got.kind, Kind::Lock, "{got:#?}");
    assert_eq!(
        roles(&got),
        [Role::Holder, Role::Waiter, Role::Waiter],
        "{got:#?}"
    );
    assert_eq!(data(&got), ["holder", "first", "second"], "{got:#?}");
    assert_eq!(got.entries[0].node, holder.node_path(), "the holder's node");
    assert_eq!(got.entries[0].stamp, holder.fencing_token(), "its stamp");
    assert!(got.entries.iter().all(|e| e.ephemeral), "{got:#?}");
    let owners: Vec<Option<String>> = got.entries.iter().map(|e| e.session.clone()).collect();
    let want: Vec<Option<String>> = (0..3).map(|i| Some(sessions[i].id().0)).collect();
    assert_eq!(
        owners, want,
        "each node's owner session, in queue order: {got:#?}"
    );
    sane("lock", backend, since, &dir, &got, true);

    holder.release().await.expect("release");
    let first = waiters.remove(0);
    let g = within("the first waiter's grant", first)
        .await
        .expect("task")
        .expect("acquire");
    let got = look(&sessions[3], &dir).await;
    assert_eq!(roles(&got), [Role::Holder, Role::Waiter], "{got:#?}");
    assert_eq!(data(&got), ["first", "second"], "{got:#?}");
    assert_eq!(got.entries[0].node, g.node_path());
    g.release().await.expect("release");
    let g = within("the second waiter's grant", waiters.remove(0))
        .await
        .expect("task")
        .expect("acquire");
    g.release().await.expect("release");
    close_all(&sessions).await;
}

/// A read/write lock with two readers holding, a writer waiting and a
/// later reader waiting behind it: both readers hold (side Read), then the
/// writer (side Write) and the reader wait, in queue order.
pub async fn inspect_rwlock(h: &dyn Harness) {
    let dir = h.root("inspect_rwlock");
    let sessions = open_n(h, 5).await;
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
    let w = rw(2).write_lock();
    let writer = tokio::spawn(async move { w.acquire().await });
    await_blocked(&stats, 1, "the writer waits").await;
    let r = rw(3).read_lock();
    let reader = tokio::spawn(async move { r.acquire().await });
    await_blocked(&stats, 2, "the later reader waits").await;

    let got = look(&sessions[4], &dir).await;
    assert_eq!(got.kind, Kind::RwLock, "{got:#?}");
    let rows: Vec<(Role, Option<Side>)> = got.entries.iter().map(|e| (e.role, e.side)).collect();
    assert_eq!(
        rows,
        [
            (Role::Holder, Some(Side::Read)),
            (Role::Holder, Some(Side::Read)),
            (Role::Waiter, Some(Side::Write)),
            (Role::Waiter, Some(Side::Read)),
        ],
        "{got:#?}"
    );
    assert_eq!(
        [got.entries[0].node.as_str(), got.entries[1].node.as_str()],
        [r1.node_path(), r2.node_path()]
    );
    sane("rwlock", backend, since, &dir, &got, true);
    r1.release().await.expect("release");
    r2.release().await.expect("release");
    let g = within("the writer's grant", writer)
        .await
        .expect("task")
        .expect("write");
    g.release().await.expect("release");
    let g = within("the reader's grant", reader)
        .await
        .expect("task")
        .expect("read");
    g.release().await.expect("release");
    close_all(&sessions).await;
}

/// A semaphore of two leases with two holders and a waiter, each with its
/// data: without the lease count, two holders and one waiter, the count
/// inferred as 2; told the count, the same; with nobody waiting, the count
/// is "at least" the holders.
pub async fn inspect_semaphore(h: &dyn Harness) {
    let dir = h.root("inspect_semaphore");
    let sessions = open_n(h, 4).await;
    let backend = sessions[0].backend();
    let since = SystemTime::now();
    let stats = Stats::new();
    let sem = |i: usize| {
        Semaphore::new(&sessions[i], &dir, 2)
            .expect("semaphore")
            .with_data(format!("s{i}").into_bytes())
            .expect("data")
            .with_stats(stats.clone())
    };
    let l0 = sem(0).acquire(1).await.expect("a lease");
    let got = look(&sessions[3], &dir).await;
    assert_eq!(got.kind, Kind::Semaphore, "{got:#?}");
    assert_eq!(roles(&got), [Role::Holder], "{got:#?}");
    assert_eq!(got.max_leases, Some(MaxLeases::AtLeast(1)), "{got:#?}");

    let l1 = sem(1).acquire(1).await.expect("a lease");
    let third = {
        let s = sem(2);
        tokio::spawn(async move { s.acquire(1).await })
    };
    await_blocked(&stats, 1, "the third acquirer waits").await;
    let got = look(&sessions[3], &dir).await;
    assert_eq!(got.kind, Kind::Semaphore, "{got:#?}");
    assert_eq!(
        roles(&got),
        [Role::Holder, Role::Holder, Role::Waiter],
        "{got:#?}"
    );
    assert_eq!(data(&got), ["s0", "s1", "s2"], "{got:#?}");
    assert_eq!(got.max_leases, Some(MaxLeases::Inferred(2)), "{got:#?}");
    assert_eq!(
        [got.entries[0].node.as_str(), got.entries[1].node.as_str()],
        [l0[0].path(), l1[0].path()],
        "the lease nodes"
    );
    sane("semaphore", backend, since, &dir, &got, false);
    let told = inspect_with(&sessions[3], &dir, &InspectOptions::new().max_leases(2))
        .await
        .expect("inspect");
    assert_eq!(told.max_leases, Some(MaxLeases::Given(2)), "{told:#?}");
    let without_age = |i: &Inspection| -> Vec<Entry> {
        i.entries
            .iter()
            .map(|e| Entry {
                age: None,
                ..e.clone()
            })
            .collect()
    };
    assert_eq!(
        without_age(&told),
        without_age(&got),
        "told or inferred, the same"
    );
    assert!(matches!(
        inspect_with(&sessions[3], &dir, &InspectOptions::new().max_leases(0)).await,
        Err(Error::InvalidArgument(_))
    ));

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

/// A simple lock's holder is reported holding.
pub async fn inspect_simple_lock(h: &dyn Harness) {
    let dir = h.root("inspect_simple_lock");
    let sessions = open_n(h, 2).await;
    let holder = SimpleLock::new(&sessions[0], &dir)
        .expect("lock")
        .acquire()
        .await
        .expect("acquire");
    let got = look(&sessions[1], &dir).await;
    assert_eq!(got.kind, Kind::SimpleLock, "{got:#?}");
    assert_eq!(roles(&got), [Role::Holder], "{got:#?}");
    assert_eq!(got.entries[0].node, holder.node_path());
    assert_eq!(got.entries[0].stamp, holder.fencing_token());
    holder.release().await.expect("release");
    close_all(&sessions).await;
}

/// An election with a leader and two candidates: the leader first with
/// its value, then the candidates in order. In the `LeaderSelector`
/// layout the offers are lock nodes: it shows as a lock whose holder is
/// the leader, and says an election looks the same.
pub async fn inspect_election(h: &dyn Harness) {
    let root = h.root("inspect_election");
    let sessions = open_n(h, 4).await;
    let backend = sessions[0].backend();
    let since = SystemTime::now();
    for (layout, kind, lead, wait) in [
        (
            ElectionLayout::LeaderLatch,
            Kind::Election,
            Role::Leader,
            Role::Candidate,
        ),
        (
            ElectionLayout::LeaderSelector,
            Kind::Lock,
            Role::Holder,
            Role::Waiter,
        ),
    ] {
        let dir = join(&root, layout.marker().trim_end_matches('-'));
        let election = |i: usize| {
            Election::new(&sessions[i], &dir)
                .expect("election")
                .with_layout(layout)
        };
        let leader = election(0).campaign(b"a").await.expect("campaign");
        let mut candidates = Vec::new();
        for (i, value) in [(1, "b"), (2, "c")] {
            let e = election(i);
            candidates.push(tokio::spawn(
                async move { e.campaign(value.as_bytes()).await },
            ));
            await_children(&sessions[3], &dir, "the candidate's offer", |k| {
                k.len() == i + 1
            })
            .await;
        }
        let got = look(&sessions[3], &dir).await;
        assert_eq!(got.kind, kind, "{layout:?}: {got:#?}");
        assert_eq!(roles(&got), [lead, wait, wait], "{layout:?}: {got:#?}");
        assert_eq!(data(&got), ["a", "b", "c"], "{layout:?}: {got:#?}");
        assert_eq!(got.entries[0].node, leader.node_path());
        assert_eq!(got.entries[0].stamp, leader.fencing_token());
        if kind == Kind::Lock {
            assert!(
                got.notes.iter().any(|n| n.contains("election")),
                "a lock-named election is said to look like a lock: {got:#?}"
            );
        }
        sane("election", backend, since, &dir, &got, true);
        leader.resign().await.expect("resign");
        for c in candidates {
            let l = within("a candidate leads", c)
                .await
                .expect("task")
                .expect("campaign");
            l.resign().await.expect("resign");
        }
    }
    close_all(&sessions).await;
}

/// A group with two members joined under generated names and one under a
/// name of its own: each member with its data, ephemeral.
pub async fn inspect_group(h: &dyn Harness) {
    let root = h.root("inspect_group");
    let sessions = open_n(h, 3).await;
    let backend = sessions[0].backend();
    let since = SystemTime::now();
    let dir = join(&root, "generated");
    let g = |i: usize, d: &str| Group::new(&sessions[i], d).expect("group");
    let a = g(0, &dir).join(b"host-a:80").await.expect("join");
    let b = g(1, &dir).join(b"host-b:80").await.expect("join");
    let got = look(&sessions[2], &dir).await;
    assert_eq!(got.kind, Kind::Group, "{got:#?}");
    assert_eq!(roles(&got), [Role::Member, Role::Member], "{got:#?}");
    let mut d = data(&got);
    d.sort();
    assert_eq!(d, ["host-a:80", "host-b:80"], "{got:#?}");
    assert!(got.entries.iter().all(|e| e.ephemeral), "{got:#?}");
    sane("group", backend, since, &dir, &got, false);

    let named = join(&root, "named");
    let c = g(0, &named)
        .join_as("worker-7", b"10.0.0.7")
        .await
        .expect("join");
    let got = look(&sessions[2], &named).await;
    assert_eq!(got.kind, Kind::Group, "{got:#?}");
    assert_eq!(data(&got), ["10.0.0.7"], "{got:#?}");
    assert_eq!(got.entries[0].node, join(&named, "worker-7"));
    a.leave().await.expect("leave");
    b.leave().await.expect("leave");
    c.leave().await.expect("leave");
    close_all(&sessions).await;
}

/// A queue of three items: length 3, the head is the first item offered.
/// A reliable consumer leases the head: the length stays 3, one leased,
/// the head reported with the consumer's session id (its claim records
/// it). Acknowledged, the length is 2 and the head the second item. The
/// queue's item directory shows the same queue.
pub async fn inspect_queue(h: &dyn Harness) {
    let dir = h.root("inspect_queue");
    let sessions = open_n(h, 3).await;
    let backend = sessions[0].backend();
    let since = SystemTime::now();
    let q = Queue::new(&sessions[0], &dir).expect("queue");
    for item in ["one", "two", "three"] {
        q.offer(item.as_bytes()).await.expect("offer");
    }
    let got = look(&sessions[2], &dir).await;
    assert_eq!(got.kind, Kind::Queue, "{got:#?}");
    let state = got.queue.clone().expect("queue state");
    assert_eq!((state.len, state.leased), (3, 0), "{got:#?}");
    assert_eq!(roles(&got), [Role::Head], "{got:#?}");
    assert_eq!(data(&got), ["one"], "{got:#?}");
    assert!(!got.entries[0].ephemeral, "items are persistent");
    sane("queue", backend, since, &dir, &got, false);

    let consumer = Queue::reliable(&sessions[1], &dir).expect("reliable");
    let delivery = consumer.take().await.expect("take");
    assert_eq!(delivery.data(), b"one");
    let got = look(&sessions[2], &dir).await;
    let state = got.queue.clone().expect("queue state");
    assert_eq!((state.len, state.leased), (3, 1), "{got:#?}");
    assert_eq!(data(&got), ["one"], "the head, leased: {got:#?}");
    assert_eq!(
        got.entries[0].session.as_deref(),
        Some(sessions[1].id().0.as_str()),
        "the consumer's session: {got:#?}"
    );

    let second = consumer.take().await.expect("take");
    let got = look(&sessions[2], &dir).await;
    assert_eq!(roles(&got), [Role::Head, Role::Leased], "{got:#?}");
    assert_eq!(data(&got), ["one", "two"], "{got:#?}");
    second.release().await.expect("give back");
    delivery.ack().await.expect("ack");
    let got = look(&sessions[2], &dir).await;
    let state = got.queue.clone().expect("queue state");
    assert_eq!((state.len, state.leased), (2, 0), "{got:#?}");
    assert_eq!(data(&got), ["two"], "{got:#?}");
    assert_eq!(got.entries[0].session, None);

    let items = look(&sessions[2], &join(&dir, "items")).await;
    assert_eq!(items.kind, Kind::Queue, "{items:#?}");
    assert_eq!(items.queue, got.queue);
    close_all(&sessions).await;
}

/// A priority queue's head is its lowest priority, not its oldest item;
/// a delay queue's is its earliest due item, due or not (with a note
/// saying when). A take then takes what was shown as the head.
pub async fn inspect_ordered_queues(h: &dyn Harness) {
    let dir = h.root("inspect_ordered_queues");
    let sessions = open_n(h, 2).await;
    let prio_dir = join(&dir, "prio");
    let pq = PriorityQueue::new(&sessions[0], &prio_dir).expect("priority queue");
    for (item, priority) in [
        ("five", 5),
        ("minus-one", -1),
        ("zero", 0),
        ("also-minus-one", -1),
    ] {
        pq.offer(item.as_bytes(), priority).await.expect("offer");
    }
    let got = look(&sessions[1], &prio_dir).await;
    assert_eq!(got.kind, Kind::Queue, "{got:#?}");
    assert_eq!(got.queue.as_ref().map(|q| q.len), Some(4), "{got:#?}");
    assert_eq!(
        data(&got),
        ["minus-one"],
        "the lowest priority, oldest first: {got:#?}"
    );
    assert!(
        got.notes.iter().any(|n| n.contains("priority")),
        "a note says the order: {got:#?}"
    );
    let taken = pq.poll().await.expect("poll").expect("an item");
    assert_eq!(taken, b"minus-one", "the take agrees with the head");
    let got = look(&sessions[1], &prio_dir).await;
    assert_eq!(data(&got), ["also-minus-one"], "{got:#?}");

    let delay_dir = join(&dir, "delay");
    let dq = DelayQueue::new(&sessions[0], &delay_dir).expect("delay queue");
    let hour = Duration::from_secs(3600);
    dq.offer(b"in-two-hours", 2 * hour).await.expect("offer");
    dq.offer(b"in-an-hour", hour).await.expect("offer");
    let got = look(&sessions[1], &delay_dir).await;
    assert_eq!(data(&got), ["in-an-hour"], "the earliest due: {got:#?}");
    assert!(
        got.notes
            .iter()
            .any(|n| n.contains("due") && n.contains(" s ")),
        "a note says when the head is due: {got:#?}"
    );
    dq.offer(b"now", Duration::ZERO).await.expect("offer");
    let got = look(&sessions[1], &delay_dir).await;
    assert_eq!(data(&got), ["now"], "a due item goes first: {got:#?}");
    assert_eq!(
        dq.poll().await.expect("poll").as_deref(),
        Some(&b"now"[..]),
        "the take agrees with the head"
    );
    close_all(&sessions).await;
}

/// A periodic job: after period 5 ran, its last run is 5 and nobody holds
/// its lock; while period 6 runs, the runner is reported holding; with
/// `OnCrash::Skip`, a failed period 7 shows as started and not recorded.
pub async fn inspect_periodic_job(h: &dyn Harness) {
    let dir = h.root("inspect_periodic_job");
    let sessions = open_n(h, 2).await;
    let job = PeriodicJob::new(&sessions[0], &dir).expect("job");
    let ran = job
        .run(5, |_| async { Ok::<_, ()>(()) })
        .await
        .expect("run");
    assert_eq!(ran, RunOutcome::Ran(()));
    let got = look(&sessions[1], &dir).await;
    assert_eq!(got.kind, Kind::PeriodicJob, "{got:#?}");
    let state = got.job.clone().expect("job state");
    assert_eq!((state.last_run, state.started), (Some(5), None), "{got:#?}");
    assert_eq!(got.count(Role::Holder), 0, "{got:#?}");

    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<u64>();
    let (finish_tx, finish_rx) = tokio::sync::oneshot::channel::<()>();
    let running = {
        let job = job.clone();
        tokio::spawn(async move {
            job.run(6, |ctx| async move {
                let _ = started_tx.send(ctx.fencing_token());
                let _ = finish_rx.await;
                Ok::<_, ()>(())
            })
            .await
        })
    };
    let token = within("period 6 starts", started_rx)
        .await
        .expect("started");
    let got = look(&sessions[1], &dir).await;
    assert_eq!(got.kind, Kind::PeriodicJob, "{got:#?}");
    assert_eq!(roles(&got), [Role::Holder], "the runner: {got:#?}");
    assert_eq!(got.entries[0].stamp, token, "the run's fencing token");
    assert_eq!(got.job.as_ref().and_then(|j| j.last_run), Some(5));
    let _ = finish_tx.send(());
    let ran = within("period 6 ends", running)
        .await
        .expect("task")
        .expect("run");
    assert_eq!(ran, RunOutcome::Ran(()));

    let skip = PeriodicJob::new(&sessions[0], &dir)
        .expect("job")
        .on_crash(OnCrash::Skip);
    let failed = skip.run(7, |_| async { Err::<(), _>("boom") }).await;
    assert_eq!(failed.expect("run"), RunOutcome::Failed("boom"));
    let got = look(&sessions[1], &dir).await;
    let state = got.job.clone().expect("job state");
    assert_eq!(
        (state.last_run, state.started),
        (Some(6), Some(7)),
        "{got:#?}"
    );
    assert!(got.entries.is_empty(), "nobody runs it now: {got:#?}");
    close_all(&sessions).await;
}

/// A path with nothing there is reported missing, saying so; a node with
/// data and nothing under it is a node, its data shown; nodes no recipe
/// makes are unknown, listed as they are; a bad path is refused before any
/// I/O.
pub async fn inspect_missing_node_and_unknown(h: &dyn Harness) {
    let root = h.root("inspect_missing_node_and_unknown");
    let sessions = open_n(h, 1).await;
    let s = &sessions[0];
    let got = look(s, &join(&root, "nothing")).await;
    assert_eq!(got.kind, Kind::Missing, "{got:#?}");
    assert!(got.entries.is_empty());
    assert!(got.notes.iter().any(|n| n.contains("nothing")), "{got:#?}");

    let leaf = join(&root, "leaf");
    s.create(&leaf, b"\x00\xffbin", CreateMode::Persistent)
        .await
        .expect("create");
    let got = look(s, &leaf).await;
    assert_eq!(got.kind, Kind::Node, "{got:#?}");
    assert_eq!(got.entries.len(), 1, "{got:#?}");
    let e: &Entry = &got.entries[0];
    assert_eq!(
        (e.role, e.data.as_slice()),
        (Role::Node, &b"\x00\xffbin"[..])
    );

    let odd = join(&root, "odd");
    for name in ["x", "y"] {
        s.create(&join(&odd, name), name.as_bytes(), CreateMode::Persistent)
            .await
            .expect("create");
    }
    let got = look(s, &odd).await;
    assert_eq!(got.kind, Kind::Unknown, "{got:#?}");
    assert_eq!(roles(&got), [Role::Child, Role::Child], "{got:#?}");
    let mut d = data(&got);
    d.sort();
    assert_eq!(d, ["x", "y"]);

    for bad in ["relative", "/a//b", "/a/"] {
        assert!(
            matches!(inspect(s, bad).await, Err(Error::InvalidPath { .. })),
            "{bad} accepted"
        );
    }
    close_all(&sessions).await;
}

/// A lock whose holder has gone is empty or gone (ZooKeeper removes an
/// emptied container later, etcd and Redis keep no directories): either
/// way nobody is reported.
pub async fn inspect_released_lock_is_empty(h: &dyn Harness) {
    let dir = h.root("inspect_released_lock_is_empty");
    let sessions = open_n(h, 1).await;
    let g = Lock::new(&sessions[0], &dir)
        .expect("lock")
        .acquire()
        .await
        .expect("acquire");
    g.release().await.expect("release");
    let got = look(&sessions[0], &dir).await;
    assert!(matches!(got.kind, Kind::Empty | Kind::Missing), "{got:#?}");
    assert!(got.entries.is_empty(), "{got:#?}");
    assert!(!got.notes.is_empty(), "it says so: {got:#?}");
    close_all(&sessions).await;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __inspect_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            inspect::inspect_lock,
            inspect::inspect_rwlock,
            inspect::inspect_semaphore,
            inspect::inspect_simple_lock,
            inspect::inspect_election,
            inspect::inspect_group,
            inspect::inspect_queue,
            inspect::inspect_ordered_queues,
            inspect::inspect_periodic_job,
            inspect::inspect_missing_node_and_unknown,
            inspect::inspect_released_lock_is_empty,
        );
    };
}

//! Waits whose watch opens after other writes moved the store's revision
//! past the waiter's read (issue 15). A watch started at "read + 1" is then
//! *unsynced* on the server, which catches it up only every 100 ms; coord
//! opens every wait's watch at the current revision (synced) and covers
//! the gap since its read with one read request. These tests check both:
//! the gap's changes are seen, the gap costs exactly one request, and the
//! server's count of unsynced ("slow") watchers does not grow.
//!
//! Alone in its test binary, since it reads a process-wide request count
//! (the tests here take turns). Needs `COORD_TEST_ETCD` (plain `http://`
//! endpoints, whose `/metrics` it reads).

mod common;

use std::future::Future;
use std::time::Duration;

use common::{endpoints, session};
use coord_conformance::eventually;
use coord_core::recipes::Lock;
use coord_core::{CreateMode, Session, Watch};
use coord_etcd::testing;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Mutex;

/// The writes that move the revision between a read and its watch.
const OTHER_WRITES: usize = 20;
/// Only to fail a broken test instead of hanging; never a measure.
const DEADLINE: Duration = Duration::from_secs(30);

static TURNS: Mutex<()> = Mutex::const_new(());

fn root(test: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("/coord-synced-watch/{test}-{}", &id[..12])
}

/// The server's watchers and unsynced ("slow") watchers, each summed over
/// every member's `/metrics` (gauges: how many there are now).
#[derive(Debug, Clone, Copy, Default)]
struct Watchers {
    all: f64,
    slow: f64,
}

async fn watchers() -> Watchers {
    let mut sum = Watchers::default();
    for endpoint in endpoints().split(',') {
        let host = endpoint
            .trim()
            .strip_prefix("http://")
            .expect("plain http:// endpoints (their /metrics is read)")
            .trim_end_matches('/');
        let mut conn = tokio::net::TcpStream::connect(host)
            .await
            .expect("connect for /metrics");
        let request = format!("GET /metrics HTTP/1.0\r\nHost: {host}\r\n\r\n");
        conn.write_all(request.as_bytes()).await.expect("send");
        let mut body = String::new();
        conn.read_to_string(&mut body).await.expect("read /metrics");
        let gauge = |name: &str| {
            body.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
                .unwrap_or_else(|| panic!("{name} not in {host}/metrics"))
                .trim()
                .parse::<f64>()
                .expect("a number")
        };
        sum.all += gauge("etcd_debugging_mvcc_watcher_total");
        sum.slow += gauge("etcd_debugging_mvcc_slow_watcher_total");
    }
    sum
}

/// Start `wait` (a watch armed by a read before other writes) and read
/// the server's gauges until it has one more watcher; return the task and
/// the most unsynced watchers seen meanwhile above the count before. The
/// old watch (start revision = read + 1) is one slow watcher from its
/// registration to the server's next catch-up, up to 100 ms later; the
/// server counts it slow just before it counts it at all, so the slow
/// count is read once more after the watcher shows.
async fn registered<T: Send + 'static>(
    wait: impl Future<Output = T> + Send + 'static,
) -> (tokio::task::JoinHandle<T>, f64) {
    let start = watchers().await;
    let task = tokio::spawn(wait);
    let mut most = 0.0_f64;
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let now = watchers().await;
        most = most.max(now.slow - start.slow);
        if now.all > start.all {
            most = most.max(watchers().await.slow - start.slow);
            return (task, most);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the watch was never registered"
        );
    }
}

async fn move_revision(s: &Session, root: &str) {
    let other = format!("{root}-other");
    s.create(&other, b"", CreateMode::Ephemeral)
        .await
        .expect("other");
    for i in 0..OTHER_WRITES {
        s.set(&other, i.to_string().as_bytes(), None)
            .await
            .expect("set other");
    }
}

async fn finish(task: tokio::task::JoinHandle<coord_core::Result<()>>, what: &str) {
    tokio::time::timeout(DEADLINE, task)
        .await
        .unwrap_or_else(|_| panic!("{what}: the wait never resolved"))
        .expect("task")
        .expect("the wait");
}

/// A `wait_gone` armed before other writes: its deletion after the watch
/// opened wakes it, the gap costs one Get, and the watch is never slow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletion_after_other_writes_wakes_a_synced_watch_with_one_get() {
    let _turn = TURNS.lock().await;
    let (holder, waiter) = (session().await, session().await);
    let root = root("gone");
    let pred = format!("{root}/pred");
    holder
        .create(&pred, b"", CreateMode::Ephemeral)
        .await
        .expect("pred");
    let gone: Watch = waiter
        .watch_gone(&pred)
        .await
        .expect("watch_gone")
        .expect("pred is there");
    move_revision(&holder, &root).await;

    let before = testing::requests();
    let (task, slow) = registered(gone).await;
    holder.delete(&pred, None).await.expect("delete pred");
    finish(task, "wait_gone").await;
    let wait_requests = testing::requests() - before - 1; // less the delete
    assert_eq!(
        slow, 0.0,
        "the server put the watch among its unsynced (slow) watchers"
    );
    assert_eq!(
        wait_requests, 1,
        "a watch registered after the revision moved costs one Get (the gap's check)"
    );
    holder.close().await.expect("close");
    waiter.close().await.expect("close");
}

/// A deletion in the gap (after the read, before the watch opens) is seen
/// by the gap's Get: the wait resolves without any event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletion_in_the_gap_is_seen() {
    let _turn = TURNS.lock().await;
    let (holder, waiter) = (session().await, session().await);
    let root = root("gap");
    let pred = format!("{root}/pred");
    holder
        .create(&pred, b"", CreateMode::Ephemeral)
        .await
        .expect("pred");
    let gone = waiter
        .watch_gone(&pred)
        .await
        .expect("watch_gone")
        .expect("pred is there");
    holder.delete(&pred, None).await.expect("delete pred");
    // Made again: another node at the same path, so ours is still gone.
    holder
        .create(&pred, b"", CreateMode::Ephemeral)
        .await
        .expect("pred again");
    move_revision(&holder, &root).await;
    let before = testing::requests();
    finish(tokio::spawn(gone), "wait_gone").await;
    assert_eq!(testing::requests() - before, 1, "one Get finds it gone");
    holder.close().await.expect("close");
    waiter.close().await.expect("close");
}

/// A children watch armed before other writes: a child made after its
/// watch opened fires it, the gap costs one read-only Txn, the watch is
/// never slow, and the unrelated writes do not fire it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_watch_after_other_writes_is_synced_and_fires_once() {
    let _turn = TURNS.lock().await;
    let (writer, watcher) = (session().await, session().await);
    let root = root("children");
    let dir = format!("{root}/dir");
    writer
        .create(&format!("{dir}/a"), b"", CreateMode::Ephemeral)
        .await
        .expect("a");
    let (kids, changed) = watcher.children_watch(&dir).await.expect("children_watch");
    assert_eq!(kids.len(), 1);
    move_revision(&writer, &root).await;
    // A set of a child is no change to the children.
    writer
        .set(&format!("{dir}/a"), b"x", None)
        .await
        .expect("set a");

    let before = testing::requests();
    let (mut task, slow) = registered(changed).await;
    assert_eq!(
        slow, 0.0,
        "the server put the children watch among its slow watchers"
    );
    // Not fired by the writes before it (a wait that fires spuriously is
    // allowed, but one on every moved revision would make waiters poll).
    // Can only pass wrongly on a slow machine, never fail wrongly.
    eventually("the gap's Txn", || async { testing::requests() > before }).await;
    assert!(
        tokio::time::timeout(Duration::from_millis(200), &mut task)
            .await
            .is_err(),
        "the children watch fired for writes that changed no child"
    );
    writer
        .create(&format!("{dir}/b"), b"", CreateMode::Ephemeral)
        .await
        .expect("b");
    finish(task, "children watch").await;
    assert_eq!(
        testing::requests() - before - 1, // less the create
        1,
        "a children watch registered after the revision moved costs one Txn"
    );
    writer.close().await.expect("close");
    watcher.close().await.expect("close");
}

/// A child deleted in the gap fires the children watch (through the gap's
/// Txn: one fewer key of those there at the read).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_deleted_in_the_gap_fires() {
    let _turn = TURNS.lock().await;
    let (writer, watcher) = (session().await, session().await);
    let root = root("children-gap");
    let dir = format!("{root}/dir");
    for name in ["a", "b"] {
        writer
            .create(&format!("{dir}/{name}"), b"", CreateMode::Ephemeral)
            .await
            .expect("child");
    }
    let (_, changed) = watcher.children_watch(&dir).await.expect("children_watch");
    writer
        .delete(&format!("{dir}/a"), None)
        .await
        .expect("delete a");
    move_revision(&writer, &root).await;
    let before = testing::requests();
    finish(tokio::spawn(changed), "children watch").await;
    assert_eq!(testing::requests() - before, 1, "one Txn finds it");
    writer.close().await.expect("close");
    watcher.close().await.expect("close");
}

/// The case through the recipe: a waiter queued behind a holder,
/// other writes, then the release. The waiter acquires, with at most one
/// request more than an uncontended wait (create-and-list, the
/// predecessor's read, the listing after the wake-up).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_waiter_acquires_after_other_writes_with_at_most_one_extra_get() {
    let _turn = TURNS.lock().await;
    let (a, b) = (session().await, session().await);
    let root = root("lock");
    let held = Lock::new(&a, &format!("{root}/lock"))
        .expect("lock")
        .acquire()
        .await
        .expect("a acquires");
    let lock_b = Lock::new(&b, &format!("{root}/lock")).expect("lock");
    let stats = lock_b.stats().clone();

    let before = testing::requests();
    let waiter = tokio::spawn(async move {
        let guard = lock_b.acquire().await?;
        guard.release().await
    });
    eventually("b waits", || async { stats.waiting() == 1 }).await;
    move_revision(&a, &root).await;
    held.release().await.expect("a releases");
    finish(waiter, "b's acquire").await;
    // Less a's create and sets, a's release and b's release.
    let acquire = testing::requests() - before - (1 + OTHER_WRITES as u64) - 1 - 1;
    assert!(
        acquire <= 4,
        "b's acquire took {acquire} requests: more than 3 and the gap's one Get"
    );
    a.close().await.expect("close");
    b.close().await.expect("close");
}

//! A session lends the name of a contender node it deleted to its next
//! contender at the same prefix (`coord-etcd/src/slots.rs`). etcd keeps a
//! deleted key in its index until a compaction and every listing walks
//! them, so a lock that made a new key per acquisition got slower with
//! each one. Here the server's own history (a watch replayed from before
//! the cycles) must show a bounded set of keys, and every hold a new
//! fencing token.
//!
//! Needs `COORD_TEST_ETCD` (scripts/test-all sets it).

mod common;

use std::collections::HashSet;

use common::endpoints;
use coord_core::prelude::Lockable;
use coord_core::recipes::{Lock, RwLock, Semaphore};
use coord_core::{CreateMode, Error};
use coord_etcd::EtcdOptions;
use etcd_client::{EventType, GetOptions, WatchOptions};

const CYCLES: usize = 40;

/// The distinct keys put under `prefix` after `revision`, from the
/// server's history: a watch replayed from `revision + 1` up to a marker
/// key put now (not counted).
async fn keys_made_since(client: &mut etcd_client::Client, prefix: &str, revision: i64) -> usize {
    let marker = format!("{prefix}~end");
    client
        .put(marker.as_str(), "", None)
        .await
        .expect("put the marker");
    let mut stream = client
        .watch(
            prefix,
            Some(
                WatchOptions::new()
                    .with_prefix()
                    .with_start_revision(revision + 1),
            ),
        )
        .await
        .expect("watch the history");
    let mut keys = HashSet::new();
    loop {
        let resp = stream
            .message()
            .await
            .expect("the history")
            .expect("the stream is open");
        for ev in resp.events() {
            let Some(kv) = ev.kv() else { continue };
            if kv.key() == marker.as_bytes() {
                return keys.len();
            }
            if ev.event_type() == EventType::Put {
                keys.insert(kv.key().to_vec());
            }
        }
    }
}

/// A session, a raw client (to read the server's history) and a fresh
/// directory.
async fn setup() -> (coord_core::Session, etcd_client::Client, String) {
    let endpoints = endpoints();
    let session = coord_etcd::connect(EtcdOptions::from_endpoint_list(&endpoints))
        .await
        .expect("session");
    let raw = etcd_client::Client::connect(endpoints.split(',').collect::<Vec<_>>(), None)
        .await
        .expect("a raw client");
    let dir = format!("/coord-reused-names/{}", uuid::Uuid::new_v4().simple());
    (session, raw, dir)
}

async fn cycle(drop_guard: bool, at_most: usize) {
    let (session, mut raw, dir) = setup().await;
    let lock = Lock::new(&session, &dir).expect("lock");
    // The first acquire makes the directory.
    lock.acquire()
        .await
        .expect("acquire")
        .release()
        .await
        .expect("release");
    let start = revision(&mut raw).await;

    let mut paths = HashSet::new();
    let mut last_token = 0;
    for _ in 0..CYCLES {
        let g = lock.acquire().await.expect("acquire");
        assert!(
            g.fencing_token() > last_token,
            "a hold's fencing token {} after {last_token}",
            g.fencing_token()
        );
        last_token = g.fencing_token();
        paths.insert(g.node_path().to_owned());
        if drop_guard {
            drop(g);
        } else {
            g.release().await.expect("release");
        }
    }
    let made = keys_made_since(&mut raw, &format!("{dir}/"), start).await;
    assert!(
        paths.len() <= at_most && made <= at_most,
        "{CYCLES} cycles made {made} keys ({} names seen); at most {at_most}",
        paths.len()
    );
    session.close().await.expect("close");
}

/// Released with `release().await`: one name, reused every time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_cycled_reuses_its_name_with_new_tokens() {
    cycle(false, 1).await;
}

/// Released by dropping the guard (the delete answered in the
/// background): the next acquire may go before that answer and take a new
/// name; a few names in turn, not one per acquisition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_cycled_with_dropped_guards_uses_a_few_names() {
    cycle(true, 4).await;
}

/// A lent name is only ever this session's node: its delete compares the
/// create revision, so when someone else deleted it and made another node
/// at that name, this session's delete reports its own node gone and
/// leaves the other one; the next create at the prefix finds the name
/// taken and makes a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lent_name_never_deletes_another_node_made_there() {
    let endpoints = endpoints();
    let options = EtcdOptions::from_endpoint_list(&endpoints);
    let s = coord_etcd::connect(options.clone()).await.expect("session");
    let other = coord_etcd::connect(options).await.expect("session");
    let dir = format!("/coord-reused-names/{}", uuid::Uuid::new_v4().simple());
    let prefix = format!("{dir}/n-");
    let first = s
        .create(&prefix, b"", CreateMode::EphemeralSequential)
        .await
        .expect("create");
    s.delete(&first.path, None).await.expect("delete");
    let again = s
        .create(&prefix, b"", CreateMode::EphemeralSequential)
        .await
        .expect("create");
    assert_eq!(again.path, first.path, "the deleted node's name is lent");
    assert!(again.stamp > first.stamp, "with a new create revision");

    // Someone else deletes it and makes a node of their own there.
    other.delete(&again.path, None).await.expect("delete");
    other
        .create(&again.path, b"theirs", CreateMode::Persistent)
        .await
        .expect("create");
    match s.delete(&again.path, None).await {
        Err(Error::NotFound { path }) => assert_eq!(path, again.path),
        r => panic!("deleting our gone node: expected NotFound, got {r:?}"),
    }
    let theirs = other.get(&again.path).await.expect("get");
    assert_eq!(
        theirs.map(|n| n.data),
        Some(b"theirs".to_vec()),
        "the other node is still there"
    );
    let next = s
        .create(&prefix, b"", CreateMode::EphemeralSequential)
        .await
        .expect("a create at the prefix");
    assert_ne!(next.path, again.path, "the taken name is not reused");
    other.delete(&again.path, None).await.expect("clean up");
    other.close().await.expect("close");
    s.close().await.expect("close");
}

/// The store's revision now.
async fn revision(raw: &mut etcd_client::Client) -> i64 {
    raw.get("/", Some(GetOptions::new().with_count_only()))
        .await
        .expect("read the revision")
        .header()
        .expect("a header")
        .revision()
}

/// A lease taken and returned, a read and a write lock taken and released.
async fn round(sem: &Semaphore, read: &dyn Lockable, write: &dyn Lockable) {
    for l in sem.acquire(1).await.expect("acquire") {
        l.release().await.expect("release");
    }
    for half in [read, write] {
        half.acquire()
            .await
            .expect("acquire")
            .release()
            .await
            .expect("release");
    }
}

/// A semaphore's leases and a read/write lock's halves lend their names
/// the same way: a handle cycled keeps one key per kind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_leases_and_rwlock_halves_reuse_their_names() {
    let (session, mut raw, dir) = setup().await;
    let sem = Semaphore::new(&session, &format!("{dir}/sem"), 2).expect("semaphore");
    let rw = RwLock::new(&session, &format!("{dir}/rw")).expect("rwlock");
    let (read, write) = (rw.read_lock(), rw.write_lock());
    // The first round makes the directories.
    round(&sem, &read, &write).await;
    let start = revision(&mut raw).await;
    for _ in 0..CYCLES {
        round(&sem, &read, &write).await;
    }
    let made = keys_made_since(&mut raw, &format!("{dir}/"), start).await;
    assert!(
        made <= 3,
        "{CYCLES} cycles of a lease, a read and a write made {made} keys; at most 3"
    );
    session.close().await.expect("close");
}

//! A directory too large for one answer: 40,000 children, whose keys-only
//! listing (~5 MB) is over tonic's default 4 MiB answer limit. A queue of
//! 100,000 items failed so ("decoded message length too large"). coord
//! must list such a directory whole, in order, as one snapshot, and a
//! queue on it must take its items.
//!
//! The children are made fast with a raw client: puts in Txns of 128
//! (etcd's default `--max-txn-ops`), named as a queue's items are.
//!
//! Needs `COORD_TEST_ETCD` (scripts/test-all sets it).

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::{endpoints, session};
use coord_core::recipes::Queue;
use coord_core::{Session, TreeChange};
use etcd_client::{Client, PutOptions, Txn, TxnOp};

const CHILDREN: usize = 40_000;
const PER_TXN: usize = 128;

async fn raw() -> Client {
    Client::connect(endpoints().split(',').collect::<Vec<_>>(), None)
        .await
        .expect("a raw client")
}

/// An item's name as a queue's offer makes it (`_c_<uuid>-item-` and a
/// 26-character sequential suffix), so the keys are as long as real ones.
fn item_name(i: usize) -> String {
    format!(
        "_c_{}-item-{:016x}{:010}",
        uuid::Uuid::new_v4().simple(),
        0x694d_9a3c_1e2b_4f01_u64,
        i
    )
}

/// The names of a directory's items (each one's data is its index), in the
/// order `children` must give (by create revision, then name).
struct Items {
    ordered: Vec<String>,
}

/// Make `dir` (and its parents `parents`, as coord makes them: empty keys)
/// with `n` children, 4 writers at once, each a Txn of [`PER_TXN`] puts
/// (under `lease`, if any).
async fn fill(raw: &Client, parents: &[&str], dir: &str, n: usize, lease: Option<i64>) -> Items {
    let mut kv = raw.kv_client();
    for p in parents.iter().chain([&dir]) {
        kv.put(*p, "", None).await.expect("a parent key");
    }
    let names: Vec<String> = (0..n).map(item_name).collect();
    let batches: Vec<(usize, Vec<String>)> = names
        .chunks(PER_TXN)
        .enumerate()
        .map(|(b, c)| (b * PER_TXN, c.to_vec()))
        .collect();
    let batches = Arc::new(std::sync::Mutex::new(batches));
    let mut writers = Vec::new();
    for _ in 0..4 {
        let (batches, mut kv, dir) = (batches.clone(), raw.kv_client(), dir.to_owned());
        writers.push(tokio::spawn(async move {
            let mut made = Vec::new();
            loop {
                let Some((first, batch)) = batches.lock().expect("the batches").pop() else {
                    return made;
                };
                let puts = batch.iter().enumerate().map(|(j, name)| {
                    let leased = lease.map(|l| PutOptions::new().with_lease(l));
                    TxnOp::put(format!("{dir}/{name}"), (first + j).to_string(), leased)
                });
                let resp = kv
                    .txn(Txn::new().and_then(puts.collect::<Vec<_>>()))
                    .await
                    .expect("a Txn of puts");
                let revision = resp.header().expect("a header").revision();
                made.extend(batch.into_iter().map(|name| (revision, name)));
            }
        }));
    }
    let mut made = Vec::new();
    for w in writers {
        made.extend(w.await.expect("a writer"));
    }
    made.sort();
    Items {
        ordered: made.into_iter().map(|(_, name)| name).collect(),
    }
}

fn fresh_dir() -> String {
    format!("/coord-big-dir/{}", uuid::Uuid::new_v4().simple())
}

async fn drop_dir(raw: &Client, dir: &str) {
    let mut kv = raw.kv_client();
    let all = etcd_client::DeleteOptions::new().with_prefix();
    kv.delete(format!("{dir}/"), Some(all))
        .await
        .expect("clean up");
    kv.delete(dir, None).await.expect("clean up");
}

/// A session, a raw client, and a fresh directory `top` whose `dir`
/// (`top/items`, a queue's items) has [`CHILDREN`] children, under a lease
/// of the raw client's if `leased`.
struct Big {
    session: Session,
    raw: Client,
    lease: Option<i64>,
    top: String,
    dir: String,
    items: Items,
}

impl Big {
    async fn new(leased: bool) -> Big {
        let (session, raw) = (session().await, raw().await);
        let lease = match leased {
            true => {
                let granted = raw.lease_client().grant(120, None).await;
                Some(granted.expect("a lease").id())
            }
            false => None,
        };
        let top = fresh_dir();
        let dir = format!("{top}/items");
        let items = fill(&raw, &[&top], &dir, CHILDREN, lease).await;
        Big {
            session,
            raw,
            lease,
            top,
            dir,
            items,
        }
    }

    async fn done(self) {
        drop_dir(&self.raw, &self.top).await;
        self.session.close().await.expect("close");
    }
}

#[tokio::test]
async fn a_directory_too_large_for_one_answer_lists_whole_and_in_order() {
    let big = Big::new(false).await;
    let (session, dir, items) = (&big.session, &big.dir, &big.items);

    let listed = session.children(dir).await.expect("the listing");
    let names: Vec<&str> = listed.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names.len(), CHILDREN, "every child is listed");
    assert!(
        names == items.ordered,
        "the children come in creation order (by create revision, then name)"
    );
    let sequences: Vec<u64> = listed
        .iter()
        .map(|c| c.sequence.expect("a sequence"))
        .collect();
    assert!(sequences.windows(2).all(|w| w[0] <= w[1]));

    // A part of it by name prefix (a queue's lane): exactly those, in order.
    let lane: Vec<&str> = items
        .ordered
        .iter()
        .map(String::as_str)
        .filter(|n| n.starts_with("_c_a"))
        .collect();
    let part = session
        .children_prefixed(dir, "_c_a")
        .await
        .expect("the lane's listing");
    let part: Vec<&str> = part.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(part, lane);

    big.done().await;
}

/// While one client deletes the items from the front (in order, 16 to a
/// Txn) and another adds items at the back, every listing of the
/// directory must be one moment's: a run of consecutive items, whole. A
/// listing read in parts at different moments would miss some items
/// between the first and last it shows, or show some already deleted.
#[tokio::test]
async fn a_large_listing_is_one_snapshot_while_the_directory_changes() {
    let big = Big::new(false).await;
    let (session, raw, dir, items) = (&big.session, &big.raw, &big.dir, &big.items);
    let mut index: HashMap<String, usize> = items
        .ordered
        .iter()
        .enumerate()
        .map(|(i, n)| (n.clone(), i))
        .collect();
    // The names appended later, known ahead (index CHILDREN + j).
    let appended: Vec<String> = (0..20_000).map(|j| item_name(CHILDREN + j)).collect();
    index.extend(
        appended
            .iter()
            .enumerate()
            .map(|(j, n)| (n.clone(), CHILDREN + j)),
    );

    let stop = Arc::new(AtomicBool::new(false));
    let deleter = {
        let (stop, mut kv, dir) = (stop.clone(), raw.kv_client(), dir.clone());
        // Half of them: every listing keeps some.
        let front = items.ordered[..CHILDREN / 2].to_vec();
        tokio::spawn(async move {
            let mut deleted = 0;
            for chunk in front.chunks(16) {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let dels = chunk
                    .iter()
                    .map(|n| TxnOp::delete(format!("{dir}/{n}"), None));
                kv.txn(Txn::new().and_then(dels.collect::<Vec<_>>()))
                    .await
                    .expect("a Txn of deletes");
                deleted += chunk.len();
            }
            deleted
        })
    };
    let appender = {
        let (stop, mut kv, dir) = (stop.clone(), raw.kv_client(), dir.clone());
        let back = appended.clone();
        tokio::spawn(async move {
            let mut added = 0;
            for name in &back {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                kv.put(format!("{dir}/{name}"), "", None)
                    .await
                    .expect("a put");
                added += 1;
            }
            added
        })
    };

    for round in 0..3 {
        let listed = session.children(dir).await.expect("the listing");
        let at: Vec<usize> = listed
            .iter()
            .map(|c| *index.get(&c.name).expect("a child this test made"))
            .collect();
        let (first, last) = (at[0], at[at.len() - 1]);
        assert!(
            at.windows(2).all(|w| w[0] + 1 == w[1]),
            "round {round}: the listing holds every item from #{first} to #{last}, in order, \
             and nothing else ({} listed)",
            at.len()
        );
    }
    stop.store(true, Ordering::Relaxed);
    let (deleted, added) = (
        deleter.await.expect("the deleter"),
        appender.await.expect("the appender"),
    );
    assert!(
        deleted > 0 && added > 0,
        "the directory changed while it was listed ({deleted} deleted, {added} added)"
    );

    big.done().await;
}

#[tokio::test]
async fn a_queue_of_more_items_than_one_answer_holds_is_taken_in_order() {
    let big = Big::new(false).await;
    let (session, top, dir, items) = (&big.session, &big.top, &big.dir, &big.items);
    let data: HashMap<&str, usize> = items
        .ordered
        .iter()
        .map(|n| {
            let i = n[n.len() - 10..].parse().expect("the index");
            (n.as_str(), i)
        })
        .collect();

    let queue = Queue::new(session, top).expect("the queue");
    for expected in items.ordered.iter().take(100) {
        let got = queue.poll().await.expect("a poll").expect("an item");
        let got: usize = String::from_utf8(got)
            .expect("text")
            .parse()
            .expect("an index");
        assert_eq!(
            got,
            data[expected.as_str()],
            "the head of the queue, in order"
        );
    }
    let left = session.children(dir).await.expect("the listing").len();
    assert_eq!(left, CHILDREN - 100, "each poll took one item");

    big.done().await;
}

/// A lease's end deletes all its keys in one revision, and etcd sends a
/// revision's events in one watch answer: 40,000 deletions are ~5 MB, over
/// tonic's default limit, and a tree watch opened again from that revision
/// met the same answer again, for ever. It must report every deleted node,
/// then what comes after.
#[tokio::test]
async fn a_tree_watch_sees_one_revision_deleting_more_keys_than_one_answer_holds() {
    let big = Big::new(true).await;
    let (session, raw, top, dir, items) = (&big.session, &big.raw, &big.top, &big.dir, &big.items);
    let lease = big.lease.expect("the lease");

    let mut watch = session.watch_tree(top).await.expect("the tree watch");
    raw.lease_client()
        .revoke(lease)
        .await
        .expect("revoke the lease");
    let marker = format!("{top}/marker");
    raw.kv_client()
        .put(marker.as_str(), "", None)
        .await
        .expect("the marker");
    let mut gone: HashSet<String> = items.ordered.iter().map(|n| format!("{dir}/{n}")).collect();
    let seen_all = async {
        loop {
            match watch.next().await {
                Some(Ok(TreeChange::Changed(p))) if p == marker => return,
                Some(Ok(TreeChange::Changed(p))) => {
                    gone.remove(&p);
                }
                other => panic!("a change, not {other:?}"),
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), seen_all)
        .await
        .expect("the tree watch reports the deletions and the marker within 60 s");
    assert!(gone.is_empty(), "{} deleted nodes not reported", gone.len());

    drop(watch);
    big.done().await;
}

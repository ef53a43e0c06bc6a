//! Conformance of the set partitioner ([`coord_core::recipes::Partitioner`],
//! kazoo's `SetPartitioner`): every item has exactly one owner, and no item
//! ever has two at once, through joins and session expiries.
//!
//! Each member is driven as a user would drive it: on `Acquired(items)` it
//! starts believing it owns them, on `Release` it stops believing and then
//! calls `release()`. An [`OverlapRecorder`] shared by all members records
//! each belief as it begins and ends and notes every moment an item is
//! believed owned by two members at once.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use coord_core::recipes::{PartitionState, Partitioner, SetPartitioner};
use coord_core::{Error, Session};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::{close_all, eventually, within, Harness};

/// Member `member` of the partitioner at `dir`, splitting `items`, joined.
async fn join<I: IntoIterator<Item = S>, S: Into<String>>(
    session: &Session,
    dir: &str,
    member: &str,
    items: I,
) -> coord_core::Result<Partitioner> {
    SetPartitioner::new(session, dir, member, items)?
        .join()
        .await
}

/// Who believes it owns what, and every double ownership seen.
#[derive(Debug, Default)]
pub struct OverlapRecorder {
    inner: Mutex<Recorded>,
}

#[derive(Debug, Default)]
struct Recorded {
    owners: BTreeMap<String, String>,
    overlaps: Vec<(String, String, String)>,
    ended: BTreeMap<String, (PartitionState, tokio::time::Instant)>,
    seen: BTreeMap<String, PartitionState>,
    /// When each (member, item) belief last began.
    began: BTreeMap<(String, String), tokio::time::Instant>,
}

impl OverlapRecorder {
    fn lock(&self) -> std::sync::MutexGuard<'_, Recorded> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `member` now believes it owns `items`.
    fn begin(&self, member: &str, items: &[String]) {
        let now = tokio::time::Instant::now();
        let mut r = self.lock();
        for item in items {
            if let Some(other) = r.owners.get(item).cloned() {
                if other != member {
                    r.overlaps
                        .push((item.clone(), other.clone(), member.to_owned()));
                }
            }
            r.owners.insert(item.clone(), member.to_owned());
            r.began.insert((member.to_owned(), item.clone()), now);
        }
    }

    /// `member` believes it owns nothing any more.
    fn end(&self, member: &str) {
        self.lock().owners.retain(|_, m| m != member);
    }

    fn saw(&self, member: &str, state: &PartitionState) {
        self.lock().seen.insert(member.to_owned(), state.clone());
    }

    fn finished(&self, member: &str, state: PartitionState) {
        let now = tokio::time::Instant::now();
        self.lock()
            .ended
            .entry(member.to_owned())
            .or_insert((state, now));
    }

    /// Each member's items as believed now.
    pub(crate) fn split(&self) -> BTreeMap<String, Vec<String>> {
        let mut by = BTreeMap::<String, Vec<String>>::new();
        for (item, m) in &self.lock().owners {
            by.entry(m.clone()).or_default().push(item.clone());
        }
        by
    }

    /// Every (item, earlier owner, later owner) seen at once.
    pub(crate) fn overlaps(&self) -> Vec<(String, String, String)> {
        self.lock().overlaps.clone()
    }

    pub(crate) fn ended(&self, member: &str) -> Option<PartitionState> {
        self.lock().ended.get(member).map(|(s, _)| s.clone())
    }

    /// When `member` ended (`Failed`, `Closed`…), if it did.
    pub(crate) fn ended_at(&self, member: &str) -> Option<tokio::time::Instant> {
        self.lock().ended.get(member).map(|(_, t)| *t)
    }

    /// When `member` last began believing it owns `item`.
    pub(crate) fn began_at(&self, member: &str, item: &str) -> Option<tokio::time::Instant> {
        self.lock()
            .began
            .get(&(member.to_owned(), item.to_owned()))
            .copied()
    }
}

/// A member driven by a task, as a user would drive it.
pub(crate) struct Driven {
    close: Option<oneshot::Sender<()>>,
    task: JoinHandle<coord_core::Result<()>>,
}

impl Driven {
    /// Close the partitioner and return what `close` returned.
    pub(crate) async fn close(mut self) -> coord_core::Result<()> {
        if let Some(tx) = self.close.take() {
            let _ = tx.send(());
        }
        within("the driver closes", self.task)
            .await
            .expect("driver task")
    }
}

/// Join as `member` and drive it: record beliefs in `rec`, acknowledge
/// every `Release` after the belief has ended.
pub(crate) async fn drive(
    session: &Session,
    dir: &str,
    member: &str,
    items: &[String],
    rec: &Arc<OverlapRecorder>,
) -> Driven {
    let p = join(session, dir, member, items.iter().cloned())
        .await
        .expect("join");
    let rec = rec.clone();
    let member = member.to_owned();
    let (close_tx, mut close_rx) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let mut w = p.watch();
        loop {
            let state = tokio::select! {
                s = w.next() => s,
                _ = &mut close_rx => {
                    rec.end(&member);
                    rec.finished(&member, PartitionState::Closed);
                    return p.close().await;
                }
            };
            if let Some(s) = &state {
                rec.saw(&member, s);
            }
            match state {
                Some(PartitionState::Acquired(items)) => {
                    assert_eq!(p.owned(), items, "owned() while Acquired");
                    rec.begin(&member, &items);
                }
                Some(PartitionState::Release) => {
                    rec.end(&member);
                    // An error (the session ended meanwhile) fails the
                    // partitioner: the next state says so.
                    let _ = p.release().await;
                }
                Some(PartitionState::Allocating) => {}
                Some(other) => {
                    rec.end(&member);
                    assert!(p.owned().is_empty(), "owns items when {other:?}");
                    rec.finished(&member, other);
                    let _ = close_rx.await;
                    return p.close().await;
                }
                None => {
                    rec.end(&member);
                    let _ = close_rx.await;
                    return p.close().await;
                }
            }
        }
    });
    Driven {
        close: Some(close_tx),
        task,
    }
}

fn items() -> Vec<String> {
    (0..10).map(|i| format!("item-{i}")).collect()
}

/// kazoo's rule written out: sorted items, member `i` of `n` takes every
/// `n`th from the `i`th.
fn expect(members: &[&str], shares: &[&[usize]]) -> BTreeMap<String, Vec<String>> {
    members
        .iter()
        .zip(shares)
        .map(|(m, s)| {
            (
                (*m).to_owned(),
                s.iter().map(|i| format!("item-{i}")).collect(),
            )
        })
        .collect()
}

/// Wait until the beliefs are exactly `want` (every item owned once).
pub(crate) async fn await_split(
    what: &str,
    rec: &OverlapRecorder,
    want: &BTreeMap<String, Vec<String>>,
) {
    let deadline = tokio::time::Instant::now() + crate::CONDITION_DEADLINE;
    while &rec.split() != want {
        if tokio::time::Instant::now() > deadline {
            let r = rec.lock();
            panic!(
                "timed out waiting for: {what}: owners {:?}, last states seen {:?}",
                r.owners, r.seen
            );
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

/// Three members split ten items: every item owned by exactly one member,
/// the shares disjoint and as kazoo's default split says; bad input is
/// refused before any I/O.
pub async fn partitioner_splits_items(h: &dyn Harness) {
    let dir = h.root("partitioner_splits_items");
    let sessions = crate::open_n(h, 3).await;
    for (member, item) in [("", "a"), ("m/x", "a"), ("m", ""), ("m", "a/b")] {
        assert!(
            matches!(
                join(&sessions[0], &dir, member, [item]).await,
                Err(Error::InvalidPath { .. })
            ),
            "member {member:?} item {item:?} must be refused"
        );
    }
    let rec = Arc::new(OverlapRecorder::default());
    let items = items();
    let mut members = Vec::new();
    for (s, id) in sessions.iter().zip(["m-a", "m-b", "m-c"]) {
        members.push(drive(s, &dir, id, &items, &rec).await);
    }
    let want = expect(
        &["m-a", "m-b", "m-c"],
        &[&[0, 3, 6, 9], &[1, 4, 7], &[2, 5, 8]],
    );
    await_split("three members own the ten items", &rec, &want).await;
    assert_eq!(rec.overlaps(), vec![], "items owned twice at once");
    // A second member with a live member's id is refused.
    assert!(matches!(
        join(&sessions[0], &dir, "m-a", items.iter().cloned()).await,
        Err(Error::AlreadyExists { .. })
    ));
    for m in members {
        m.close().await.expect("close");
    }
    assert!(rec.split().is_empty(), "nothing owned after close");
    close_all(&sessions).await;
}

/// A fourth member joins three that own ten items: all re-split (the
/// others release first), the newcomer gets its share, and at no moment is
/// an item believed owned by two members.
pub async fn partitioner_join_resplits_without_overlap(h: &dyn Harness) {
    let dir = h.root("partitioner_join_resplits_without_overlap");
    let sessions = crate::open_n(h, 4).await;
    let rec = Arc::new(OverlapRecorder::default());
    let items = items();
    let mut members = Vec::new();
    for (s, id) in sessions.iter().zip(["m-a", "m-b", "m-c"]) {
        members.push(drive(s, &dir, id, &items, &rec).await);
    }
    let three = expect(
        &["m-a", "m-b", "m-c"],
        &[&[0, 3, 6, 9], &[1, 4, 7], &[2, 5, 8]],
    );
    await_split("three members own the ten items", &rec, &three).await;
    members.push(drive(&sessions[3], &dir, "m-d", &items, &rec).await);
    let four = expect(
        &["m-a", "m-b", "m-c", "m-d"],
        &[&[0, 4, 8], &[1, 5, 9], &[2, 6], &[3, 7]],
    );
    await_split("four members own the ten items", &rec, &four).await;
    assert_eq!(rec.overlaps(), vec![], "items owned twice at once");
    // And back: the newcomer leaves, the three take its items.
    members.pop().expect("m-d").close().await.expect("close");
    await_split("three again", &rec, &three).await;
    assert_eq!(rec.overlaps(), vec![], "items owned twice at once");
    for m in members {
        m.close().await.expect("close");
    }
    close_all(&sessions).await;
}

/// A member's session expires on the server: it reports `Failed` and owns
/// nothing, and its items move to the others, split between them. The
/// survivors never own an item at once. (The expired member's own belief
/// lasts until its client learns of the expiry; an expiry forced on the
/// server skips the lease margin that normally covers it, so only overlaps
/// between survivors are errors here.)
pub async fn partitioner_expired_member_items_move(h: &dyn Harness) {
    let dir = h.root("partitioner_expired_member_items_move");
    let sessions = crate::open_n(h, 3).await;
    let rec = Arc::new(OverlapRecorder::default());
    let items = items();
    let mut members = Vec::new();
    for (s, id) in sessions.iter().zip(["m-a", "m-b", "m-c"]) {
        members.push(drive(s, &dir, id, &items, &rec).await);
    }
    let three = expect(
        &["m-a", "m-b", "m-c"],
        &[&[0, 3, 6, 9], &[1, 4, 7], &[2, 5, 8]],
    );
    await_split("three members own the ten items", &rec, &three).await;
    h.expire(&sessions[1]).await;
    eventually("the expired member reports Failed", || async {
        rec.ended("m-b") == Some(PartitionState::Failed)
    })
    .await;
    let two = expect(&["m-a", "m-c"], &[&[0, 2, 4, 6, 8], &[1, 3, 5, 7, 9]]);
    await_split("the two survivors own the ten items", &rec, &two).await;
    let survivors_overlap: Vec<_> = rec
        .overlaps()
        .into_iter()
        .filter(|(_, a, b)| a != "m-b" && b != "m-b")
        .collect();
    assert_eq!(survivors_overlap, vec![], "survivors owned an item at once");
    let doomed = members.remove(1);
    assert!(
        doomed.close().await.is_err(),
        "closing the expired member reports why it failed"
    );
    for m in members {
        m.close().await.expect("close");
    }
    close_all(&sessions).await;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __partitioner_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            partitioner::partitioner_splits_items,
            partitioner::partitioner_join_resplits_without_overlap,
            partitioner::partitioner_expired_member_items_move,
        );
    };
}

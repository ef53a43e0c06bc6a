//! Ordered neighbours in the primitive contract: `place` and
//! `first_children` give what a full listing gives
//! ([`coord_core::backend::order::place_in`] and
//! [`coord_core::backend::order::first_in`] over `children`), in a quiet
//! directory of every shape, under other sessions' concurrent creates and
//! deletes, and for a name made again (etcd lends a deleted node's name to
//! its session's next create).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use coord_core::backend::order::{first_in, place_in};
use coord_core::{Blockers, Child, CreateMode, Created, Error, Place, Session};

use super::support::assert_err;
use crate::Harness;

/// The reader markers a read/write lock waits behind (`layout::READ`,
/// `layout::KAZOO_READ`).
pub(super) const READERS: &[&str] = &["__READ__", "__rlock__"];

/// The contender `created` made, as a child of its directory.
pub(super) fn child_of(created: &coord_core::Created) -> Child {
    let name = created
        .path
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_owned();
    Child::new(name, created.sequence)
}

/// `m` contenders made by `s` in `dir`, in order: readers, with a writer
/// every third, so a reader-blind wait has its own answer to check.
pub(super) async fn in_between(s: &Session, dir: &str, m: usize) -> Vec<Created> {
    let mut made = Vec::with_capacity(m);
    for i in 0..m {
        let marker = if i % 3 == 1 { "__WRIT__" } else { "__READ__" };
        let c = s
            .create(
                &format!("{dir}/_c_b{i}-{marker}"),
                b"",
                CreateMode::EphemeralSequential,
            )
            .await
            .expect("create B");
        made.push(c);
    }
    made
}

/// Deletes of some nodes, the last made first, sent one at a time from a
/// task: how many were sent and how many answered bound how many are left
/// during any call made meanwhile.
pub(super) struct NearestFirst {
    /// Deletes sent.
    pub started: Arc<AtomicUsize>,
    /// Deletes answered.
    pub done: Arc<AtomicUsize>,
    /// The task sending them.
    pub task: tokio::task::JoinHandle<()>,
}

impl NearestFirst {
    /// Start deleting `nodes` through `s`, the last first.
    pub(super) fn spawn(s: &Session, nodes: &[Created]) -> Self {
        let started = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        let paths: Vec<String> = nodes.iter().rev().map(|c| c.path.clone()).collect();
        let (sent, answered, s) = (started.clone(), done.clone(), s.clone());
        let task = tokio::spawn(async move {
            for p in paths {
                sent.fetch_add(1, Ordering::SeqCst);
                s.delete(&p, None).await.expect("delete B");
                answered.fetch_add(1, Ordering::SeqCst);
                tokio::task::yield_now().await;
            }
        });
        NearestFirst {
            started,
            done,
            task,
        }
    }
}

/// Every `place` and `first_children` answer in `dir` equals the default's
/// over one listing (the directory must be quiet).
async fn assert_like_a_listing(s: &Session, dir: &str, extra: &[Child]) {
    let kids = s.children(dir).await.expect("children");
    let blockers = [
        Blockers::All,
        Blockers::Unmarked(READERS),
        Blockers::Unmarked(&["nothing-has-this"]),
    ];
    for me in kids.iter().chain(extra).filter(|c| c.sequence.is_some()) {
        for b in blockers {
            let got = s.place(dir, me, b).await.expect("place");
            assert_eq!(
                got,
                place_in(&kids, me, b),
                "place({me:?}, {b:?}) in {kids:?}"
            );
        }
    }
    for n in [1, 2, 3, kids.len(), kids.len() + 1, kids.len() + 7] {
        let got = s.first_children(dir, n).await.expect("first_children");
        assert_eq!(
            got,
            first_in(kids.clone(), n),
            "first_children({n}) of {kids:?}"
        );
    }
}

/// In a quiet directory of every shape — sequential children of both
/// sessions with lock, read and write markers, persistent and ephemeral,
/// a child without a sequence, one with a child of its own (a grandchild
/// must never be an answer), a deleted one — `place` and `first_children`
/// equal the defaults over `children`; a deleted contender, a wrong
/// sequence and a missing directory are `Gone`; `first_children` of a
/// missing directory is `NotFound`; `n = 0` is empty; a contender without
/// a sequence is refused before any I/O.
pub async fn prim_place_equals_a_listing(h: &dyn Harness) {
    let root = h.root("prim_place_equals_a_listing");
    let (a, b) = (h.open().await, h.open().await);
    let dir = format!("{root}/q");
    a.ensure_dir(&dir).await.expect("ensure_dir");
    // Empty: every contender is gone, nothing is first.
    let ghost = Child::new("_c_x-lock-0000000001".into(), Some(1));
    assert_eq!(
        a.place(&dir, &ghost, Blockers::All).await.expect("place"),
        Place::Gone
    );
    assert!(a.first_children(&dir, 3).await.expect("first").is_empty());

    let shapes = [
        ("_c_1-lock-", CreateMode::EphemeralSequential),
        ("_c_2-__READ__", CreateMode::EphemeralSequential),
        ("_c_3-__READ__", CreateMode::PersistentSequential),
        ("_c_4-__WRIT__", CreateMode::EphemeralSequential),
        ("_c_5-__rlock__", CreateMode::EphemeralSequential),
        ("_c_6-lock-", CreateMode::PersistentSequential),
        ("_c_7-__READ__", CreateMode::EphemeralSequential),
        ("_c_8-__WRIT__", CreateMode::EphemeralSequential),
        ("_c_9-__READ__", CreateMode::EphemeralSequential),
    ];
    let mut made = Vec::new();
    for (i, (name, mode)) in shapes.iter().enumerate() {
        let s = if i % 2 == 0 { &a } else { &b };
        made.push(
            s.create(&format!("{dir}/{name}"), b"", *mode)
                .await
                .expect("create"),
        );
        if i == 2 {
            // A plain child, and a persistent one with a child of its own,
            // made among the sequential ones.
            a.create(&format!("{dir}/plain"), b"", CreateMode::Persistent)
                .await
                .expect("create plain");
            let parent = a
                .create(
                    &format!("{dir}/parent-"),
                    b"",
                    CreateMode::PersistentSequential,
                )
                .await
                .expect("create parent");
            a.create(
                &format!("{}/grandchild-", parent.path),
                b"",
                CreateMode::PersistentSequential,
            )
            .await
            .expect("create grandchild");
        }
    }
    // A deleted contender, between live ones.
    let deleted = child_of(&made[4]);
    a.delete(&made[4].path, None).await.expect("delete");
    let extra = [
        deleted.clone(),
        Child::new(child_of(&made[5]).name, made[5].sequence.map(|s| s + 1)),
    ];
    assert_like_a_listing(&b, &dir, &extra).await;
    for me in &extra {
        assert_eq!(
            b.place(&dir, me, Blockers::All).await.expect("place"),
            Place::Gone,
            "{me:?}: no child has this name and sequence"
        );
    }
    // The last reader waits behind the nearest writer, not the readers.
    let last = child_of(&made[8]);
    assert_eq!(
        a.place(&dir, &last, Blockers::Unmarked(READERS))
            .await
            .expect("place"),
        Place::Behind(child_of(&made[7]))
    );
    assert_eq!(
        a.place(&dir, &child_of(&made[0]), Blockers::All)
            .await
            .expect("place"),
        Place::First
    );

    // Sessions end: their ephemeral nodes leave the order.
    b.close().await.expect("close");
    assert_like_a_listing(&a, &dir, &extra).await;

    let missing = format!("{root}/missing");
    assert_eq!(
        a.place(&missing, &child_of(&made[0]), Blockers::All)
            .await
            .expect("place in a missing dir"),
        Place::Gone
    );
    assert_err!(a.first_children(&missing, 1).await, Error::NotFound { .. });
    assert!(a
        .first_children(&missing, 0)
        .await
        .expect("n = 0")
        .is_empty());
    assert_err!(
        a.place(&dir, &Child::new("plain".into(), None), Blockers::All)
            .await,
        Error::InvalidArgument(_)
    );
    a.close().await.expect("close");
}

/// Nodes `B1 < … < Bm` between two anchors `A1 < A2` are deleted nearest
/// first by another session while a third keeps creating later nodes (with
/// and without a sequence, and deleting them), and the checker asks where
/// `A2` stands, again and again. Every answer must be one a listing could
/// have given at some moment during the call: with `k` of the `Bs` still
/// there, `place(A2)` is what the default says for `A1, B1..Bk, A2`, for
/// some `k` between the count left after the call and the count left before
/// it — never a node whose delete was answered before the call, never a
/// later node, never `Gone` — and the head (`first_children`) is always
/// `A1`, then `B1` or `A2`.
pub async fn prim_place_under_churn(h: &dyn Harness) {
    const M: usize = 24;
    let root = h.root("prim_place_under_churn");
    let (checker, deleter, creator) = (h.open().await, h.open().await, h.open().await);
    let dir = format!("{root}/q");
    checker.ensure_dir(&dir).await.expect("ensure_dir");
    let a1 = checker
        .create(
            &format!("{dir}/_c_a1-lock-"),
            b"",
            CreateMode::EphemeralSequential,
        )
        .await
        .expect("create A1");
    let bs = in_between(&deleter, &dir, M).await;
    let a2 = checker
        .create(
            &format!("{dir}/_c_a2-__WRIT__"),
            b"",
            CreateMode::EphemeralSequential,
        )
        .await
        .expect("create A2");
    let me = child_of(&a2);
    let model = |k: usize| -> Vec<Child> {
        std::iter::once(child_of(&a1))
            .chain(bs[..k].iter().map(child_of))
            .chain(std::iter::once(me.clone()))
            .collect()
    };

    let deletes = NearestFirst::spawn(&deleter, &bs);
    let (started, done) = (deletes.started.clone(), deletes.done.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let churning = {
        let (stop, creator, dir) = (stop.clone(), creator.clone(), dir.clone());
        tokio::spawn(async move {
            let mut i = 0u64;
            while !stop.load(Ordering::SeqCst) {
                let later = creator
                    .create(
                        &format!("{dir}/_c_c{i}-lock-"),
                        b"",
                        CreateMode::EphemeralSequential,
                    )
                    .await
                    .expect("create later");
                let plain = format!("{dir}/plain-{i}");
                creator
                    .create(&plain, b"", CreateMode::Ephemeral)
                    .await
                    .expect("create plain");
                if i.is_multiple_of(2) {
                    creator
                        .delete(&later.path, None)
                        .await
                        .expect("delete later");
                    creator.delete(&plain, None).await.expect("delete plain");
                }
                i += 1;
                // An in-process backend never suspends: let the others run.
                tokio::task::yield_now().await;
            }
        })
    };

    let mut asked = 0;
    loop {
        let finished = done.load(Ordering::SeqCst) == M;
        for blockers in [Blockers::All, Blockers::Unmarked(READERS)] {
            // `k` Bs are there: at most M - (deletes answered before),
            // at least M - (deletes sent after).
            let hi = M - done.load(Ordering::SeqCst);
            let got = checker.place(&dir, &me, blockers).await.expect("place");
            let lo = M - started.load(Ordering::SeqCst);
            let could: Vec<Place> = (lo..=hi)
                .map(|k| place_in(&model(k), &me, blockers))
                .collect();
            assert!(
                could.contains(&got),
                "place(A2, {blockers:?}) = {got:?}: with {lo}..={hi} of the in-between \
                 nodes there, a listing could give only {could:?}"
            );
            let hi = M - done.load(Ordering::SeqCst);
            let head = checker.first_children(&dir, 2).await.expect("first");
            let lo = M - started.load(Ordering::SeqCst);
            let could: Vec<Vec<Child>> = (lo..=hi).map(|k| first_in(model(k), 2)).collect();
            assert!(
                could.contains(&head),
                "first_children(2) = {head:?}: with {lo}..={hi} of the in-between \
                 nodes there, a listing could give only {could:?}"
            );
            asked += 1;
        }
        if finished {
            break;
        }
    }
    stop.store(true, Ordering::SeqCst);
    deletes.task.await.expect("deleter");
    churning.await.expect("creator");
    assert!(asked >= 2, "asked {asked} times");
    assert_eq!(
        checker
            .place(&dir, &me, Blockers::All)
            .await
            .expect("place"),
        Place::Behind(child_of(&a1)),
        "every in-between node is gone"
    );
    // Quiet again: every answer equals a listing's, later nodes included.
    assert_like_a_listing(&checker, &dir, &[]).await;
    for s in [checker, deleter, creator] {
        s.close().await.expect("close");
    }
}

/// A contender deleted and made again at the same prefix by the same
/// session (on etcd, at the same name: the session lends it again) is
/// another node: its old sequence is `Gone`, the new one stands where a
/// listing says, and `first_children` shows the new one only.
pub async fn prim_place_gone_for_an_old_sequence(h: &dyn Harness) {
    let root = h.root("prim_place_gone_for_an_old_sequence");
    let (a, b) = (h.open().await, h.open().await);
    let dir = format!("{root}/q");
    a.ensure_dir(&dir).await.expect("ensure_dir");
    let before = b
        .create(
            &format!("{dir}/_c_b-lock-"),
            b"",
            CreateMode::EphemeralSequential,
        )
        .await
        .expect("create");
    let prefix = format!("{dir}/_c_a-lock-");
    let mut old = child_of(
        &a.create(&prefix, b"", CreateMode::EphemeralSequential)
            .await
            .expect("create"),
    );
    for round in 0..4 {
        a.delete(&format!("{dir}/{}", old.name), None)
            .await
            .expect("delete");
        let new = child_of(
            &a.create(&prefix, b"", CreateMode::EphemeralSequential)
                .await
                .expect("create again"),
        );
        assert_ne!(new.sequence, old.sequence, "round {round}: a new sequence");
        for s in [&a, &b] {
            assert_eq!(
                s.place(&dir, &old, Blockers::All).await.expect("place"),
                Place::Gone,
                "round {round}: {old:?} was deleted (now {new:?})"
            );
            assert_eq!(
                s.place(&dir, &new, Blockers::All).await.expect("place"),
                Place::Behind(child_of(&before)),
                "round {round}: {new:?}"
            );
        }
        let head = a.first_children(&dir, 5).await.expect("first");
        assert_eq!(head, vec![child_of(&before), new.clone()], "round {round}");
        old = new;
    }
    b.close().await.expect("close");
    assert_eq!(
        a.place(&dir, &old, Blockers::All).await.expect("place"),
        Place::First,
        "the earlier contender's session ended"
    );
    a.close().await.expect("close");
}

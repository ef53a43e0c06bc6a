//! A contender's create that also says where the new node stands
//! (`create_contender`): the place it answers is the one a listing taken
//! right after the create gives, in a quiet directory of every shape and
//! under other sessions' concurrent deletes and creates; a backend that
//! says it reads the place with the create
//! (`places_at_create`) answers it whenever the nodes just before the new
//! one tell; the node is an ordinary ephemeral-sequential one; bad input is
//! refused before any I/O.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use coord_core::backend::order::place_in;
use coord_core::{Blockers, Child, CreateMode, Error, Place, Session};

use super::neighbours::{child_of, in_between, NearestFirst, READERS};
use super::support::assert_err;
use crate::Harness;

/// The blockers a lock, a read/write lock's reader and a wait behind
/// nothing use.
const BLOCKERS: [Blockers<'static>; 3] = [
    Blockers::All,
    Blockers::Unmarked(READERS),
    Blockers::Unmarked(&["nothing-has-this"]),
];

/// Create a contender in the quiet `dir` with each marker and each kind of
/// blockers: the place answered must be a listing's right after it (and
/// there must be one when the backend reads it with the create and
/// `must_tell`); the contender is deleted again.
async fn assert_placed_like_a_listing(s: &Session, dir: &str, must_tell: bool) {
    for marker in ["lock-", "__READ__", "__WRIT__"] {
        for b in BLOCKERS {
            let path = format!("{dir}/_c_z-{marker}");
            let (made, place) = s.create_contender(&path, b"v", b).await.expect("create");
            let me = child_of(&made);
            assert!(
                me.sequence.is_some(),
                "{made:?}: a contender has a sequence"
            );
            let kids = s.children(dir).await.expect("children");
            let listed = place_in(&kids, &me, b);
            match place {
                Some(p) => assert_eq!(p, listed, "{me:?} with {b:?} in {kids:?}"),
                None => assert!(
                    !(must_tell && s.places_at_create()),
                    "{me:?} with {b:?}: the backend reads the place with the create, \
                     and the few nodes before it tell it ({listed:?})"
                ),
            }
            s.delete(&made.path, None).await.expect("delete");
        }
    }
}

/// In a quiet directory — empty; then sequential children of two sessions
/// with lock, read and write markers, a child without a sequence and one
/// with a child of its own (a grandchild is never an answer); then more
/// readers than the nearest few — a contender's create answers the place a
/// listing gives right after it. Its node is an ordinary
/// ephemeral-sequential one (its data, gone with its session), and a bad
/// path is refused before any I/O.
pub async fn prim_create_contender_places_like_a_listing(h: &dyn Harness) {
    let root = h.root("prim_create_contender_places_like_a_listing");
    let (a, b) = (h.open().await, h.open().await);
    let dir = format!("{root}/q");
    a.ensure_dir(&dir).await.expect("ensure_dir");
    assert_placed_like_a_listing(&a, &dir, true).await;

    let shapes = [
        "_c_1-lock-",
        "_c_2-__READ__",
        "_c_3-__WRIT__",
        "_c_4-__rlock__",
        "_c_5-__READ__",
    ];
    for (i, name) in shapes.iter().enumerate() {
        let s = if i % 2 == 0 { &a } else { &b };
        s.create(
            &format!("{dir}/{name}"),
            b"",
            CreateMode::EphemeralSequential,
        )
        .await
        .expect("create");
        if i == 1 {
            a.create(&format!("{dir}/plain"), b"", CreateMode::Persistent)
                .await
                .expect("create plain");
            a.create(
                &format!("{dir}/plain/grandchild-"),
                b"",
                CreateMode::PersistentSequential,
            )
            .await
            .expect("create grandchild");
        }
    }
    assert_placed_like_a_listing(&a, &dir, true).await;
    assert_placed_like_a_listing(&b, &dir, true).await;

    // More readers than the nearest few: a reader's place lies further
    // back (a backend that reads a window may not tell, but must not err).
    for _ in 0..12 {
        b.create(
            &format!("{dir}/_c_r-__READ__"),
            b"",
            CreateMode::EphemeralSequential,
        )
        .await
        .expect("create reader");
    }
    assert_placed_like_a_listing(&a, &dir, false).await;

    // An ordinary node: its data, its sequence after every other, gone
    // with its session.
    let (made, _) = b
        .create_contender(&format!("{dir}/_c_last-lock-"), b"data", Blockers::All)
        .await
        .expect("create");
    let node = a.get(&made.path).await.expect("get").expect("there");
    assert_eq!(node.data, b"data");
    let kids = a.children(&dir).await.expect("children");
    let newest = kids.iter().rfind(|c| c.sequence.is_some());
    assert_eq!(newest, Some(&child_of(&made)), "the newest in {kids:?}");
    b.close().await.expect("close");
    assert!(
        !a.exists(&made.path).await.expect("exists"),
        "ephemeral: gone with its session"
    );

    for bad in ["/", "no-slash", &format!("{dir}/a//b")] {
        assert_err!(
            a.create_contender(bad, b"", Blockers::All).await,
            Error::InvalidPath { .. }
        );
    }
    a.close().await.expect("close");
}

/// Nodes `B1 < … < Bm` after an anchor `A1` are deleted nearest first by
/// another session while a third makes and deletes grandchildren (which
/// fill the nodes just before a new one on etcd), and the checker keeps creating contenders (then deleting
/// each). Every place answered must be one a listing could have given
/// right after that create: with `k` of the `Bs` still there, what the
/// default says for `A1, B1..Bk, me`, for some `k` between the count left
/// after the call and the count left before it. A backend that reads the
/// place with the create answers it at least once.
pub async fn prim_create_contender_under_churn(h: &dyn Harness) {
    const M: usize = 24;
    let root = h.root("prim_create_contender_under_churn");
    let (checker, deleter, creator) = (h.open().await, h.open().await, h.open().await);
    let dir = format!("{root}/q");
    checker.ensure_dir(&dir).await.expect("ensure_dir");
    creator
        .ensure_dir(&format!("{dir}/sub"))
        .await
        .expect("ensure sub");
    let a1 = checker
        .create(
            &format!("{dir}/_c_a1-lock-"),
            b"",
            CreateMode::EphemeralSequential,
        )
        .await
        .expect("create A1");
    let bs = in_between(&deleter, &dir, M).await;
    let model = |k: usize, me: &Child| -> Vec<Child> {
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
                let grandchild = creator
                    .create(
                        &format!("{dir}/sub/g-"),
                        b"",
                        CreateMode::EphemeralSequential,
                    )
                    .await
                    .expect("create grandchild");
                // Under `sub` too: on etcd every child has a sequence (its
                // create revision), so a plain child made before a
                // contender would stand before it there.
                let plain = format!("{dir}/sub/plain-{i}");
                creator
                    .create(&plain, b"", CreateMode::Ephemeral)
                    .await
                    .expect("create plain");
                creator
                    .delete(&grandchild.path, None)
                    .await
                    .expect("delete grandchild");
                creator.delete(&plain, None).await.expect("delete plain");
                i += 1;
                tokio::task::yield_now().await;
            }
        })
    };

    let (mut asked, mut told) = (0, 0);
    loop {
        let finished = done.load(Ordering::SeqCst) == M;
        for blockers in [Blockers::All, Blockers::Unmarked(READERS)] {
            let hi = M - done.load(Ordering::SeqCst);
            let (made, got) = checker
                .create_contender(&format!("{dir}/_c_a2-__WRIT__"), b"", blockers)
                .await
                .expect("create");
            let lo = M - started.load(Ordering::SeqCst);
            let me = child_of(&made);
            if let Some(got) = got {
                let could: Vec<Place> = (lo..=hi)
                    .map(|k| place_in(&model(k, &me), &me, blockers))
                    .collect();
                assert!(
                    could.contains(&got),
                    "create_contender({blockers:?}) placed {me:?} {got:?}: with {lo}..={hi} \
                     of the earlier nodes there, a listing could give only {could:?}"
                );
                told += 1;
            }
            checker.delete(&made.path, None).await.expect("delete");
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
    if checker.places_at_create() {
        assert!(
            told > 0,
            "the place was never read with the create ({asked} asked)"
        );
    }
    let (made, place) = checker
        .create_contender(&format!("{dir}/_c_a3-lock-"), b"", Blockers::All)
        .await
        .expect("create");
    if checker.places_at_create() {
        assert_eq!(place, Some(Place::Behind(child_of(&a1))), "{made:?}");
    }
    for s in [checker, deleter, creator] {
        s.close().await.expect("close");
    }
}

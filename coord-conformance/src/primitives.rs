//! Conformance of the primitive contract ([`coord_core::PrimitiveSession`]
//! through [`coord_core::Session`]).
//!
//! Each test asserts only what the contract promises, so it holds on every
//! backend: versions are compared for equality only, sequences and stamps
//! for order only, a watch may fire for a change that does not matter, and
//! another session's view is awaited (`wait_gone`, a watch) rather than
//! read at once where a server may answer it from a lagging replica.

use coord_core::path::{MAX_DATA_LEN, MAX_PATH_LEN};
use std::time::{Duration, SystemTime};

use coord_core::{
    CreateMode, Error, Fence, Op, OpResult, PathErrorKind, Result, Session, SessionState, Watch,
};
use tokio::task::JoinSet;

use crate::{await_state, close_all, within, Harness};

/// Fail unless `$e` is `Err` matching `$p`.
macro_rules! assert_err {
    ($e:expr, $p:pat $(,)?) => {
        match $e {
            Err($p) => {}
            other => panic!(
                "{}: expected Err({}), got {:?}",
                stringify!($e),
                stringify!($p),
                other
            ),
        }
    };
}

/// One path per rule, each breaking only that rule, all under `root`.
fn bad_paths(root: &str) -> Vec<(String, PathErrorKind)> {
    use PathErrorKind::*;
    let mut v = vec![
        (String::new(), Empty),
        (root[1..].to_owned(), NotAbsolute),
        ("x".to_owned(), NotAbsolute),
        (format!("{root}//x"), EmptySegment),
        (format!("{root}/x/"), TrailingSlash),
        (format!("{root}/./x"), RelativeSegment),
        (format!("{root}/x/.."), RelativeSegment),
        (format!("{root}/../x"), RelativeSegment),
        (format!("{root}/{}", "x".repeat(MAX_PATH_LEN)), TooLong),
    ];
    for c in [
        '\u{0}', '\u{1}', '\n', '\u{1f}', '\u{7f}', '\u{9f}', '\u{e000}', '\u{f8ff}', '\u{fff0}',
        '\u{ffff}',
    ] {
        v.push((format!("{root}/a{c}b"), ForbiddenCharacter));
    }
    v
}

/// Every method that takes a path, called with `bad` in that place and
/// `good` (a valid path) elsewhere; each result reduced to `Result<()>`.
async fn with_path_everywhere(
    s: &Session,
    bad: &str,
    good: &str,
) -> Vec<(&'static str, Result<()>)> {
    let fence = |path: &str| Fence {
        path: path.to_owned(),
        stamp: 1,
    };
    let guard_good = fence(good);
    let data = b"d".to_vec();
    vec![
        (
            "create",
            s.create(bad, b"", CreateMode::Persistent).await.map(drop),
        ),
        (
            "create ephemeral sequential",
            s.create(bad, b"", CreateMode::EphemeralSequential)
                .await
                .map(drop),
        ),
        ("get", s.get(bad).await.map(drop)),
        ("exists", s.exists(bad).await.map(drop)),
        ("set", s.set(bad, b"", None).await.map(drop)),
        ("delete", s.delete(bad, None).await),
        ("take_leaf", s.take_leaf(bad).await.map(drop)),
        ("children", s.children(bad).await.map(drop)),
        (
            "children_prefixed",
            s.children_prefixed(bad, "a-").await.map(drop),
        ),
        ("children_watch", s.children_watch(bad).await.map(drop)),
        ("wait_gone", s.wait_gone(bad).await),
        ("watch_gone", s.watch_gone(bad).await.map(drop)),
        ("get_watch", s.get_watch(bad).await.map(drop)),
        ("ensure_dir", s.ensure_dir(bad).await),
        (
            "guarded fence",
            s.guarded(
                &fence(bad),
                Op::Delete {
                    path: good.to_owned(),
                    version: None,
                },
            )
            .await
            .map(drop),
        ),
        (
            "guarded create",
            s.guarded(
                &guard_good,
                Op::Create {
                    path: bad.to_owned(),
                    data: data.clone(),
                    mode: CreateMode::Persistent,
                },
            )
            .await
            .map(drop),
        ),
        (
            "guarded set",
            s.guarded(
                &guard_good,
                Op::Set {
                    path: bad.to_owned(),
                    data,
                    version: None,
                },
            )
            .await
            .map(drop),
        ),
        (
            "guarded delete",
            s.guarded(
                &guard_good,
                Op::Delete {
                    path: bad.to_owned(),
                    version: None,
                },
            )
            .await
            .map(drop),
        ),
    ]
}

/// The methods that refuse the root `/`, called with it.
async fn with_root_everywhere(s: &Session, good: &str) -> Vec<(&'static str, Result<()>)> {
    let all = with_path_everywhere(s, "/", good).await;
    let refuse_root = [
        "create",
        "create ephemeral sequential",
        "set",
        "delete",
        "take_leaf",
        "wait_gone",
        "watch_gone",
        "get_watch",
        "guarded fence",
        "guarded create",
        "guarded set",
        "guarded delete",
    ];
    all.into_iter()
        .filter(|(m, _)| refuse_root.contains(m))
        .collect()
}

/// Every write that carries data, with `data`.
async fn with_data_everywhere(
    s: &Session,
    path: &str,
    data: &[u8],
) -> Vec<(&'static str, Result<()>)> {
    let fence = Fence {
        path: path.to_owned(),
        stamp: 1,
    };
    vec![
        (
            "create",
            s.create(path, data, CreateMode::Persistent).await.map(drop),
        ),
        ("set", s.set(path, data, None).await.map(drop)),
        (
            "guarded create",
            s.guarded(
                &fence,
                Op::Create {
                    path: path.to_owned(),
                    data: data.to_vec(),
                    mode: CreateMode::Persistent,
                },
            )
            .await
            .map(drop),
        ),
        (
            "guarded set",
            s.guarded(
                &fence,
                Op::Set {
                    path: path.to_owned(),
                    data: data.to_vec(),
                    version: None,
                },
            )
            .await
            .map(drop),
        ),
    ]
}

fn assert_invalid_path(results: Vec<(&'static str, Result<()>)>, bad: &str, want: PathErrorKind) {
    for (method, got) in results {
        match got {
            Err(Error::InvalidPath { path, kind }) if kind == want && path == bad => {}
            other => panic!("{method}({bad:?}): expected InvalidPath {want:?}, got {other:?}"),
        }
    }
}

fn assert_invalid_argument(results: Vec<(&'static str, Result<()>)>) {
    for (method, got) in results {
        assert!(
            matches!(got, Err(Error::InvalidArgument(_))),
            "{method} with data over MAX_DATA_LEN: expected InvalidArgument, got {got:?}"
        );
    }
}

/// Every path rule, on every method that takes a path, gives
/// `InvalidPath` with the rule's kind; the root is refused where a node
/// below it is needed; data over the limit is `InvalidArgument`.
pub async fn prim_path_rules_typed_errors(h: &dyn Harness) {
    let root = h.root("prim_path_rules_typed_errors");
    let s = h.open().await;
    let good = format!("{root}/good");
    for (bad, kind) in bad_paths(&root) {
        let results = within("path checks", with_path_everywhere(&s, &bad, &good)).await;
        assert_invalid_path(results, &bad, kind);
    }
    let results = within("root checks", with_root_everywhere(&s, &good)).await;
    assert_invalid_path(results, "/", PathErrorKind::Root);
    // Reading the root and making sure it exists are fine.
    s.get("/").await.expect("get(/)");
    s.ensure_dir("/").await.expect("ensure_dir(/)");

    let too_big = vec![7u8; MAX_DATA_LEN + 1];
    assert_invalid_argument(with_data_everywhere(&s, &good, &too_big).await);
    assert!(
        !s.exists(&good).await.expect("exists"),
        "a refused write left a node behind"
    );
    s.close().await.expect("close");
}

/// Checks come before any I/O: on a closed session, an invalid path is
/// still `InvalidPath` and oversized data `InvalidArgument`, never
/// `SessionClosed`.
pub async fn prim_path_rules_checked_before_io(h: &dyn Harness) {
    let root = h.root("prim_path_rules_checked_before_io");
    let s = h.open().await;
    s.close().await.expect("close");
    let good = format!("{root}/good");
    assert_err!(s.get(&good).await, Error::SessionClosed);
    for (bad, kind) in bad_paths(&root) {
        assert_invalid_path(with_path_everywhere(&s, &bad, &good).await, &bad, kind);
    }
    assert_invalid_path(
        with_root_everywhere(&s, &good).await,
        "/",
        PathErrorKind::Root,
    );
    let too_big = vec![7u8; MAX_DATA_LEN + 1];
    assert_invalid_argument(with_data_everywhere(&s, &good, &too_big).await);
}

/// ZooKeeper's own tree, `/zookeeper` and everything below it, is refused
/// with `InvalidPath { kind: Reserved }` by every method that takes a path
/// and by the lock recipe, on every backend, before any I/O (a closed
/// session gives the same error); a `zookeeper` segment elsewhere is fine.
pub async fn prim_zookeeper_tree_reserved(h: &dyn Harness) {
    let root = h.root("prim_zookeeper_tree_reserved");
    let s = h.open().await;
    let good = format!("{root}/good");
    let reserved = ["/zookeeper", "/zookeeper/x", "/zookeeper/quota/a"];
    for bad in reserved {
        let results = within("reserved paths", with_path_everywhere(&s, bad, &good)).await;
        assert_invalid_path(results, bad, PathErrorKind::Reserved);
        match coord_core::recipes::Lock::new(&s, bad) {
            Err(Error::InvalidPath { kind, .. }) => assert_eq!(kind, PathErrorKind::Reserved),
            other => panic!("Lock::new({bad:?}): {:?}", other.map(drop)),
        }
    }
    let allowed = format!("{root}/zookeeper/x");
    s.ensure_dir(&format!("{root}/zookeeper"))
        .await
        .expect("a 'zookeeper' segment below the top is allowed");
    s.create(&allowed, b"", CreateMode::Persistent)
        .await
        .expect("create below a nested 'zookeeper'");
    s.close().await.expect("close");
    for bad in reserved {
        assert_invalid_path(
            with_path_everywhere(&s, bad, &good).await,
            bad,
            PathErrorKind::Reserved,
        );
    }
}

/// What the rules allow is accepted: names with dots, spaces and non-ASCII,
/// a path of exactly `MAX_PATH_LEN` bytes, data of exactly `MAX_DATA_LEN`.
pub async fn prim_path_limits_accepted(h: &dyn Harness) {
    let root = h.root("prim_path_limits_accepted");
    let s = h.open().await;
    for name in ["a.b", "..x", "x..", "...", ".x", "a b", "é-ü", "-_:@"] {
        let p = format!("{root}/{name}");
        let c = s
            .create(&p, name.as_bytes(), CreateMode::Persistent)
            .await
            .unwrap_or_else(|e| panic!("create {p:?}: {e}"));
        assert_eq!(c.path, p);
        let node = s.get(&p).await.expect("get").expect("the node exists");
        assert_eq!(node.data, name.as_bytes());
    }
    let prefix = format!("{root}/long-");
    let longest = format!("{prefix}{}", "y".repeat(MAX_PATH_LEN - prefix.len()));
    assert_eq!(longest.len(), MAX_PATH_LEN);
    s.create(&longest, b"", CreateMode::Persistent)
        .await
        .expect("a path of MAX_PATH_LEN bytes");
    assert!(s.exists(&longest).await.expect("exists"));

    let biggest = vec![0x5a; MAX_DATA_LEN];
    let p = format!("{root}/big");
    s.create(&p, &biggest, CreateMode::Persistent)
        .await
        .expect("data of MAX_DATA_LEN bytes");
    let node = s.get(&p).await.expect("get").expect("the node exists");
    assert_eq!(node.data.len(), MAX_DATA_LEN);
    assert!(node.data == biggest, "the data came back changed");
    s.close().await.expect("close");
}

/// Create makes missing parents (persistent), answers with the path asked
/// for, a first version that `get` agrees with, and refuses a taken path.
pub async fn prim_create_get_basics(h: &dyn Harness) {
    let root = h.root("prim_create_get_basics");
    let s = h.open().await;
    let leaf = format!("{root}/a/b/c");
    let c = s
        .create(&leaf, b"hello", CreateMode::Persistent)
        .await
        .expect("create with missing parents");
    assert_eq!(c.path, leaf);
    assert_eq!(c.sequence, None, "a non-sequential create has no sequence");
    for dir in [root.clone(), format!("{root}/a"), format!("{root}/a/b")] {
        let node = s.get(&dir).await.expect("get").expect("parent was made");
        assert!(!node.stat.ephemeral, "parents are persistent");
    }
    let node = s.get(&leaf).await.expect("get").expect("the node exists");
    assert_eq!(node.data, b"hello");
    assert_eq!(node.stat.version, c.version);
    assert_eq!(node.stat.stamp, c.stamp);
    assert!(!node.stat.ephemeral);

    assert_err!(
        s.create(&leaf, b"again", CreateMode::Persistent).await,
        Error::AlreadyExists { .. }
    );
    assert_err!(
        s.create(&leaf, b"again", CreateMode::Ephemeral).await,
        Error::AlreadyExists { .. }
    );
    let node = s.get(&leaf).await.expect("get").expect("still there");
    assert_eq!(node.data, b"hello", "a refused create changed the node");

    // Another session sees it too, and gets the same refusal.
    let t = h.open().await;
    assert_err!(
        t.create(&leaf, b"", CreateMode::Persistent).await,
        Error::AlreadyExists { .. }
    );
    assert!(t.exists(&leaf).await.expect("exists"));
    s.close().await.expect("close");
    t.close().await.expect("close");
}

/// Reading, writing and deleting what is not there.
pub async fn prim_missing_nodes(h: &dyn Harness) {
    let root = h.root("prim_missing_nodes");
    let s = h.open().await;
    s.ensure_dir(&root).await.expect("ensure_dir");
    let missing = format!("{root}/missing");
    assert!(s.get(&missing).await.expect("get").is_none());
    assert!(!s.exists(&missing).await.expect("exists"));
    assert_err!(s.set(&missing, b"x", None).await, Error::NotFound { .. });
    assert_err!(s.set(&missing, b"x", Some(0)).await, Error::NotFound { .. });
    assert_err!(s.delete(&missing, None).await, Error::NotFound { .. });
    assert_err!(s.delete(&missing, Some(0)).await, Error::NotFound { .. });
    assert_eq!(s.take_leaf(&missing).await.expect("take_leaf"), None);
    assert_err!(s.children(&missing).await, Error::NotFound { .. });
    assert_err!(
        s.children_prefixed(&missing, "a-").await,
        Error::NotFound { .. }
    );
    assert_err!(s.children_watch(&missing).await, Error::NotFound { .. });
    assert!(
        s.get(&missing).await.expect("get").is_none(),
        "no node made"
    );
    s.close().await.expect("close");
}

/// A node with children cannot be deleted; once they are gone it can.
pub async fn prim_delete_not_empty(h: &dyn Harness) {
    let root = h.root("prim_delete_not_empty");
    let s = h.open().await;
    let dir = format!("{root}/dir");
    let child = format!("{dir}/child");
    // Made on its own: a parent that `create` makes is a container on
    // ZooKeeper, which the server may delete as soon as it is emptied,
    // before this test deletes it.
    s.create(&dir, b"", CreateMode::Persistent)
        .await
        .expect("create dir");
    s.create(&child, b"", CreateMode::Persistent)
        .await
        .expect("create");
    assert_err!(s.delete(&dir, None).await, Error::NotEmpty { .. });
    let v = s.get(&dir).await.expect("get").expect("dir").stat.version;
    assert_err!(s.delete(&dir, Some(v)).await, Error::NotEmpty { .. });
    assert!(s.exists(&child).await.expect("exists"), "child survived");

    // An ephemeral child counts the same.
    let eph = format!("{root}/eph-dir/e");
    s.create(&eph, b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    assert_err!(
        s.delete(&format!("{root}/eph-dir"), None).await,
        Error::NotEmpty { .. }
    );

    s.delete(&child, None).await.expect("delete child");
    s.delete(&dir, None).await.expect("delete the emptied dir");
    assert!(!s.exists(&dir).await.expect("exists"));
    s.close().await.expect("close");
}

/// `children_prefixed` lists the children whose names begin with the
/// prefix, in the order `children` lists them (sequenced first, by
/// sequence, made by two sessions), and no other: not a name that only
/// contains the prefix, nor a grandchild. An empty prefix is every child, a
/// prefix nothing begins with is an empty listing, and a prefix that is not
/// the start of one name is `InvalidPath` before any I/O.
pub async fn prim_children_prefixed_lists_only_those(h: &dyn Harness) {
    let root = h.root("prim_children_prefixed_lists_only_those");
    let (a, b) = (h.open().await, h.open().await);
    let dir = format!("{root}/dir");
    a.ensure_dir(&dir).await.expect("ensure_dir");
    for (i, name) in ["b-", "a-", "ab-", "b-", "xa-", "a-", "b-"]
        .iter()
        .enumerate()
    {
        let s = if i % 2 == 0 { &a } else { &b };
        let mode = if i % 3 == 0 {
            CreateMode::EphemeralSequential
        } else {
            CreateMode::PersistentSequential
        };
        s.create(&format!("{dir}/{name}"), b"", mode)
            .await
            .expect("create");
    }
    for name in ["a", "b-plain"] {
        a.create(&format!("{dir}/{name}"), b"", CreateMode::Persistent)
            .await
            .expect("create");
    }
    a.create(
        &format!("{dir}/b-plain/a-grandchild"),
        b"",
        CreateMode::Persistent,
    )
    .await
    .expect("create");
    let all = b.children(&dir).await.expect("children");
    assert_eq!(all.len(), 9, "{all:?}");
    for prefix in ["a", "a-", "b-", "ab", "x", "b-p", "zz", ""] {
        let want: Vec<_> = all
            .iter()
            .filter(|c| c.name.starts_with(prefix))
            .cloned()
            .collect();
        let got = b
            .children_prefixed(&dir, prefix)
            .await
            .unwrap_or_else(|e| panic!("children_prefixed({prefix:?}): {e}"));
        assert_eq!(got, want, "children_prefixed({prefix:?})");
    }
    assert_eq!(
        a.children_prefixed(&dir, "b-")
            .await
            .expect("listing")
            .len(),
        4,
        "three sequenced and one plain"
    );
    for bad in ["a/b", "a\u{0}"] {
        assert_err!(
            b.children_prefixed(&dir, bad).await,
            Error::InvalidPath { .. }
        );
    }
    b.close().await.expect("close");
    assert_err!(
        b.children_prefixed(&dir, "x/").await,
        Error::InvalidPath {
            kind: PathErrorKind::NamePrefix,
            ..
        }
    );
    a.close().await.expect("close");
}

/// `take_leaf` deletes a leaf and returns its data, once: two sessions
/// taking the same nodes at once get each node's data exactly once (no
/// answer is lost here) and leave none; a node gone is `None`. A session
/// may take its own ephemeral-sequential node too (on etcd, whose name it
/// lends to its next one: the name is free again afterwards).
pub async fn prim_take_leaf_returns_the_data_once(h: &dyn Harness) {
    let root = h.root("prim_take_leaf_returns_the_data_once");
    let (a, b) = (h.open().await, h.open().await);
    let items = format!("{root}/items");
    // Made on its own: it is listed once emptied, and a directory that
    // `create` makes is a container on ZooKeeper, which the server may
    // delete as soon as it is empty.
    a.ensure_dir(&items).await.expect("ensure_dir");
    let mut made = Vec::new();
    for i in 0..20 {
        let data = format!("item {i}").into_bytes();
        let c = a
            .create(
                &format!("{items}/item-"),
                &data,
                CreateMode::PersistentSequential,
            )
            .await
            .expect("create");
        made.push((c.path, data));
    }
    let mut takers = JoinSet::new();
    for s in [a.clone(), b.clone()] {
        let made = made.clone();
        takers.spawn(async move {
            let mut got = Vec::new();
            for (path, _) in made {
                if let Some(data) = s.take_leaf(&path).await.expect("take_leaf") {
                    got.push((path, data));
                }
            }
            got
        });
    }
    let mut taken = Vec::new();
    while let Some(got) = takers.join_next().await {
        taken.extend(got.expect("join"));
    }
    taken.sort();
    made.sort();
    assert_eq!(taken, made, "each node taken exactly once, with its data");
    assert!(a.children(&items).await.expect("children").is_empty());
    assert_eq!(a.take_leaf(&made[0].0).await.expect("take again"), None);

    let prefix = format!("{root}/own/n-");
    let own = a
        .create(&prefix, b"mine", CreateMode::EphemeralSequential)
        .await
        .expect("create");
    assert_eq!(
        a.take_leaf(&own.path).await.expect("take own"),
        Some(b"mine".to_vec())
    );
    assert!(a.get(&own.path).await.expect("get").is_none());
    let next = a
        .create(&prefix, b"next", CreateMode::EphemeralSequential)
        .await
        .expect("create after the take");
    let node = a
        .get(&next.path)
        .await
        .expect("get")
        .expect("the next node");
    assert_eq!(node.data, b"next");
    a.close().await.expect("close");
    b.close().await.expect("close");
}

/// Compare-and-set and compare-and-delete: a stale version is a typed
/// `VersionMismatch` and changes nothing; the current one works and the
/// version changes.
pub async fn prim_cas_versions(h: &dyn Harness) {
    let root = h.root("prim_cas_versions");
    let s = h.open().await;
    let p = format!("{root}/node");
    let c = s
        .create(&p, b"v0", CreateMode::Persistent)
        .await
        .expect("create");
    let v0 = c.version;
    assert_eq!(
        s.get(&p).await.expect("get").expect("node").stat.version,
        v0
    );

    let st1 = s.set(&p, b"v1", Some(v0)).await.expect("set at v0");
    let v1 = st1.version;
    assert_ne!(v1, v0, "a set changes the version");
    assert_eq!(st1.stamp, c.stamp, "a set keeps the stamp");
    let node = s.get(&p).await.expect("get").expect("node");
    assert_eq!(node.data, b"v1");
    assert_eq!(node.stat.version, v1);

    match s.set(&p, b"stale", Some(v0)).await {
        Err(Error::VersionMismatch { path, expected }) => {
            assert_eq!(path, p);
            assert_eq!(expected, v0);
        }
        other => panic!("set at a stale version: expected VersionMismatch, got {other:?}"),
    }
    let node = s.get(&p).await.expect("get").expect("node");
    assert_eq!(node.data, b"v1", "a refused set changed the data");
    assert_eq!(node.stat.version, v1);

    // An unconditional set works whatever the version and changes it.
    let v2 = s.set(&p, b"v2", None).await.expect("set").version;
    assert_ne!(v2, v1);

    // Another session's CAS sees the same versions.
    let t = h.open().await;
    assert_err!(
        t.set(&p, b"stale", Some(v1)).await,
        Error::VersionMismatch { .. }
    );
    let v3 = t.set(&p, b"v3", Some(v2)).await.expect("set at v2").version;
    assert_ne!(v3, v2);

    match s.delete(&p, Some(v2)).await {
        Err(Error::VersionMismatch { path, expected }) => {
            assert_eq!(path, p);
            assert_eq!(expected, v2);
        }
        other => panic!("delete at a stale version: expected VersionMismatch, got {other:?}"),
    }
    assert!(
        s.exists(&p).await.expect("exists"),
        "a refused delete deleted"
    );
    s.delete(&p, Some(v3)).await.expect("delete at v3");
    assert!(!s.exists(&p).await.expect("exists"));
    s.close().await.expect("close");
    t.close().await.expect("close");
}

/// Sequential creates: the path starts with the prefix asked for, every
/// sibling gets a sequence, and sequences strictly increase in creation
/// order — across sessions, across modes, and after deletes.
pub async fn prim_sequences_increase(h: &dyn Harness) {
    let root = h.root("prim_sequences_increase");
    let a = h.open().await;
    let b = h.open().await;
    let dir = format!("{root}/q");
    let prefix = format!("{dir}/item-");
    let mut made = Vec::new();
    for i in 0..12 {
        let (s, mode) = match i % 4 {
            0 => (&a, CreateMode::PersistentSequential),
            1 => (&b, CreateMode::EphemeralSequential),
            2 => (&b, CreateMode::PersistentSequential),
            _ => (&a, CreateMode::EphemeralSequential),
        };
        let c = s.create(&prefix, b"", mode).await.expect("create");
        assert!(
            c.path.starts_with(&prefix) && c.path.len() > prefix.len(),
            "{} does not extend the prefix {prefix}",
            c.path
        );
        let seq = c.sequence.expect("a sequential create has a sequence");
        made.push((c.path, seq));
    }
    for w in made.windows(2) {
        assert!(w[0].1 < w[1].1, "sequences must strictly increase: {w:?}");
    }
    let mut paths: Vec<_> = made.iter().map(|(p, _)| p.clone()).collect();
    paths.sort();
    paths.dedup();
    assert_eq!(paths.len(), made.len(), "sequential paths must be unique");

    // Deleting the newest does not let its sequence come back.
    let (last_path, last_seq) = made.last().cloned().expect("made some");
    a.delete(&last_path, None).await.expect("delete");
    let c = b
        .create(&prefix, b"", CreateMode::PersistentSequential)
        .await
        .expect("create");
    let seq = c.sequence.expect("sequence");
    assert!(seq > last_seq, "sequence {seq} after a deleted {last_seq}");
    assert_ne!(c.path, last_path, "a sequential name was reused");

    // A different prefix in the same dir still orders by creation.
    let other = b
        .create(
            &format!("{dir}/other-"),
            b"",
            CreateMode::EphemeralSequential,
        )
        .await
        .expect("create");
    assert!(other.sequence.expect("sequence") > seq);
    a.close().await.expect("close");
    b.close().await.expect("close");
}

/// Stamps increase with every create anywhere in the store: across dirs,
/// sessions and modes; a node made again at the same path gets a larger
/// stamp; `get` reports the stamp the create gave.
pub async fn prim_stamps_increase(h: &dyn Harness) {
    let root = h.root("prim_stamps_increase");
    let a = h.open().await;
    let b = h.open().await;
    let modes = [
        CreateMode::Persistent,
        CreateMode::Ephemeral,
        CreateMode::PersistentSequential,
        CreateMode::EphemeralSequential,
    ];
    let mut last = 0u64;
    let mut first = true;
    for i in 0..16 {
        let s = if i % 2 == 0 { &a } else { &b };
        let path = format!("{root}/dir-{}/n-{i}", i % 3);
        let c = s.create(&path, b"", modes[i % 4]).await.expect("create");
        assert!(
            first || c.stamp > last,
            "stamp {} after {last} (create {i})",
            c.stamp
        );
        first = false;
        last = c.stamp;
        let got = a.get(&c.path).await.expect("get").expect("node");
        assert_eq!(got.stat.stamp, c.stamp, "get reports the create's stamp");
        assert_eq!(got.stat.ephemeral, modes[i % 4].is_ephemeral());
    }
    // Deleted and made again at one path: a new, larger stamp.
    let p = format!("{root}/again");
    let before = a
        .create(&p, b"", CreateMode::Persistent)
        .await
        .expect("create");
    a.delete(&p, None).await.expect("delete");
    let second = b
        .create(&p, b"", CreateMode::Persistent)
        .await
        .expect("create again");
    assert!(second.stamp > before.stamp);
    assert!(before.stamp > last);
    // Sets do not change a stamp.
    let st = a.set(&p, b"x", None).await.expect("set");
    assert_eq!(st.stamp, second.stamp);
    a.close().await.expect("close");
    b.close().await.expect("close");
}

/// Children are listed in creation order (by sequence), with the
/// sequences the creates gave; unsequenced children are listed too.
pub async fn prim_children_in_creation_order(h: &dyn Harness) {
    let root = h.root("prim_children_in_creation_order");
    let a = h.open().await;
    let b = h.open().await;
    let dir = format!("{root}/dir");
    a.ensure_dir(&dir).await.expect("ensure_dir");
    assert!(a.children(&dir).await.expect("children").is_empty());
    let mut made = Vec::new();
    // Prefixes that sort against creation order by name.
    for (i, prefix) in ["z-", "m-", "a-", "z-", "b-", "a-"].iter().enumerate() {
        let s = if i % 2 == 0 { &a } else { &b };
        let mode = if i % 3 == 0 {
            CreateMode::EphemeralSequential
        } else {
            CreateMode::PersistentSequential
        };
        let c = s
            .create(&format!("{dir}/{prefix}"), b"", mode)
            .await
            .expect("create");
        made.push(c);
    }
    a.create(&format!("{dir}/plain"), b"", CreateMode::Persistent)
        .await
        .expect("create");
    let kids = b.children(&dir).await.expect("children");
    assert_eq!(kids.len(), made.len() + 1, "{kids:?}");
    let sequenced: Vec<_> = kids
        .iter()
        .filter(|k| k.name != "plain")
        .map(|k| (format!("{dir}/{}", k.name), k.sequence))
        .collect();
    let expected: Vec<_> = made.iter().map(|c| (c.path.clone(), c.sequence)).collect();
    assert_eq!(sequenced, expected, "sequential children in creation order");
    assert!(
        kids.iter().any(|k| k.name == "plain"),
        "the plain child is listed"
    );
    // Those with a sequence come first.
    let first_plain = kids.iter().position(|k| k.sequence.is_none());
    if let Some(i) = first_plain {
        assert!(
            kids[i..].iter().all(|k| k.sequence.is_none()),
            "children with a sequence come first: {kids:?}"
        );
    }
    a.close().await.expect("close");
    b.close().await.expect("close");
}

/// The children watch fires at a child's create and at a child's delete,
/// made by another session.
pub async fn prim_children_watch_fires(h: &dyn Harness) {
    let root = h.root("prim_children_watch_fires");
    let a = h.open().await;
    let b = h.open().await;
    let dir = format!("{root}/dir");
    a.ensure_dir(&dir).await.expect("ensure_dir");
    let (kids, watch) = b.children_watch(&dir).await.expect("children_watch");
    assert!(kids.is_empty());
    let child = format!("{dir}/child");
    a.create(&child, b"", CreateMode::Persistent)
        .await
        .expect("create");
    within("children watch on create", watch)
        .await
        .expect("the watch fires Ok");
    let (kids, watch) = within("child listed", async {
        loop {
            let (kids, watch) = b.children_watch(&dir).await.expect("children_watch");
            if !kids.is_empty() {
                return (kids, watch);
            }
            within("children watch", watch).await.expect("watch");
        }
    })
    .await;
    assert_eq!(kids.len(), 1);
    assert_eq!(kids[0].name, "child");

    a.delete(&child, None).await.expect("delete");
    within("children watch on delete", watch)
        .await
        .expect("the watch fires Ok");
    let kids = within("child gone", async {
        loop {
            let (kids, watch) = b.children_watch(&dir).await.expect("children_watch");
            if kids.is_empty() {
                return kids;
            }
            within("children watch", watch).await.expect("watch");
        }
    })
    .await;
    assert!(kids.is_empty());
    a.close().await.expect("close");
    b.close().await.expect("close");
}

/// The children watch fires when a child goes because its session
/// expired, and because its session closed.
pub async fn prim_children_watch_fires_on_session_end(h: &dyn Harness) {
    let root = h.root("prim_children_watch_fires_on_session_end");
    let watcher = h.open().await;
    let dir = format!("{root}/members");
    watcher.ensure_dir(&dir).await.expect("ensure_dir");
    for expire in [true, false] {
        let member = h.open().await;
        let c = member
            .create(&format!("{dir}/m-"), b"", CreateMode::EphemeralSequential)
            .await
            .expect("create");
        let name = c.path.rsplit('/').next().expect("a name").to_owned();
        // Wait until the watcher sees the member, holding a watch set after.
        let (_, watch) = within("member listed", async {
            loop {
                let (kids, watch) = watcher.children_watch(&dir).await.expect("children_watch");
                if kids.iter().any(|k| k.name == name) {
                    return (kids, watch);
                }
                within("children watch", watch).await.expect("watch");
            }
        })
        .await;
        if expire {
            h.expire(&member).await;
        } else {
            member.close().await.expect("close");
        }
        within("children watch on session end", watch)
            .await
            .expect("the watch fires Ok");
        within("member gone", async {
            loop {
                let (kids, watch) = watcher.children_watch(&dir).await.expect("children_watch");
                if !kids.iter().any(|k| k.name == name) {
                    return;
                }
                within("children watch", watch).await.expect("watch");
            }
        })
        .await;
    }
    watcher.close().await.expect("close");
}

/// A children watch never misses a change that races it: a watcher that
/// re-lists after each firing sees every one of many children another
/// session creates while it watches. A missed change hangs it.
pub async fn prim_children_watch_never_misses(h: &dyn Harness) {
    const N: usize = 40;
    let root = h.root("prim_children_watch_never_misses");
    let a = h.open().await;
    let b = h.open().await;
    let dir = format!("{root}/dir");
    a.ensure_dir(&dir).await.expect("ensure_dir");
    let creator = {
        let a = a.clone();
        let dir = dir.clone();
        tokio::spawn(async move {
            for i in 0..N {
                a.create(&format!("{dir}/c-{i:03}"), b"", CreateMode::Persistent)
                    .await
                    .expect("create");
                if i % 3 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        })
    };
    within("watcher sees every child", async {
        loop {
            let (kids, watch) = b.children_watch(&dir).await.expect("children_watch");
            if kids.len() == N {
                break;
            }
            watch.await.expect("the watch fires Ok");
        }
    })
    .await;
    within("creator", creator).await.expect("creator task");

    // And the same for deletes.
    let deleter = {
        let a = a.clone();
        let dir = dir.clone();
        tokio::spawn(async move {
            for i in 0..N {
                a.delete(&format!("{dir}/c-{i:03}"), None)
                    .await
                    .expect("delete");
            }
        })
    };
    within("watcher sees every delete", async {
        loop {
            let (kids, watch) = b.children_watch(&dir).await.expect("children_watch");
            if kids.is_empty() {
                break;
            }
            watch.await.expect("the watch fires Ok");
        }
    })
    .await;
    within("deleter", deleter).await.expect("deleter task");
    a.close().await.expect("close");
    b.close().await.expect("close");
}

/// A children watch never misses a change that races its read: many
/// watches are set at the same moment one child is created (then deleted);
/// each either lists the change or fires. A missed change hangs one.
pub async fn prim_children_watch_races_change(h: &dyn Harness) {
    const ROUNDS: usize = 16;
    const WATCHERS: usize = 8;
    let root = h.root("prim_children_watch_races_change");
    let writer = h.open().await;
    let readers = [h.open().await, h.open().await];
    let dir = format!("{root}/dir");
    writer.ensure_dir(&dir).await.expect("ensure_dir");
    for round in 0..ROUNDS {
        let child = format!("{dir}/c-{round}");
        for create in [true, false] {
            let mut tasks = JoinSet::new();
            for i in 0..WATCHERS {
                let s = readers[i % readers.len()].clone();
                let (dir, name) = (dir.clone(), format!("c-{round}"));
                tasks.spawn(async move {
                    let (kids, watch) = s.children_watch(&dir).await.expect("children_watch");
                    let listed = kids.iter().any(|k| k.name == name);
                    // The change is either in the listing or fires the watch.
                    if listed != create {
                        watch.await.expect("the watch fires Ok");
                    }
                });
                if i == WATCHERS / 2 {
                    let (w, child) = (writer.clone(), child.clone());
                    tasks.spawn(async move {
                        if create {
                            w.create(&child, b"", CreateMode::Persistent)
                                .await
                                .expect("create");
                        } else {
                            w.delete(&child, None).await.expect("delete");
                        }
                    });
                }
            }
            within("every children watch racing a change", async {
                while let Some(r) = tasks.join_next().await {
                    r.expect("task");
                }
            })
            .await;
        }
    }
    writer.close().await.expect("close");
    for r in readers {
        r.close().await.expect("close");
    }
}

/// `wait_gone` resolves at once for a node that does not exist (nor its
/// parent), and when the node is deleted.
pub async fn prim_wait_gone_basics(h: &dyn Harness) {
    let root = h.root("prim_wait_gone_basics");
    let a = h.open().await;
    let b = h.open().await;
    within(
        "wait_gone on a missing node",
        a.wait_gone(&format!("{root}/none/x")),
    )
    .await
    .expect("resolves Ok");
    let p = format!("{root}/node");
    a.create(&p, b"", CreateMode::Persistent)
        .await
        .expect("create");
    let waiter = {
        let b = b.clone();
        let p = p.clone();
        tokio::spawn(async move { b.wait_gone(&p).await })
    };
    a.delete(&p, None).await.expect("delete");
    within("wait_gone after delete", waiter)
        .await
        .expect("waiter task")
        .expect("resolves Ok");
    // Once gone, at once again.
    within("wait_gone on a deleted node", b.wait_gone(&p))
        .await
        .expect("resolves Ok");
    a.close().await.expect("close");
    b.close().await.expect("close");
}

/// `wait_gone` never misses a delete racing its check: many waits on many
/// nodes, each started together with the node's delete, all resolve.
pub async fn prim_wait_gone_races_delete(h: &dyn Harness) {
    const NODES: usize = 24;
    const WAITERS: usize = 3;
    let root = h.root("prim_wait_gone_races_delete");
    let deleter = h.open().await;
    let waiters: Vec<Session> = {
        let mut v = Vec::new();
        for _ in 0..WAITERS {
            v.push(h.open().await);
        }
        v
    };
    let mut paths = Vec::new();
    for i in 0..NODES {
        let p = format!("{root}/n-{i}");
        deleter
            .create(&p, b"", CreateMode::Persistent)
            .await
            .expect("create");
        paths.push(p);
    }
    let mut tasks = JoinSet::new();
    for (i, p) in paths.iter().enumerate() {
        // Waiters before and after the delete is started, interleaved.
        for (j, w) in waiters.iter().enumerate() {
            if (i + j) % 2 == 0 {
                let (w, p) = (w.clone(), p.clone());
                tasks.spawn(async move { w.wait_gone(&p).await });
            }
        }
        let (d, dp) = (deleter.clone(), p.clone());
        tasks.spawn(async move { d.delete(&dp, None).await });
        for (j, w) in waiters.iter().enumerate() {
            if (i + j) % 2 == 1 {
                let (w, p) = (w.clone(), p.clone());
                tasks.spawn(async move { w.wait_gone(&p).await });
            }
        }
    }
    let mut done = 0;
    within("every wait_gone racing a delete", async {
        while let Some(r) = tasks.join_next().await {
            r.expect("task").expect("wait_gone / delete Ok");
            done += 1;
        }
    })
    .await;
    assert_eq!(done, NODES * (WAITERS + 1));
    for s in waiters.iter().chain([&deleter]) {
        s.close().await.expect("close");
    }
}

/// Ephemeral nodes vanish when their session expires, as another session
/// sees; `wait_gone` on them resolves. The expired session reports
/// `Expired` and every operation on it fails with `SessionExpired`; its
/// persistent nodes stay.
pub async fn prim_ephemeral_gone_on_expire(h: &dyn Harness) {
    let root = h.root("prim_ephemeral_gone_on_expire");
    let owner = h.open().await;
    let other = h.open().await;
    let eph = format!("{root}/eph");
    let kept = format!("{root}/kept");
    owner
        .create(&eph, b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    let seq = owner
        .create(
            &format!("{root}/seq-"),
            b"",
            CreateMode::EphemeralSequential,
        )
        .await
        .expect("create")
        .path;
    owner
        .create(&kept, b"", CreateMode::Persistent)
        .await
        .expect("create");
    let node = other.get(&eph).await.expect("get").expect("visible");
    assert!(node.stat.ephemeral);

    let waiters: Vec<_> = [eph.clone(), seq.clone()]
        .into_iter()
        .map(|p| {
            let other = other.clone();
            tokio::spawn(async move { other.wait_gone(&p).await })
        })
        .collect();
    h.expire(&owner).await;
    for w in waiters {
        within("wait_gone on an expired session's node", w)
            .await
            .expect("task")
            .expect("resolves Ok");
    }
    assert!(other.get(&eph).await.expect("get").is_none());
    assert!(other.get(&seq).await.expect("get").is_none());
    assert!(
        other.exists(&kept).await.expect("exists"),
        "persistent nodes outlive their session"
    );

    await_state(&owner, SessionState::Expired).await;
    assert_ended(&owner, &root, &kept, |e| matches!(e, Error::SessionExpired)).await;
    owner
        .close()
        .await
        .expect("closing an expired session is Ok");
    assert_eq!(owner.state(), SessionState::Expired, "Expired is final");
    other.close().await.expect("close");
}

/// Ephemeral nodes vanish when their session closes, as another session
/// sees. The closed session reports `Closed`, its operations fail with
/// `SessionClosed`, and closing it again is `Ok`.
pub async fn prim_ephemeral_gone_on_close(h: &dyn Harness) {
    let root = h.root("prim_ephemeral_gone_on_close");
    let owner = h.open().await;
    let other = h.open().await;
    let eph = format!("{root}/eph");
    let kept = format!("{root}/kept");
    owner
        .create(&eph, b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    owner
        .create(&kept, b"", CreateMode::Persistent)
        .await
        .expect("create");
    assert!(other.exists(&eph).await.expect("exists"));
    let waiter = {
        let other = other.clone();
        let eph = eph.clone();
        tokio::spawn(async move { other.wait_gone(&eph).await })
    };
    owner.close().await.expect("close");
    assert_eq!(owner.state(), SessionState::Closed);
    within("wait_gone on a closed session's node", waiter)
        .await
        .expect("task")
        .expect("resolves Ok");
    assert!(other.get(&eph).await.expect("get").is_none());
    assert!(other.exists(&kept).await.expect("exists"));
    assert_ended(&owner, &root, &kept, |e| matches!(e, Error::SessionClosed)).await;
    owner.close().await.expect("closing again is Ok");
    assert_eq!(owner.state(), SessionState::Closed);
    other.close().await.expect("close");
}

/// Every operation of an ended session fails with its end.
async fn assert_ended(s: &Session, root: &str, existing: &str, is_end: fn(&Error) -> bool) {
    let fresh = format!("{root}/after-end");
    let fence = Fence {
        path: existing.to_owned(),
        stamp: 1,
    };
    let results: Vec<(&str, Result<()>)> = vec![
        (
            "create",
            s.create(&fresh, b"", CreateMode::Persistent)
                .await
                .map(drop),
        ),
        ("get", s.get(existing).await.map(drop)),
        ("set", s.set(existing, b"", None).await.map(drop)),
        ("delete", s.delete(existing, None).await),
        ("children", s.children(root).await.map(drop)),
        ("children_watch", s.children_watch(root).await.map(drop)),
        ("wait_gone", s.wait_gone(existing).await),
        ("get_watch", s.get_watch(existing).await.map(drop)),
        (
            "guarded",
            s.guarded(
                &fence,
                Op::Delete {
                    path: existing.to_owned(),
                    version: None,
                },
            )
            .await
            .map(drop),
        ),
    ];
    for (method, r) in results {
        match r {
            Err(e) if is_end(&e) => {}
            other => panic!("{method} on an ended session: got {other:?}"),
        }
    }
}

/// A `wait_gone`, data watch or children watch pending when its own
/// session ends resolves with that end, not `Ok` and not never.
pub async fn prim_pending_waits_end_with_session(h: &dyn Harness) {
    let root = h.root("prim_pending_waits_end_with_session");
    let keeper = h.open().await;
    let node = format!("{root}/stays");
    keeper
        .create(&node, b"", CreateMode::Persistent)
        .await
        .expect("create");
    for expire in [true, false] {
        let s = h.open().await;
        let gone = {
            let s = s.clone();
            let node = node.clone();
            tokio::spawn(async move { s.wait_gone(&node).await })
        };
        let (_, watch) = s.children_watch(&root).await.expect("children_watch");
        let (_, data_watch) = s
            .get_watch(&node)
            .await
            .expect("get_watch")
            .expect("the node exists");
        if expire {
            h.expire(&s).await;
        } else {
            s.close().await.expect("close");
        }
        let want_end = |r: Result<()>| match (expire, r) {
            (true, Err(Error::SessionExpired)) | (false, Err(Error::SessionClosed)) => {}
            (_, other) => panic!("a wait pending at the session's end: got {other:?}"),
        };
        want_end(
            within("wait_gone ends with the session", gone)
                .await
                .expect("task"),
        );
        // Nothing changes the watched node: its watch ends with the session.
        want_end(within("data watch ends with the session", data_watch).await);
        // The watch may have fired for a change (none was made here); if it
        // resolves, it is with the session's end.
        match within("children watch ends with the session", watch).await {
            Ok(()) => {}
            r => want_end(r),
        }
    }
    assert!(keeper.exists(&node).await.expect("exists"));
    keeper.close().await.expect("close");
}

/// A child under an ephemeral node is either refused with `NotSupported`
/// or made; nothing else.
pub async fn prim_child_of_ephemeral(h: &dyn Harness) {
    let root = h.root("prim_child_of_ephemeral");
    let s = h.open().await;
    let eph = format!("{root}/eph");
    s.create(&eph, b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    match s
        .create(&format!("{eph}/child"), b"", CreateMode::Persistent)
        .await
    {
        Ok(_) | Err(Error::NotSupported { .. }) => {}
        other => panic!("child of an ephemeral node: got {other:?}"),
    }
    s.close().await.expect("close");
}

/// A session that has made nodes under a directory creates under it as a
/// fresh session would after another session deleted it (it is made
/// again) or put an ephemeral node in its place (the create is answered as
/// under any ephemeral node). A backend may remember where it created
/// before, to send less; it must not trust that memory.
pub async fn prim_create_after_parent_replaced(h: &dyn Harness) {
    let root = h.root("prim_create_after_parent_replaced");
    let (s, other) = (h.open().await, h.open().await);
    let dir = format!("{root}/dir");
    let under = |name: &str| format!("{dir}/{name}");
    s.create(&dir, b"", CreateMode::Persistent)
        .await
        .expect("create dir");
    for name in ["a", "b"] {
        s.create(&under(name), b"", CreateMode::Persistent)
            .await
            .expect("create under dir");
    }
    for name in ["a", "b"] {
        other.delete(&under(name), None).await.expect("delete");
    }
    other.delete(&dir, None).await.expect("delete dir");

    s.create(&under("c"), b"", CreateMode::Persistent)
        .await
        .expect("create under the deleted dir");
    let made = s.get(&dir).await.expect("get").expect("the dir made again");
    assert!(!made.stat.ephemeral, "the dir made again as ephemeral");

    other.delete(&under("c"), None).await.expect("delete");
    // A directory a create made may be a container (ZooKeeper), deleted by
    // the server once empty.
    match other.delete(&dir, None).await {
        Ok(()) | Err(Error::NotFound { .. }) => {}
        e => panic!("delete the dir again: {e:?}"),
    }
    other
        .create(&dir, b"", CreateMode::Ephemeral)
        .await
        .expect("an ephemeral node in the dir's place");
    let fresh = h.open().await;
    let kind = |r: &Result<coord_core::Created>| match r {
        Ok(_) => "created".to_owned(),
        Err(e) => format!("{:?}", std::mem::discriminant(e)),
    };
    let cold = fresh.create(&under("x"), b"", CreateMode::Persistent).await;
    let warm = s.create(&under("y"), b"", CreateMode::Persistent).await;
    assert_eq!(
        kind(&warm),
        kind(&cold),
        "under an ephemeral node: {warm:?} from the session that created there before, \
         {cold:?} from a fresh one"
    );
    close_all(&[s, other, fresh]).await;
}

fn fence_of(path: &str, stamp: u64) -> Fence {
    Fence {
        path: path.to_owned(),
        stamp,
    }
}

/// A guarded create, set and delete happen while the fence holds, with the
/// answers and errors of the plain operations.
pub async fn prim_guarded_while_fence_holds(h: &dyn Harness) {
    let root = h.root("prim_guarded_while_fence_holds");
    let holder = h.open().await;
    let fence_path = format!("{root}/lock/holder-");
    let held = holder
        .create(&fence_path, b"", CreateMode::EphemeralSequential)
        .await
        .expect("create fence");
    let fence = fence_of(&held.path, held.stamp);
    let target = format!("{root}/data/value");

    let created = match holder
        .guarded(
            &fence,
            Op::Create {
                path: target.clone(),
                data: b"one".to_vec(),
                mode: CreateMode::Persistent,
            },
        )
        .await
        .expect("guarded create")
    {
        OpResult::Created(c) => c,
        other => panic!("guarded create answered {other:?}"),
    };
    assert_eq!(created.path, target);
    assert!(created.stamp > held.stamp);
    let node = holder.get(&target).await.expect("get").expect("made");
    assert_eq!(node.data, b"one");

    let stat = match holder
        .guarded(
            &fence,
            Op::Set {
                path: target.clone(),
                data: b"two".to_vec(),
                version: Some(created.version),
            },
        )
        .await
        .expect("guarded set")
    {
        OpResult::Set(st) => st,
        other => panic!("guarded set answered {other:?}"),
    };
    assert_ne!(stat.version, created.version);
    assert_eq!(
        holder.get(&target).await.expect("get").expect("node").data,
        b"two"
    );

    // The op's own errors come through when the fence holds.
    assert_err!(
        holder
            .guarded(
                &fence,
                Op::Set {
                    path: target.clone(),
                    data: b"stale".to_vec(),
                    version: Some(created.version),
                },
            )
            .await,
        Error::VersionMismatch { .. }
    );
    assert_err!(
        holder
            .guarded(
                &fence,
                Op::Create {
                    path: target.clone(),
                    data: Vec::new(),
                    mode: CreateMode::Persistent,
                },
            )
            .await,
        Error::AlreadyExists { .. }
    );
    assert_err!(
        holder
            .guarded(
                &fence,
                Op::Delete {
                    path: format!("{root}/data/missing"),
                    version: None,
                },
            )
            .await,
        Error::NotFound { .. }
    );

    // A guarded sequential create answers with a sequence.
    match holder
        .guarded(
            &fence,
            Op::Create {
                path: format!("{root}/data/seq-"),
                data: Vec::new(),
                mode: CreateMode::PersistentSequential,
            },
        )
        .await
        .expect("guarded sequential create")
    {
        OpResult::Created(c) => assert!(c.sequence.is_some()),
        other => panic!("guarded create answered {other:?}"),
    }

    // Anyone may write under the fence, not just its owner.
    let other = h.open().await;
    match other
        .guarded(
            &fence,
            Op::Delete {
                path: target.clone(),
                version: Some(stat.version),
            },
        )
        .await
        .expect("guarded delete")
    {
        OpResult::Deleted => {}
        other => panic!("guarded delete answered {other:?}"),
    }
    assert!(!holder.exists(&target).await.expect("exists"));
    holder.close().await.expect("close");
    other.close().await.expect("close");
}

/// Every guarded op under `fence` fails with `LockLost` (before the op's
/// own errors) and changes nothing.
async fn assert_guarded_lost(s: &Session, fence: &Fence, root: &str) {
    let existing = format!("{root}/data/existing");
    let fresh = format!("{root}/data/fresh");
    let ops = [
        Op::Create {
            path: fresh.clone(),
            data: b"x".to_vec(),
            mode: CreateMode::Persistent,
        },
        Op::Create {
            path: format!("{root}/data/seq-"),
            data: Vec::new(),
            mode: CreateMode::EphemeralSequential,
        },
        Op::Set {
            path: existing.clone(),
            data: b"changed".to_vec(),
            version: None,
        },
        Op::Delete {
            path: existing.clone(),
            version: None,
        },
        // Ops that would fail on their own still report the lost fence.
        Op::Set {
            path: format!("{root}/data/missing"),
            data: Vec::new(),
            version: None,
        },
        Op::Delete {
            path: format!("{root}/data/missing"),
            version: Some(12345),
        },
        Op::Create {
            path: existing.clone(),
            data: Vec::new(),
            mode: CreateMode::Persistent,
        },
    ];
    for op in ops {
        match s.guarded(fence, op.clone()).await {
            Err(Error::LockLost { path }) => assert_eq!(path, fence.path),
            other => panic!("guarded {op:?} under a lost fence: got {other:?}"),
        }
    }
    assert!(
        !s.exists(&fresh).await.expect("exists"),
        "a refused create made a node"
    );
    let node = s.get(&existing).await.expect("get").expect("still there");
    assert_eq!(node.data, b"original", "a refused write changed a node");
    assert!(
        s.children(&format!("{root}/data"))
            .await
            .expect("children")
            .iter()
            .all(|c| !c.name.starts_with("seq-")),
        "a refused sequential create made a node"
    );
}

/// Once the fence node is deleted, every guarded write fails with
/// `LockLost` and changes nothing.
pub async fn prim_guarded_lost_when_fence_deleted(h: &dyn Harness) {
    let root = h.root("prim_guarded_lost_when_fence_deleted");
    let s = h.open().await;
    s.create(
        &format!("{root}/data/existing"),
        b"original",
        CreateMode::Persistent,
    )
    .await
    .expect("create");
    let held = s
        .create(
            &format!("{root}/lock/holder-"),
            b"",
            CreateMode::EphemeralSequential,
        )
        .await
        .expect("create fence");
    let fence = fence_of(&held.path, held.stamp);
    s.delete(&held.path, None).await.expect("delete fence");
    assert_guarded_lost(&s, &fence, &root).await;

    // The same when the fence went with its session.
    let holder = h.open().await;
    let held = holder
        .create(
            &format!("{root}/lock/holder-"),
            b"",
            CreateMode::EphemeralSequential,
        )
        .await
        .expect("create fence");
    let fence = fence_of(&held.path, held.stamp);
    h.expire(&holder).await;
    within("fence gone with its session", s.wait_gone(&held.path))
        .await
        .expect("wait_gone");
    assert_guarded_lost(&s, &fence, &root).await;
    s.close().await.expect("close");
}

/// A fence with the wrong stamp fails even though a node exists at its
/// path: deleted and made again, the old stamp is refused and the new one
/// works.
pub async fn prim_guarded_lost_with_wrong_stamp(h: &dyn Harness) {
    let root = h.root("prim_guarded_lost_with_wrong_stamp");
    let s = h.open().await;
    s.create(
        &format!("{root}/data/existing"),
        b"original",
        CreateMode::Persistent,
    )
    .await
    .expect("create");
    let fence_path = format!("{root}/lock/holder");
    let old = s
        .create(&fence_path, b"", CreateMode::Ephemeral)
        .await
        .expect("create fence");
    s.delete(&fence_path, None).await.expect("delete fence");
    let new = s
        .create(&fence_path, b"", CreateMode::Ephemeral)
        .await
        .expect("make the fence again");
    assert!(new.stamp > old.stamp);
    assert_guarded_lost(&s, &fence_of(&fence_path, old.stamp), &root).await;
    // A stamp the node never had.
    assert_guarded_lost(&s, &fence_of(&fence_path, new.stamp + 1), &root).await;

    match s
        .guarded(
            &fence_of(&fence_path, new.stamp),
            Op::Set {
                path: format!("{root}/data/existing"),
                data: b"by the new holder".to_vec(),
                version: None,
            },
        )
        .await
    {
        Ok(OpResult::Set(_)) => {}
        other => panic!("guarded set under the current fence: got {other:?}"),
    }
    s.close().await.expect("close");
}

/// `watch_gone` is armed when it returns: `None` for a missing node; a
/// data change does not fire it; a delete after it is never missed, even
/// when the node is made again at once (a release and a quick re-take).
pub async fn prim_watch_gone_is_armed(h: &dyn Harness) {
    let node = format!("{}/n", h.root("prim_watch_gone_is_armed"));
    let a = h.open().await;
    let b = h.open().await;
    assert!(
        b.watch_gone(&node).await.expect("arm").is_none(),
        "a watch on no node"
    );
    a.create(&node, b"1", CreateMode::Persistent)
        .await
        .expect("create");
    let mut gone = b
        .watch_gone(&node)
        .await
        .expect("arm")
        .expect("the node exists");
    a.set(&node, b"2", None).await.expect("set");
    // Once b reads the new data, a watch that fired on the change would be
    // ready (ZooKeeper delivers the event before the new state).
    let seen = b.get(&node).await.expect("get").expect("exists").data;
    assert!(
        tokio::time::timeout(std::time::Duration::ZERO, &mut gone)
            .await
            .is_err()
            || seen != b"2",
        "a data change fired the deletion watch"
    );
    a.delete(&node, None).await.expect("delete");
    a.create(&node, b"3", CreateMode::Persistent)
        .await
        .expect("re-create");
    within("the watch on the deleted node fires", gone)
        .await
        .expect("deleted, though made again");
    let again = b
        .watch_gone(&node)
        .await
        .expect("arm")
        .expect("the new node exists");
    a.delete(&node, None).await.expect("delete");
    within("the watch on the new node fires", again)
        .await
        .expect("deleted");
    let _ = a.close().await;
    let _ = b.close().await;
}

/// `watch_gone_listed` waits for the node a listing showed, not for
/// whatever has its name now: after its session deleted it and made
/// another at the same prefix (etcd may give the new node the same name,
/// with a new sequence), it reports the listed node gone rather than wait
/// for the new one, which may be queued behind the waiter (a deadlock).
pub async fn prim_watch_gone_listed_waits_for_the_listed_node(h: &dyn Harness) {
    let dir = h.root("prim_watch_gone_listed_waits_for_the_listed_node");
    let prefix = format!("{dir}/n-");
    let a = h.open().await;
    let b = h.open().await;
    let first = a
        .create(&prefix, b"", CreateMode::EphemeralSequential)
        .await
        .expect("create");
    let listed = b.children(&dir).await.expect("list");
    let [child] = listed.as_slice() else {
        panic!("one child listed, got {listed:?}")
    };
    let seq = child.sequence;
    assert!(seq.is_some(), "a sequential node has a sequence");
    let armed = b
        .watch_gone_listed(&first.path, seq)
        .await
        .expect("arm")
        .expect("the listed node is there");
    a.delete(&first.path, None).await.expect("delete");
    within("the watch on the listed node fires", armed)
        .await
        .expect("deleted");
    // Made again at the prefix: perhaps the same name, a new node.
    let second = a
        .create(&prefix, b"", CreateMode::EphemeralSequential)
        .await
        .expect("create");
    assert!(
        b.watch_gone_listed(&first.path, seq)
            .await
            .expect("arm")
            .is_none(),
        "a watch for the listed node waits for another ({} now at {})",
        second.path,
        first.path
    );
    let now = b.children(&dir).await.expect("list");
    let [current] = now.as_slice() else {
        panic!("one child listed, got {now:?}")
    };
    let watch = b
        .watch_gone_listed(&second.path, current.sequence)
        .await
        .expect("arm")
        .expect("the new node is there");
    a.delete(&second.path, None).await.expect("delete");
    within("the watch on the new node fires", watch)
        .await
        .expect("deleted");
    let _ = a.close().await;
    let _ = b.close().await;
}

/// A data watch on the existing node at `path`.
async fn data_watch(s: &Session, path: &str) -> Watch {
    let (_, watch) = s
        .get_watch(path)
        .await
        .expect("get_watch")
        .unwrap_or_else(|| panic!("{path} exists"));
    watch
}

/// Whether `watch` has already resolved, without waiting for it.
async fn is_ready(watch: &mut Watch) -> bool {
    tokio::time::timeout(Duration::ZERO, watch).await.is_ok()
}

/// `get_watch` on a missing node (or under a missing parent) is `None`;
/// on an existing one it reads the node as `get` does.
pub async fn prim_get_watch_missing_node(h: &dyn Harness) {
    let root = h.root("prim_get_watch_missing_node");
    let s = h.open().await;
    assert!(
        s.get_watch(&format!("{root}/none/x"))
            .await
            .expect("get_watch")
            .is_none(),
        "a node under a missing parent"
    );
    s.ensure_dir(&root).await.expect("ensure_dir");
    let p = format!("{root}/node");
    assert!(
        s.get_watch(&p).await.expect("get_watch").is_none(),
        "a missing node"
    );
    let c = s
        .create(&p, b"data", CreateMode::Persistent)
        .await
        .expect("create");
    let (node, _watch) = s
        .get_watch(&p)
        .await
        .expect("get_watch")
        .expect("the node exists");
    assert_eq!(node.data, b"data");
    assert_eq!(node.stat.stamp, c.stamp);
    assert_eq!(node.stat.version, c.version);
    assert_eq!(Some(node), s.get(&p).await.expect("get"));
    s.delete(&p, None).await.expect("delete");
    assert!(
        s.get_watch(&p).await.expect("get_watch").is_none(),
        "a deleted node"
    );
    s.close().await.expect("close");
}

/// Lock revocation: another session's set on a holder's ephemeral node
/// fires the holder's data watch — also a set to the same bytes — and
/// leaves the node the holder's: still ephemeral, the same stamp, the
/// holder's fence still good for guarded writes, gone only with the
/// holder's session (not the writer's).
pub async fn prim_get_watch_fires_on_set_by_other(h: &dyn Harness) {
    const REVOKE: &[u8] = b"__REVOKE__";
    let root = h.root("prim_get_watch_fires_on_set_by_other");
    let holder = h.open().await;
    let revoker = h.open().await;
    let observer = h.open().await;
    let held = holder
        .create(
            &format!("{root}/lock/holder-"),
            b"mine",
            CreateMode::EphemeralSequential,
        )
        .await
        .expect("create the holder's node");
    let fence = fence_of(&held.path, held.stamp);
    let (node, watch) = holder
        .get_watch(&held.path)
        .await
        .expect("get_watch")
        .expect("the holder's node exists");
    assert_eq!(node.data, b"mine");
    assert!(node.stat.ephemeral);
    assert_eq!(node.stat.stamp, held.stamp);

    let st = revoker
        .set(&held.path, REVOKE, None)
        .await
        .expect("the revoker's set");
    assert_eq!(st.stamp, held.stamp, "a set by another keeps the stamp");
    assert!(st.ephemeral, "a set by another keeps the node ephemeral");
    within("the holder's data watch fires on the revoker's set", watch)
        .await
        .expect("the watch fires Ok");
    let (node, watch) = holder
        .get_watch(&held.path)
        .await
        .expect("get_watch")
        .expect("the holder's node is still there");
    assert_eq!(node.data, REVOKE);
    assert!(node.stat.ephemeral, "still ephemeral after another's set");
    assert_eq!(node.stat.stamp, held.stamp, "the stamp is unchanged");

    // The holder's fence still holds for its guarded writes.
    let data = format!("{root}/data/value");
    match holder
        .guarded(
            &fence,
            Op::Create {
                path: data.clone(),
                data: b"written under the fence".to_vec(),
                mode: CreateMode::Persistent,
            },
        )
        .await
    {
        Ok(OpResult::Created(_)) => {}
        other => panic!("guarded create after another's set on the fence: got {other:?}"),
    }

    // The same bytes again still count as a change.
    revoker
        .set(&held.path, REVOKE, None)
        .await
        .expect("the same bytes again");
    within("the data watch fires on a set to the same bytes", watch)
        .await
        .expect("the watch fires Ok");

    // The writer's end takes nothing with it: the node is the holder's.
    revoker.close().await.expect("close the revoker");
    let node = observer
        .get(&held.path)
        .await
        .expect("get")
        .expect("the node outlives the session that set it");
    assert!(node.stat.ephemeral);
    assert_eq!(node.stat.stamp, held.stamp);
    match holder
        .guarded(
            &fence,
            Op::Set {
                path: data.clone(),
                data: b"again".to_vec(),
                version: None,
            },
        )
        .await
    {
        Ok(OpResult::Set(_)) => {}
        other => panic!("guarded set after the revoker left: got {other:?}"),
    }
    let gone = observer
        .watch_gone(&held.path)
        .await
        .expect("watch_gone")
        .expect("the node exists");
    holder.close().await.expect("close the holder");
    within("the node goes with the holder's session", gone)
        .await
        .expect("deleted");
    assert!(observer.get(&held.path).await.expect("get").is_none());
    observer.close().await.expect("close");
}

/// A data watch fires when the node is deleted, by another session or
/// by its own.
pub async fn prim_get_watch_fires_on_delete(h: &dyn Harness) {
    let root = h.root("prim_get_watch_fires_on_delete");
    let a = h.open().await;
    let b = h.open().await;
    let p = format!("{root}/node");
    for deleter in [&a, &b] {
        a.create(&p, b"x", CreateMode::Persistent)
            .await
            .expect("create");
        let (_, watch) = b
            .get_watch(&p)
            .await
            .expect("get_watch")
            .expect("the node exists");
        deleter.delete(&p, None).await.expect("delete");
        within("the data watch fires on delete", watch)
            .await
            .expect("the watch fires Ok");
        assert!(
            b.get_watch(&p).await.expect("get_watch").is_none(),
            "deleted"
        );
    }
    a.close().await.expect("close");
    b.close().await.expect("close");
}

/// A data watch on an ephemeral node fires when the node's session ends:
/// expired, and closed.
pub async fn prim_get_watch_fires_on_owner_end(h: &dyn Harness) {
    let root = h.root("prim_get_watch_fires_on_owner_end");
    let watcher = h.open().await;
    for expire in [true, false] {
        let owner = h.open().await;
        let held = owner
            .create(
                &format!("{root}/lock/holder-"),
                b"",
                CreateMode::EphemeralSequential,
            )
            .await
            .expect("create");
        let (node, watch) = watcher
            .get_watch(&held.path)
            .await
            .expect("get_watch")
            .expect("the owner's node is visible");
        assert!(node.stat.ephemeral);
        if expire {
            h.expire(&owner).await;
        } else {
            owner.close().await.expect("close");
        }
        within("the data watch fires at the owner's end", watch)
            .await
            .expect("the watch fires Ok");
        assert!(
            watcher
                .get_watch(&held.path)
                .await
                .expect("get_watch")
                .is_none(),
            "the node went with its session"
        );
    }
    watcher.close().await.expect("close");
}

/// A data watch does not fire for changes to other nodes: a sibling
/// (also one whose name extends the node's), a child, the parent. Each
/// unrelated change is awaited through a watch of the same session that
/// it does fire; where one session's events arrive in order (ZooKeeper,
/// Redis, memory) a data watch that fired on it would be ready by then.
/// Then a real change fires it.
pub async fn prim_get_watch_ignores_other_nodes(h: &dyn Harness) {
    let root = h.root("prim_get_watch_ignores_other_nodes");
    let a = h.open().await;
    let b = h.open().await;
    let dir = format!("{root}/dir");
    let p = format!("{dir}/n");
    let sibling = format!("{dir}/nx");
    let child = format!("{p}/kid");
    a.create(&p, b"same", CreateMode::Persistent)
        .await
        .expect("create");
    a.create(&sibling, b"", CreateMode::Persistent)
        .await
        .expect("create the sibling");
    let (_, mut watch) = b
        .get_watch(&p)
        .await
        .expect("get_watch")
        .expect("the node exists");

    // Each unrelated change, with a watch of b's that it fires.
    let reference = data_watch(&b, &sibling).await;
    a.set(&sibling, b"changed", None)
        .await
        .expect("set sibling");
    within("the sibling's watch", reference).await.expect("Ok");
    assert!(!is_ready(&mut watch).await, "fired for a sibling's set");

    let (_, reference) = b.children_watch(&p).await.expect("children_watch");
    a.create(&child, b"", CreateMode::Persistent)
        .await
        .expect("create child");
    within("the node's children watch", reference)
        .await
        .expect("Ok");
    assert!(!is_ready(&mut watch).await, "fired for a child's create");

    let reference = data_watch(&b, &child).await;
    a.set(&child, b"changed", None).await.expect("set child");
    within("the child's watch", reference).await.expect("Ok");
    assert!(!is_ready(&mut watch).await, "fired for a child's set");

    let reference = data_watch(&b, &child).await;
    a.delete(&child, None).await.expect("delete child");
    within("the child's watch", reference).await.expect("Ok");
    assert!(!is_ready(&mut watch).await, "fired for a child's delete");

    let reference = data_watch(&b, &dir).await;
    a.set(&dir, b"changed", None).await.expect("set parent");
    within("the parent's watch", reference).await.expect("Ok");
    assert!(!is_ready(&mut watch).await, "fired for the parent's set");

    let reference = data_watch(&b, &sibling).await;
    a.delete(&sibling, None).await.expect("delete sibling");
    within("the sibling's watch", reference).await.expect("Ok");
    assert!(!is_ready(&mut watch).await, "fired for a sibling's delete");

    // The node itself, set to the data it has: that fires it.
    a.set(&p, b"same", None).await.expect("set");
    within("the data watch fires on its node's set", watch)
        .await
        .expect("the watch fires Ok");
    a.close().await.expect("close");
    b.close().await.expect("close");
}

/// A set racing `get_watch` is never missed: many data watches are armed
/// at the moment another session sets the node; each either read the new
/// data or fires. And a set made right after `get_watch` returns fires
/// it. A missed change hangs one.
pub async fn prim_get_watch_races_set(h: &dyn Harness) {
    const ROUNDS: usize = 16;
    const WATCHERS: usize = 8;
    let root = h.root("prim_get_watch_races_set");
    let writer = h.open().await;
    let readers = [h.open().await, h.open().await];
    let p = format!("{root}/node");
    writer
        .create(&p, b"start", CreateMode::Persistent)
        .await
        .expect("create");
    for round in 0..ROUNDS {
        let value = format!("v-{round}").into_bytes();
        let mut tasks = JoinSet::new();
        for i in 0..WATCHERS {
            let (s, path, want) = (readers[i % readers.len()].clone(), p.clone(), value.clone());
            tasks.spawn(async move {
                let (node, watch) = s
                    .get_watch(&path)
                    .await
                    .expect("get_watch")
                    .expect("the node exists");
                // The set is either in the read or fires the watch.
                if node.data != want {
                    watch.await.expect("the watch fires Ok");
                }
            });
            if i == WATCHERS / 2 {
                let (w, p, value) = (writer.clone(), p.clone(), value.clone());
                tasks.spawn(async move {
                    w.set(&p, &value, None).await.expect("set");
                });
            }
        }
        within("every data watch racing a set", async {
            while let Some(r) = tasks.join_next().await {
                r.expect("task");
            }
        })
        .await;
    }
    // A set issued the moment get_watch has returned.
    for (round, reader) in readers.iter().enumerate() {
        let (_, watch) = reader
            .get_watch(&p)
            .await
            .expect("get_watch")
            .expect("the node exists");
        writer
            .set(&p, format!("right after {round}").as_bytes(), None)
            .await
            .expect("set");
        within("the data watch sees a set right after it", watch)
            .await
            .expect("the watch fires Ok");
    }
    writer.close().await.expect("close");
    for r in readers {
        r.close().await.expect("close");
    }
}

/// `Stat::created_at`: the server's creation time on ZooKeeper, Redis and
/// memory (near the test's clock: the servers run beside it), none on
/// etcd. `get`, `get_watch` and a `set`'s answer agree, and a set does
/// not change it.
pub async fn prim_created_at(h: &dyn Harness) {
    /// How far the server's clock may be from the test's.
    const SKEW: Duration = Duration::from_secs(120);
    let root = h.root("prim_created_at");
    let a = h.open().await;
    let b = h.open().await;
    let expect_time = match a.backend() {
        "etcd" => Some(false),
        "zk" | "redis" | "mem" => Some(true),
        // Another backend may or may not record one; if it does, it must
        // be sane.
        _ => None,
    };
    for (i, mode) in [
        CreateMode::Persistent,
        CreateMode::Ephemeral,
        CreateMode::PersistentSequential,
        CreateMode::EphemeralSequential,
    ]
    .into_iter()
    .enumerate()
    {
        let before = SystemTime::now();
        let c = a
            .create(&format!("{root}/dir-{i}/n-"), b"", mode)
            .await
            .expect("create");
        let after = SystemTime::now();
        let node = a.get(&c.path).await.expect("get").expect("the node");
        let created = node.stat.created_at;
        match (expect_time, created) {
            (Some(false), Some(t)) => panic!("{}: created_at {t:?} on etcd", c.path),
            (Some(true), None) => panic!("{}: no created_at on {}", c.path, a.backend()),
            (_, Some(t)) => assert!(
                t + SKEW >= before && t <= after + SKEW,
                "{}: created_at {t:?} is not near the create ({before:?} .. {after:?})",
                c.path
            ),
            (_, None) => {}
        }
        let (watched, _watch) = b
            .get_watch(&c.path)
            .await
            .expect("get_watch")
            .expect("the node");
        assert_eq!(watched.stat.created_at, created, "get_watch agrees");
        let st = b.set(&c.path, b"changed", None).await.expect("set");
        assert_eq!(st.created_at, created, "a set's answer carries it");
        let node = a.get(&c.path).await.expect("get").expect("the node");
        assert_eq!(node.stat.created_at, created, "a set does not change it");
    }
    // The parents a create made have one too.
    let parent = a.get(&format!("{root}/dir-0")).await.expect("get");
    let parent = parent.expect("the parent was made");
    if let Some(want) = expect_time {
        assert_eq!(
            parent.stat.created_at.is_some(),
            want,
            "a parent's created_at: {:?}",
            parent.stat.created_at
        );
    }
    a.close().await.expect("close");
    b.close().await.expect("close");
}

/// `Stat::owner`: an ephemeral node names the session that made it, as
/// that session's `id()` shows it, to anyone reading it (`get`,
/// `get_watch`, a `set`'s answer) and after another session's `set`; a
/// persistent node names none.
pub async fn prim_owner_names_the_session(h: &dyn Harness) {
    let root = h.root("prim_owner_names_the_session");
    let a = h.open().await;
    let b = h.open().await;
    assert_ne!(a.id(), b.id(), "two sessions, two ids");
    for (i, mode) in [
        CreateMode::Persistent,
        CreateMode::Ephemeral,
        CreateMode::PersistentSequential,
        CreateMode::EphemeralSequential,
    ]
    .into_iter()
    .enumerate()
    {
        let want = mode.is_ephemeral().then(|| a.id());
        let c = a
            .create(&format!("{root}/dir-{i}/n-"), b"", mode)
            .await
            .expect("create");
        let node = b.get(&c.path).await.expect("get").expect("the node");
        assert_eq!(node.stat.owner, want, "{}: get by another session", c.path);
        let (watched, _watch) = b
            .get_watch(&c.path)
            .await
            .expect("get_watch")
            .expect("the node");
        assert_eq!(watched.stat.owner, want, "{}: get_watch", c.path);
        let st = b.set(&c.path, b"changed", None).await.expect("set");
        assert_eq!(
            st.owner, want,
            "{}: a set by another session's answer",
            c.path
        );
        let node = a.get(&c.path).await.expect("get").expect("the node");
        assert_eq!(node.stat.owner, want, "{}: after another's set", c.path);
    }
    a.close().await.expect("close");
    b.close().await.expect("close");
}

#[doc(hidden)]
#[macro_export]
macro_rules! __primitives_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            primitives::prim_watch_gone_is_armed,
            primitives::prim_watch_gone_listed_waits_for_the_listed_node,
            primitives::prim_path_rules_typed_errors,
            primitives::prim_path_rules_checked_before_io,
            primitives::prim_zookeeper_tree_reserved,
            primitives::prim_path_limits_accepted,
            primitives::prim_create_get_basics,
            primitives::prim_missing_nodes,
            primitives::prim_delete_not_empty,
            primitives::prim_take_leaf_returns_the_data_once,
            primitives::prim_children_prefixed_lists_only_those,
            primitives::prim_cas_versions,
            primitives::prim_sequences_increase,
            primitives::prim_stamps_increase,
            primitives::prim_children_in_creation_order,
            primitives::prim_children_watch_fires,
            primitives::prim_children_watch_fires_on_session_end,
            primitives::prim_children_watch_never_misses,
            primitives::prim_children_watch_races_change,
            primitives::prim_wait_gone_basics,
            primitives::prim_wait_gone_races_delete,
            primitives::prim_ephemeral_gone_on_expire,
            primitives::prim_ephemeral_gone_on_close,
            primitives::prim_pending_waits_end_with_session,
            primitives::prim_child_of_ephemeral,
            primitives::prim_create_after_parent_replaced,
            primitives::prim_guarded_while_fence_holds,
            primitives::prim_guarded_lost_when_fence_deleted,
            primitives::prim_guarded_lost_with_wrong_stamp,
            primitives::prim_get_watch_missing_node,
            primitives::prim_get_watch_fires_on_set_by_other,
            primitives::prim_get_watch_fires_on_delete,
            primitives::prim_get_watch_fires_on_owner_end,
            primitives::prim_get_watch_ignores_other_nodes,
            primitives::prim_get_watch_races_set,
            primitives::prim_created_at,
            primitives::prim_owner_names_the_session,
        );
    };
}

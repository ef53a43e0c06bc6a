//! Argument checks of the primitive contract: every path rule and the data
//! limit give their typed error on every method, before any I/O, and what
//! the rules allow is accepted.

use coord_core::path::{MAX_DATA_LEN, MAX_PATH_LEN};

use coord_core::{CreateMode, Error, Fence, Op, PathErrorKind, Result, Session};

use super::support::assert_err;
use crate::{within, Harness};

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
        (
            "get_many, the bad path after a good one",
            s.get_many(&[good.to_owned(), bad.to_owned()])
                .await
                .map(drop),
        ),
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
        (
            "guarded put",
            s.guarded(&guard_good, Op::put(bad, b"d")).await.map(drop),
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
        "guarded put",
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
        (
            "guarded put",
            s.guarded(&fence, Op::put(path, data)).await.map(drop),
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

//! Listing children in the primitive contract: `children` in creation
//! order, `children_prefixed` by name prefix.

use coord_core::{CreateMode, Error, PathErrorKind};

use super::support::assert_err;
use crate::Harness;

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

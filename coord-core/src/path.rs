//! Path rules, identical on every backend and checked before any I/O.
//!
//! A path is absolute and `/`-separated, like a ZooKeeper path:
//! - it starts with `/`; the root is `/`;
//! - no segment is empty (`//`), and nothing but the root ends with `/`;
//! - no segment is `.` or `..`;
//! - no NUL, no control character (U+0001–U+001F, U+007F–U+009F), and none of
//!   the code points ZooKeeper reserves (U+D800–U+F8FF, U+FFF0–U+FFFF);
//! - at most [`MAX_PATH_LEN`] bytes;
//! - not `/zookeeper` nor below it: ZooKeeper keeps its own nodes there
//!   (quotas, config), so it is refused on every backend alike.
//!
//! Node data is at most [`MAX_DATA_LEN`] bytes. That is a little under 1 MiB
//! on purpose: ZooKeeper's default `jute.maxbuffer` (1 MiB − 1 byte) bounds a
//! whole request, so data of exactly 1 MiB would fail there and nowhere else.

use crate::error::{Error, PathErrorKind, Result};

/// The longest path accepted, in bytes.
pub const MAX_PATH_LEN: usize = 1024;

/// The most data one node may hold, in bytes (1,000,000: under 1 MiB so that
/// it fits ZooKeeper's default request limit with room for the request).
pub const MAX_DATA_LEN: usize = 1_000_000;

/// ZooKeeper's own tree, refused by [`validate`] on every backend.
pub const RESERVED: &str = "/zookeeper";

fn invalid(path: &str, kind: PathErrorKind) -> Error {
    Error::InvalidPath {
        path: path.to_owned(),
        kind,
    }
}

fn forbidden(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{e000}'..='\u{f8ff}'
        | '\u{fff0}'..='\u{ffff}')
    // U+D800–U+DFFF cannot occur in a Rust `str`.
}

/// Check `path` against every rule above; the root `/` is valid.
///
/// # Errors
/// [`Error::InvalidPath`] naming the first rule broken.
pub fn validate(path: &str) -> Result<()> {
    if path.is_empty() {
        return Err(invalid(path, PathErrorKind::Empty));
    }
    if path.len() > MAX_PATH_LEN {
        return Err(invalid(path, PathErrorKind::TooLong));
    }
    if !path.starts_with('/') {
        return Err(invalid(path, PathErrorKind::NotAbsolute));
    }
    // One pass over the bytes, without branching on them (every path of
    // every operation comes through here): control bytes, any non-ASCII
    // byte, and any `//` or `/.`, without which no segment can be empty,
    // `.` or `..`. Every forbidden code point below U+0080 is a control
    // byte; the rest are looked for only in a path that is not all ASCII.
    let (mut control, mut ascii, mut odd_segment) = (false, true, false);
    let mut prev = 0u8;
    for &b in path.as_bytes() {
        control |= b < 0x20 || b == 0x7f;
        ascii &= b < 0x80;
        odd_segment |= prev == b'/' && (b == b'/' || b == b'.');
        prev = b;
    }
    if control || (!ascii && path.chars().any(forbidden)) {
        return Err(invalid(path, PathErrorKind::ForbiddenCharacter));
    }
    if path == "/" {
        return Ok(());
    }
    if path.ends_with('/') {
        return Err(invalid(path, PathErrorKind::TrailingSlash));
    }
    if odd_segment {
        for seg in path.as_bytes()[1..].split(|b| *b == b'/') {
            match seg {
                b"" => return Err(invalid(path, PathErrorKind::EmptySegment)),
                b"." | b".." => return Err(invalid(path, PathErrorKind::RelativeSegment)),
                _ => {}
            }
        }
    }
    if path == RESERVED
        || path
            .strip_prefix(RESERVED)
            .is_some_and(|r| r.starts_with('/'))
    {
        return Err(invalid(path, PathErrorKind::Reserved));
    }
    Ok(())
}

/// Check `path` like [`validate`], and refuse the root too: for operations
/// that need a node below it (create, delete, set).
///
/// # Errors
/// [`Error::InvalidPath`].
pub fn validate_non_root(path: &str) -> Result<()> {
    validate(path)?;
    if path == "/" {
        return Err(invalid(path, PathErrorKind::Root));
    }
    Ok(())
}

/// Check a directory and the start of its children's names, as
/// [`Session::children_prefixed`](crate::session::Session::children_prefixed)
/// takes them: `dir` by [`validate`]; `prefix` must not hold a `/`, and
/// `dir/prefix` must pass [`validate`] too (so no forbidden character and
/// no `.` or `..`). An empty prefix is every child.
///
/// # Errors
/// [`Error::InvalidPath`], naming `dir/prefix` when the prefix is at fault.
pub fn validate_name_prefix(dir: &str, prefix: &str) -> Result<()> {
    validate(dir)?;
    if prefix.is_empty() {
        return Ok(());
    }
    let joined = join(dir, prefix);
    if prefix.contains('/') {
        return Err(invalid(&joined, PathErrorKind::NamePrefix));
    }
    validate(&joined)
}

/// Check that node data fits in [`MAX_DATA_LEN`].
///
/// # Errors
/// [`Error::InvalidArgument`] when it is larger.
pub fn validate_data(data: &[u8]) -> Result<()> {
    if data.len() > MAX_DATA_LEN {
        return Err(Error::InvalidArgument(format!(
            "node data is {} bytes; the limit is {MAX_DATA_LEN}",
            data.len()
        )));
    }
    Ok(())
}

/// The parent of a valid non-root path (`/a/b` → `/a`, `/a` → `/`).
pub fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// The last segment of a valid path (`/a/b` → `b`; `/` → ``).
pub fn name(path: &str) -> &str {
    match path.rfind('/') {
        Some(i) => &path[i + 1..],
        None => path,
    }
}

/// Join a directory and a child name (`/` + `a` → `/a`, `/x` + `a` → `/x/a`).
pub fn join(dir: &str, child: &str) -> String {
    let dir = if dir == "/" { "" } else { dir };
    let mut out = String::with_capacity(dir.len() + 1 + child.len());
    out.push_str(dir);
    out.push('/');
    out.push_str(child);
    out
}

/// `dir/name` for a `name` that must be exactly one segment (a member's
/// or an item's name), checked before any I/O.
///
/// # Errors
/// [`Error::InvalidPath`] for a name with a `/`, an empty one, or any the
/// path rules refuse (the whole path is checked).
pub fn join_segment(dir: &str, name: &str) -> Result<String> {
    let node = join(dir, name);
    validate_non_root(&node)?;
    if parent(&node) != dir {
        return Err(invalid(&node, PathErrorKind::EmptySegment));
    }
    Ok(node)
}

/// Every ancestor of a valid path, nearest the root first, excluding `/`
/// and the path itself (`/a/b/c` → `/a`, `/a/b`).
pub fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/')
        .filter(|(i, _)| *i > 0)
        .map(move |(i, _)| &path[..i])
}

/// Whether the valid path `path` is `root` or a node under it (`/a/b` is
/// within `/a`; `/ab` is not; everything is within `/`).
pub fn is_within(path: &str, root: &str) -> bool {
    root == "/"
        || path == root
        || (path.len() > root.len()
            && path.starts_with(root)
            && path.as_bytes()[root.len()] == b'/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_segment_takes_exactly_one_segment() {
        assert_eq!(join_segment("/g", "m-1").ok().as_deref(), Some("/g/m-1"));
        assert_eq!(join_segment("/", "m").ok().as_deref(), Some("/m"));
        for bad in ["a/b", "", ".", "..", "a\0b"] {
            assert!(
                matches!(join_segment("/g", bad), Err(Error::InvalidPath { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn within() {
        assert!(is_within("/a", "/a"));
        assert!(is_within("/a/b/c", "/a"));
        assert!(is_within("/x", "/"));
        assert!(is_within("/", "/"));
        assert!(!is_within("/ab", "/a"));
        assert!(!is_within("/a", "/a/b"));
        assert!(!is_within("/b", "/a"));
    }

    #[test]
    fn helpers() {
        assert_eq!(parent("/a/b"), "/a");
        assert_eq!(parent("/a"), "/");
        assert_eq!(name("/a/b"), "b");
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/x", "a"), "/x/a");
        assert_eq!(ancestors("/a/b/c").collect::<Vec<_>>(), vec!["/a", "/a/b"]);
        assert_eq!(ancestors("/a").count(), 0);
    }

    #[test]
    fn each_rule_names_its_kind_ascii_or_not() {
        use PathErrorKind as K;
        let long = format!("/{}", "a".repeat(MAX_PATH_LEN));
        let cases: &[(&str, Option<K>)] = &[
            (&long, Some(K::TooLong)),
            ("/a/b", None),
            ("/é/ü", None),
            ("/a.b/..c/...", None),
            ("", Some(K::Empty)),
            ("a", Some(K::NotAbsolute)),
            ("/a\u{0}b", Some(K::ForbiddenCharacter)),
            ("/a\u{1f}", Some(K::ForbiddenCharacter)),
            ("/a\u{7f}", Some(K::ForbiddenCharacter)),
            ("/é\u{1}", Some(K::ForbiddenCharacter)),
            ("/a\u{80}", Some(K::ForbiddenCharacter)),
            ("/a\u{9f}", Some(K::ForbiddenCharacter)),
            ("/a\u{e000}", Some(K::ForbiddenCharacter)),
            ("/a\u{fff0}", Some(K::ForbiddenCharacter)),
            ("/a\u{a0}\u{f900}\u{ffef}", None),
            // The character rule comes before the segment rules.
            ("//\u{7f}", Some(K::ForbiddenCharacter)),
            ("/a/", Some(K::TrailingSlash)),
            ("/a//b", Some(K::EmptySegment)),
            ("/a/./b", Some(K::RelativeSegment)),
            ("/..", Some(K::RelativeSegment)),
            ("/é/..", Some(K::RelativeSegment)),
        ];
        for (p, want) in cases {
            let got = match validate(p) {
                Ok(()) => None,
                Err(Error::InvalidPath { kind, .. }) => Some(kind),
                Err(e) => panic!("{p:?}: {e}"),
            };
            assert_eq!(got, *want, "{p:?}");
        }
    }

    #[test]
    fn zookeepers_tree_is_reserved() {
        for p in ["/zookeeper", "/zookeeper/x", "/zookeeper/quota/a"] {
            assert!(
                matches!(
                    validate(p),
                    Err(Error::InvalidPath {
                        kind: PathErrorKind::Reserved,
                        ..
                    })
                ),
                "{p}"
            );
        }
        for p in [
            "/zookeeperx",
            "/zookeeper-x/y",
            "/a/zookeeper",
            "/Zookeeper",
            "/",
        ] {
            assert!(validate(p).is_ok(), "{p}");
        }
    }
}

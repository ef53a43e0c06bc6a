//! How coord paths map to etcd keys.
//!
//! etcd has a flat key space; coord has a tree. A node at path `/a/b` is the
//! key `<namespace>/a/b`; the children of `/a` are the keys directly under
//! `<namespace>/a/` (one more segment, no further `/`). Parents are real keys
//! (empty value, no lease), written by the create that needs them, so a
//! directory exists exactly when its key does. The root `/` has no key: it
//! always exists, and its children are the keys directly under
//! `<namespace>/`.
//!
//! This is the layout Go's `concurrency` package uses too: `etcdctl lock P`
//! makes `P/<lease id in hex>`, which is a child of the path `P` here.

/// Maps paths to keys under one namespace. Paths reaching it are valid
/// (checked by `coord_core::Session`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeySpace {
    /// Prepended to every path; never ends with `/`; may be empty.
    namespace: String,
}

impl KeySpace {
    /// A key space under `namespace` (trailing `/` dropped).
    pub(crate) fn new(namespace: &str) -> Self {
        KeySpace {
            namespace: namespace.trim_end_matches('/').to_owned(),
        }
    }

    /// The key of a node. Not meaningful for the root, which has none.
    pub(crate) fn key(&self, path: &str) -> String {
        debug_assert!(path != "/");
        format!("{}{}", self.namespace, path)
    }

    /// The prefix every child (and deeper descendant) of `dir` starts with.
    pub(crate) fn child_prefix(&self, dir: &str) -> String {
        if dir == "/" {
            format!("{}/", self.namespace)
        } else {
            format!("{}{}/", self.namespace, dir)
        }
    }

    /// The path of a node's key; `None` for a key outside this key space
    /// (another namespace's, a TTL marker).
    pub(crate) fn path_of(&self, key: &str) -> Option<String> {
        let rest = key.strip_prefix(self.namespace.as_str())?;
        (rest.len() > 1 && rest.starts_with('/')).then(|| rest.to_owned())
    }

    /// The key range `[start, end)` that holds the node at `path` and every
    /// node under it: for the root, every key of the namespace's tree;
    /// otherwise from the node's key up to the key after its child prefix
    /// (which also holds siblings like `/a-b` of `/a`: callers filter).
    pub(crate) fn subtree_range(&self, path: &str) -> (String, String) {
        let prefix = self.child_prefix(path);
        // `/` + 1 is `0`: the end of the range under `prefix`.
        let end = format!("{}0", &prefix[..prefix.len() - 1]);
        if path == "/" {
            (prefix, end)
        } else {
            (self.key(path), end)
        }
    }

    /// The marker key of a TTL node's lease (see `crate::ttl`): outside the
    /// tree (no path's key or child prefix starts `<namespace>!`).
    pub(crate) fn ttl_marker(&self, lease: i64) -> String {
        format!("{}!ttl/{lease:x}", self.namespace)
    }

    /// The keys of the proper ancestors of `path`, below the root, from the
    /// top down: `/a/b/c` → keys of `/a`, `/a/b`.
    pub(crate) fn ancestors(&self, path: &str) -> Vec<String> {
        let mut out = Vec::new();
        for (i, c) in path.char_indices().skip(1) {
            if c == '/' {
                out.push(self.key(&path[..i]));
            }
        }
        out
    }
}

/// The name of the direct child of the directory with `prefix` (from
/// [`KeySpace::child_prefix`]) that `key` is, or `None` when `key` is not
/// under it or is deeper down.
pub(crate) fn direct_child<'k>(prefix: &str, key: &'k str) -> Option<&'k str> {
    let rest = key.strip_prefix(prefix)?;
    if rest.is_empty() || rest.contains('/') {
        None
    } else {
        Some(rest)
    }
}

/// The end of the key range of every key that starts with `prefix`: the
/// prefix with its last byte below 0xff raised by one (and what follows it
/// dropped); `\0`, etcd's "to the end of the key space", when there is none.
pub(crate) fn range_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// The suffix a sequential create appends: the session's lease id in hex
/// (16 digits) and the session's create counter (10 digits). The lease id is
/// unique among live sessions and the counter within the session, so the
/// name is unique among siblings before etcd assigns the create revision,
/// and a retry after a lost answer can look for exactly this name.
pub(crate) fn sequential_suffix(lease: i64, counter: u64) -> String {
    format!("{lease:016x}{counter:010}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_without_namespace_are_the_paths() {
        let ks = KeySpace::new("");
        assert_eq!(ks.key("/a"), "/a");
        assert_eq!(ks.key("/a/b"), "/a/b");
        assert_eq!(ks.child_prefix("/"), "/");
        assert_eq!(ks.child_prefix("/a"), "/a/");
    }

    #[test]
    fn namespace_is_prepended_and_trailing_slash_dropped() {
        for ns in ["/app", "/app/", "/app//"] {
            let ks = KeySpace::new(ns);
            assert_eq!(ks.key("/a/b"), "/app/a/b");
            assert_eq!(ks.child_prefix("/"), "/app/");
            assert_eq!(ks.child_prefix("/a"), "/app/a/");
        }
        let ks = KeySpace::new("tenant1");
        assert_eq!(ks.key("/x"), "tenant1/x");
        assert_eq!(ks.child_prefix("/"), "tenant1/");
    }

    #[test]
    fn ancestors_are_listed_top_down_without_root_or_self() {
        let ks = KeySpace::new("/ns");
        assert!(ks.ancestors("/a").is_empty());
        assert_eq!(ks.ancestors("/a/b"), vec!["/ns/a"]);
        assert_eq!(ks.ancestors("/a/b/c"), vec!["/ns/a", "/ns/a/b"]);
        // Multi-byte characters do not confuse the split.
        assert_eq!(ks.ancestors("/é/ü/x"), vec!["/ns/é", "/ns/é/ü"]);
    }

    #[test]
    fn direct_children_only() {
        assert_eq!(direct_child("/a/", "/a/b"), Some("b"));
        assert_eq!(direct_child("/a/", "/a/b/c"), None);
        assert_eq!(direct_child("/a/", "/a/"), None);
        assert_eq!(direct_child("/a/", "/ab"), None);
        assert_eq!(direct_child("/a/", "/a"), None);
        assert_eq!(direct_child("/", "/x"), Some("x"));
        assert_eq!(direct_child("/", "/x/y"), None);
        // A key made by `etcdctl lock /a` is a child.
        assert_eq!(
            direct_child("/a/", "/a/694d9a3c1e2b4f01"),
            Some("694d9a3c1e2b4f01")
        );
    }

    #[test]
    fn range_ends_hold_exactly_the_keys_with_the_prefix() {
        assert_eq!(range_end(b"/a/"), b"/a0");
        assert_eq!(range_end(b"/a/q"), b"/a/r");
        assert_eq!(range_end(b"/a/\xff\xff"), b"/a0");
        assert_eq!(range_end(b"\xff"), b"\0");
        assert_eq!(range_end(b""), b"\0");
        // The end of a child prefix is the end subtree_range uses.
        let ks = KeySpace::new("/ns");
        let (_, end) = ks.subtree_range("/a");
        assert_eq!(range_end(ks.child_prefix("/a").as_bytes()), end.as_bytes());
    }

    #[test]
    fn sequential_suffix_is_fixed_width_and_unique_per_counter() {
        let a = sequential_suffix(0x694d_9a3c_1e2b_4f01, 7);
        let b = sequential_suffix(0x694d_9a3c_1e2b_4f01, 8);
        assert_eq!(a, "694d9a3c1e2b4f010000000007");
        assert_eq!(a.len(), 26);
        assert_ne!(a, b);
        assert_eq!(sequential_suffix(1, 0).len(), 26);
        // Distinct leases never collide, whatever the counters.
        assert_ne!(sequential_suffix(1, 10), sequential_suffix(0x10, 0));
    }
}

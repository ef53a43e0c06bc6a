//! A tree as the history logs it: one line per node, sorted by path —
//! `<path> v<version> s<stamp> <e|p> <data, quoted>` — so a cache's view
//! and the server's tree compare as text, and a difference names its
//! nodes.

use std::collections::BTreeMap;

use coordination::Node;

/// One node's line.
pub fn line(path: &str, node: &Node) -> String {
    format!(
        "{path} v{} s{} {} {:?}",
        node.stat.version,
        node.stat.stamp,
        if node.stat.ephemeral { 'e' } else { 'p' },
        String::from_utf8_lossy(&node.data)
    )
}

/// The whole tree, one line per node in path order (empty: no node).
pub fn text(nodes: &BTreeMap<String, Node>) -> String {
    let lines: Vec<String> = nodes.iter().map(|(p, n)| line(p, n)).collect();
    lines.join("\n")
}

/// The lines of a tree's text, by path.
pub fn parse(text: &str) -> BTreeMap<&str, &str> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| (l.split_once(' ').map_or(l, |(p, _)| p), l))
        .collect()
}

/// Where two trees' texts differ: one entry per path, `what` against
/// `server`.
pub fn diff(what: &str, seen: &str, server: &str) -> Vec<String> {
    let (a, b) = (parse(seen), parse(server));
    let mut out = Vec::new();
    for (path, l) in &a {
        match b.get(path) {
            None => out.push(format!("{path}: {what} has it ({l}), the server has not")),
            Some(s) if s != l => out.push(format!("{path}: {what} has {l}, the server {s}")),
            Some(_) => {}
        }
    }
    for (path, s) in &b {
        if !a.contains_key(path) {
            out.push(format!("{path}: the server has {s}, {what} has not"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use coordination::Stat;

    fn node(data: &str, version: u64, stamp: u64, ephemeral: bool) -> Node {
        Node::new(
            data.as_bytes().to_vec(),
            Stat::new(version, stamp, ephemeral, None),
        )
    }

    #[test]
    fn texts_compare_and_differences_are_named() {
        let mut a = BTreeMap::new();
        a.insert("/t".to_string(), node("", 1, 2, false));
        a.insert("/t/x".to_string(), node("one two", 3, 4, true));
        let t = text(&a);
        assert_eq!(t, "/t v1 s2 p \"\"\n/t/x v3 s4 e \"one two\"");
        assert_eq!(parse(&t).len(), 2);
        assert!(diff("c", &t, &t).is_empty());

        let mut b = a.clone();
        b.remove("/t/x");
        b.insert("/t/y".to_string(), node("y", 5, 6, false));
        let d = diff("the cache", &t, &text(&b));
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d[0].starts_with("/t/x: the cache has it"), "{d:?}");
        assert!(d[1].starts_with("/t/y: the server has"), "{d:?}");
    }
}

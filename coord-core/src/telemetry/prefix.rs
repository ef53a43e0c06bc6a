//! The tracing target, and the path prefix that labels metrics.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The tracing target of every span and event coord emits.
pub const TARGET: &str = "coord";

static PREFIX_DEPTH: AtomicUsize = AtomicUsize::new(1);

/// Set how many leading segments of a recipe's path make its metrics'
/// `prefix` label (default 1; 0 puts every path under `/`). Process-wide;
/// meant to be set once at start-up.
pub fn set_path_prefix_depth(depth: usize) {
    PREFIX_DEPTH.store(depth, Ordering::Relaxed);
}

/// The depth [`set_path_prefix_depth`] set (1 unless changed).
pub fn path_prefix_depth() -> usize {
    PREFIX_DEPTH.load(Ordering::Relaxed)
}

/// `path` cut to its first `depth` segments: `("/a/b/c", 1)` → `"/a"`,
/// `("/a/b/c", 2)` → `"/a/b"`, `(_, 0)` → `"/"`; a shorter path whole.
pub fn path_prefix(path: &str, depth: usize) -> &str {
    if depth == 0 {
        return "/";
    }
    let mut seen = 0;
    for (i, b) in path.bytes().enumerate().skip(1) {
        if b == b'/' {
            seen += 1;
            if seen == depth {
                return &path[..i];
            }
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use super::path_prefix;

    #[test]
    fn prefixes_keep_only_leading_segments() {
        assert_eq!(path_prefix("/locks/report/x", 1), "/locks");
        assert_eq!(path_prefix("/locks/report/x", 2), "/locks/report");
        assert_eq!(path_prefix("/locks/report/x", 3), "/locks/report/x");
        assert_eq!(path_prefix("/locks/report/x", 9), "/locks/report/x");
        assert_eq!(path_prefix("/locks", 1), "/locks");
        assert_eq!(path_prefix("/locks/report", 0), "/");
        assert_eq!(path_prefix("/", 1), "/");
    }
}

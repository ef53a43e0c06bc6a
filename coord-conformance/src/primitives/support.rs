//! What the primitive-contract tests share: a typed-error assertion and a
//! fence built from a create's answer.

use coord_core::Fence;

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
pub(super) use assert_err;

/// The fence of the node at `path` made with `stamp`.
pub(super) fn fence_of(path: &str, stamp: u64) -> Fence {
    Fence {
        path: path.to_owned(),
        stamp,
    }
}

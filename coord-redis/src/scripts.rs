//! The Lua scripts behind every operation: each mutation of the tree (and
//! each read, which may reap a dead session's nodes) is one script, so it is
//! atomic on the server. Sent with EVALSHA, falling back to EVAL when the
//! server does not know the script yet (`redis::Script` does both).
//!
//! The layout of keys and channels is described at the top of
//! `lua/prelude.lua`, which every script starts with.

use std::sync::LazyLock;

use redis::Script;

const PRELUDE: &str = include_str!("lua/prelude.lua");

fn script(body: &str) -> Script {
    Script::new(&format!("{PRELUDE}\n{body}"))
}

macro_rules! scripts {
    ($($name:ident = $file:literal;)*) => {
        $(
            pub(crate) static $name: LazyLock<Script> =
                LazyLock::new(|| script(include_str!(concat!("lua/", $file))));
        )*
    };
}

scripts! {
    OPEN = "open.lua";
    END = "end.lua";
    REAP = "reap.lua";
    SWEEP = "sweep.lua";
    CREATE = "create.lua";
    GET = "get.lua";
    GET_MANY = "get_many.lua";
    SET = "set.lua";
    DELETE = "delete.lua";
    CHILDREN = "children.lua";
    PLACE = "place.lua";
    FIRST = "first.lua";
    GUARDED = "guarded.lua";
    TRANSACTION = "transaction.lua";
    TXN_OUTCOME = "txn_outcome.lua";
}

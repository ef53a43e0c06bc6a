//! Reading the functions' rows: stats, creates, and the integer types
//! PostgreSQL has (signed) mapped onto coord's (unsigned).

use std::time::SystemTime;

use coord_core::{Created, SessionId, Stat};
use tokio_postgres::Row;

use crate::error::BACKEND;

pub(crate) fn version_arg(v: Option<u64>) -> Option<i64> {
    v.map(|v| i64::try_from(v).unwrap_or(i64::MAX))
}

pub(crate) fn u64_of(v: i64) -> u64 {
    u64::try_from(v).unwrap_or_default()
}

/// The answer to a create: columns `path, seq, stamp` from `at` on.
pub(crate) fn created_at(r: &Row, at: usize) -> Created {
    let seq: Option<i64> = r.get(at + 1);
    Created::new(
        r.get(at),
        seq.and_then(|s| u64::try_from(s).ok()),
        u64_of(r.get(at + 2)),
        0,
    )
}

/// The stat of columns `version, stamp, owner, ctime` from `at` on.
pub(crate) fn stat_at(r: &Row, at: usize) -> Stat {
    let owner: Option<i64> = r.get(at + 2);
    let mut stat = Stat::new(
        u64_of(r.get(at)),
        u64_of(r.get(at + 1)),
        owner.is_some(),
        r.get::<_, Option<SystemTime>>(at + 3),
    );
    stat.owner = owner.map(|o| SessionId(format!("{BACKEND}-{o}")));
    stat
}

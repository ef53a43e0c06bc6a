//! A fenced write: each holder of a [`coordination::Lock`] writes the report with
//! `guard.put`, which lands only while that guard still holds the lock, and
//! creates the node or overwrites it, whichever applies. A holder that lost
//! the lock without noticing (paused while someone broke it) is refused;
//! the new holder's write stands.
//!
//! `cargo run -p coordination --example fenced_write [-- --url URL]`

mod common;

use coordination::prelude::*; // Hold::put
use coordination::{Error, Lock, OpResult};

#[tokio::main]
async fn main() -> common::Result {
    let root = common::root("fenced-write");
    let lock_path = format!("{root}/lock");
    let report = format!("{root}/reports/nightly");
    // Two clients, as two processes would be.
    let (a, b) = (common::session().await?, common::session().await?);

    let old = Lock::new(&a, &lock_path)?.acquire().await?;
    // No node yet: the put creates it (and its parents).
    let first = old.put(&report, "draft by A").await?;
    assert!(matches!(first, OpResult::Created(_)), "{first:?}");

    // A pauses (a long GC, a stopped VM); meanwhile an operator breaks the
    // lock it seems to be stuck on: its node is deleted.
    b.delete(old.node_path(), None).await?;

    // B takes the lock with a larger token and overwrites the report.
    let new = Lock::new(&b, &lock_path)?.acquire().await?;
    assert!(new.fencing_token() > old.fencing_token());
    let second = new.put(&report, "final by B").await?;
    assert!(matches!(second, OpResult::Set(_)), "{second:?}");

    // A wakes up and writes as if it still held the lock: refused.
    let late = old.put(&report, "late by A").await;
    assert!(matches!(late, Err(Error::LockLost { .. })), "{late:?}");

    let node = b.get(&report).await?.ok_or("the report is gone")?;
    assert_eq!(node.data, b"final by B");
    println!(
        "A (token {}) was refused, B's write (token {}) stands: {:?}",
        old.fencing_token(),
        new.fencing_token(),
        String::from_utf8_lossy(&node.data)
    );

    // A's release reports the loss; B's frees the lock.
    assert!(old.release().await.is_err());
    new.release().await?;
    a.close().await?;
    b.close().await?;
    Ok(())
}

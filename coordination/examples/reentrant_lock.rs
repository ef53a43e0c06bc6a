//! [`coordination::ReentrantLock`]: the same owner (the `ReentrantLock` value and
//! its clones) re-enters at once; the lock is released with the last hold.
//!
//! `cargo run -p coordination --example reentrant_lock [-- --url URL]`

mod common;

use coordination::{Lock, ReentrantLock};

#[tokio::main]
async fn main() -> common::Result {
    let path = format!("{}/ledger", common::root("reentrant"));
    let session = common::session().await?;

    let mine = ReentrantLock::new(Lock::new(&session, &path)?);
    let outer = mine.acquire().await?;
    let inner = mine.clone().acquire().await?; // the same owner: at once
    println!("held {} times by one owner", mine.hold_count());
    assert_eq!(mine.hold_count(), 2);

    // Another owner, even on the same session, waits.
    let theirs = ReentrantLock::new(Lock::new(&session, &path)?);
    assert!(theirs.try_acquire().await?.is_none());

    inner.release().await?;
    assert!(mine.is_held());
    outer.release().await?; // the last hold: the lock is released
    theirs.acquire().await?.release().await?;
    println!("released; the other owner took it");
    Ok(())
}

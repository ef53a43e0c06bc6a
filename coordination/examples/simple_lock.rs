//! [`coordination::SimpleLock`]: the herd-effect baseline (every waiter watches
//! the one lock node). Use [`coordination::Lock`] in real code; this one is kept to
//! measure what `Lock` saves.
//!
//! `cargo run -p coordination --example simple_lock [-- --url URL]`

mod common;

use coordination::SimpleLock;

#[tokio::main]
async fn main() -> common::Result {
    let path = format!("{}/baseline", common::root("simple-lock"));
    let session = common::session().await?;
    let lock = SimpleLock::new(&session, &path)?;

    let guard = lock.acquire().await?;
    // Held: even the same handle cannot take it again.
    assert!(lock.try_acquire().await?.is_none());
    guard.release().await?;

    println!(
        "acquired {} time(s), {} wake-up(s)",
        lock.stats().acquisitions(),
        lock.stats().wakeups()
    );
    assert_eq!(lock.stats().acquisitions(), 1);
    Ok(())
}

//! [`coordination::Lock`]: one holder at a time, FIFO, with a fencing token that
//! grows from holder to holder.
//!
//! `cargo run -p coordination --example lock [-- --url URL]`

mod common;

use coordination::Lock;

#[tokio::main]
async fn main() -> common::Result {
    let path = format!("{}/report", common::root("lock"));
    let (a, b) = (common::session().await?, common::session().await?);

    // Client A takes the lock.
    let lock_a = Lock::new(&a, &path)?;
    let guard = lock_a.acquire().await?;
    println!(
        "A holds {path} with fencing token {}",
        guard.fencing_token()
    );

    // Client B cannot take it now; it queues behind A.
    let lock_b = Lock::new(&b, &path)?;
    assert!(lock_b.try_acquire().await?.is_none());
    let waiting = tokio::spawn(async move { lock_b.acquire().await });

    // Pass the token along with every write to the protected resource, so
    // it can refuse a stale holder. Then let go: B is next.
    let first = guard.fencing_token();
    guard.release().await?;
    let guard = waiting.await??;
    println!("B holds it now, with token {}", guard.fencing_token());
    assert!(guard.fencing_token() > first);
    guard.release().await?;
    Ok(())
}

//! [`coordination::RwLock`]: readers share the lock, a writer holds it alone.
//!
//! `cargo run -p coordination --example rwlock [-- --url URL]`

mod common;

use coordination::RwLock;

#[tokio::main]
async fn main() -> common::Result {
    let path = format!("{}/config", common::root("rwlock"));
    let (a, b) = (common::session().await?, common::session().await?);
    let rw_a = RwLock::new(&a, &path)?;
    let rw_b = RwLock::new(&b, &path)?;

    // Two readers at once.
    let r1 = rw_a.read().await?;
    let r2 = rw_b.read().await?;
    println!("two readers hold {path}");

    // A writer waits for both readers to leave.
    assert!(rw_b.try_write().await?.is_none());
    let writer = tokio::spawn(async move { rw_b.write().await });
    r1.release().await?;
    r2.release().await?;
    let w = writer.await??;
    println!("the writer holds it alone (token {})", w.fencing_token());

    // While it writes, no reader gets in.
    assert!(rw_a.try_read().await?.is_none());
    w.release().await?;
    Ok(())
}

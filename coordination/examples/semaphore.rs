//! [`coordination::Semaphore`] (N leases, taken all or nothing) and
//! [`coordination::SemaphoreMutex`] (one lease: a non-reentrant mutex).
//!
//! `cargo run -p coordination --example semaphore [-- --url URL]`

mod common;

use coordination::{Semaphore, SemaphoreMutex};

#[tokio::main]
async fn main() -> common::Result {
    let root = common::root("semaphore");
    let (a, b) = (common::session().await?, common::session().await?);

    // Three database connections to share between clients.
    let sem_a = Semaphore::new(&a, &format!("{root}/db-connections"), 3)?;
    let sem_b = Semaphore::new(&b, &format!("{root}/db-connections"), 3)?;
    let two = sem_a.acquire(2).await?;
    println!("A holds {} of {} leases", two.len(), sem_a.max_leases());

    // B asks for two: only one is left, so it gets none (all or nothing).
    assert!(sem_b.try_acquire(2).await?.is_none());
    let one = sem_b.acquire(1).await?;
    println!("B holds {} lease", one.len());
    Semaphore::return_all(two).await?;
    Semaphore::return_all(one).await?;

    // A mutex on a semaphore: not even the same handle takes it twice.
    let mutex = SemaphoreMutex::new(&a, &format!("{root}/migration"))?;
    let held = mutex.acquire().await?;
    assert!(mutex.try_acquire().await?.is_none());
    held.release().await?;
    println!("the semaphore mutex was held once and released");
    Ok(())
}

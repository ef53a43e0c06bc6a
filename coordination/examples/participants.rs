//! Participants: every lock, semaphore and election lists its holders and
//! waiters, in queue order, with their data and since when.
//!
//! `cargo run -p coordination --example participants [-- --url URL]`

mod common;

use std::time::Duration;

use coordination::{ContenderState, Lock};

#[tokio::main]
async fn main() -> common::Result {
    let path = format!("{}/report", common::root("participants"));
    let (a, b) = (common::session().await?, common::session().await?);

    let holder = Lock::new(&a, &path)?.with_data("host-a")?;
    let guard = holder.acquire().await?;
    let waiter = Lock::new(&b, &path)?.with_data("host-b")?;
    let waiting = tokio::spawn(async move { waiter.acquire().await });

    // Wait (at most 5 s) until host-b is queued, then list.
    let mut list = holder.participants().await?;
    for _ in 0..500 {
        if list.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        list = holder.participants().await?;
    }
    for c in &list {
        println!(
            "{:?} {} (token {}) data {:?}",
            c.state,
            c.node,
            c.stamp,
            String::from_utf8_lossy(&c.data)
        );
    }
    assert_eq!(list[0].state, ContenderState::Holding);
    assert_eq!(list[0].data, b"host-a");
    assert_eq!(list[1].state, ContenderState::Waiting);

    guard.release().await?;
    waiting.await??.release().await?;
    Ok(())
}

//! [`coordination::Queue`]: a distributed FIFO queue.
//!
//! `cargo run -p coordination --example queue [-- --url URL]`

mod common;

use coordination::Queue;

#[tokio::main]
async fn main() -> common::Result {
    let path = format!("{}/jobs", common::root("queue"));
    let (producer, consumer) = (common::session().await?, common::session().await?);

    let out = Queue::new(&producer, &path)?;
    out.offer(b"job 1").await?;
    out.offer(b"job 2").await?;

    let inbox = Queue::new(&consumer, &path)?;
    println!("{} items queued", inbox.len().await?);
    assert_eq!(inbox.take().await?, b"job 1"); // waits for an item if none
    assert_eq!(inbox.poll().await?.as_deref(), Some(&b"job 2"[..]));
    assert_eq!(inbox.poll().await?, None); // poll does not wait
    println!("took both, in order");
    Ok(())
}

//! [`coordination::ReliableQueue`]: an item taken is leased to its consumer until
//! acknowledged; if the consumer dies first, the item is delivered again.
//!
//! `cargo run -p coordination --example reliable_queue [-- --url URL]`

mod common;

use coordination::Queue;

#[tokio::main]
async fn main() -> common::Result {
    let path = format!("{}/payments", common::root("reliable-queue"));
    let (producer, first, second) = (
        common::session().await?,
        common::session().await?,
        common::session().await?,
    );
    Queue::reliable(&producer, &path)?.offer(b"pay 42").await?;

    // The first consumer takes the item, then dies before acknowledging it.
    let delivery = Queue::reliable(&first, &path)?.take().await?;
    println!(
        "first consumer got {:?}",
        String::from_utf8_lossy(delivery.data())
    );
    drop(delivery);
    first.close().await?;

    // The item is not lost: the second consumer gets it, and acknowledges.
    let queue = Queue::reliable(&second, &path)?;
    let delivery = queue.take().await?;
    assert_eq!(delivery.data(), b"pay 42");
    delivery.ack().await?;
    println!("second consumer got it again and acknowledged it");
    assert!(queue.is_empty().await?);
    Ok(())
}

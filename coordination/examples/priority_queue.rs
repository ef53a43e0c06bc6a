//! [`coordination::PriorityQueue`] and [`coordination::DelayQueue`]: items taken by
//! priority (lower numbers first, FIFO among equals), and items taken from
//! a due time on.
//!
//! `cargo run -p coordination --example priority_queue [-- --url URL]`

mod common;

use std::time::{Duration, Instant};

use coordination::{DelayQueue, PriorityQueue};

#[tokio::main]
async fn main() -> common::Result {
    let root = common::root("priority-queue");
    let (producer, consumer) = (common::session().await?, common::session().await?);

    // Priorities: the lowest number first; equal ones in the order offered.
    let path = format!("{root}/jobs");
    let out = PriorityQueue::new(&producer, &path)?;
    out.offer(b"nightly report", 10).await?;
    out.offer(b"user request A", 0).await?;
    out.offer(b"page the on-call", -5).await?;
    out.offer(b"user request B", 0).await?;
    let inbox = PriorityQueue::new(&consumer, &path)?;
    let mut order = Vec::new();
    while let Some(job) = inbox.poll().await? {
        println!("took {:?}", String::from_utf8_lossy(&job));
        order.push(job);
    }
    let want: [&[u8]; 4] = [
        b"page the on-call",
        b"user request A",
        b"user request B",
        b"nightly report",
    ];
    assert_eq!(order, want);

    // Delays: an item is taken from its due time on (by the taker's clock),
    // the earliest due first; a waiting take wakes for it, without polling.
    let path = format!("{root}/reminders");
    let out = DelayQueue::new(&producer, &path)?;
    let start = Instant::now();
    out.offer(b"in 300 ms", Duration::from_millis(300)).await?;
    out.offer(b"in 100 ms", Duration::from_millis(100)).await?;
    let inbox = DelayQueue::reliable(&consumer, &path)?;
    assert!(inbox.poll().await?.is_none(), "nothing is due yet");
    for (want, due) in [(&b"in 100 ms"[..], 100), (&b"in 300 ms"[..], 300)] {
        let delivery = inbox.take().await?;
        let at = start.elapsed();
        println!(
            "took {:?} after {at:?}",
            String::from_utf8_lossy(delivery.data())
        );
        assert_eq!(delivery.data(), want);
        assert!(at >= Duration::from_millis(due - 2), "taken early: {at:?}");
        delivery.ack().await?;
    }
    assert!(inbox.is_empty().await?);
    Ok(())
}

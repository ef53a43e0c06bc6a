//! The recipes' argument types are one shape: every data argument takes any
//! bytes (`&str`, `String`, `&[u8]`, `Vec<u8>`, `b"…"`), and every recipe
//! type is made by its own `new`. This file fails to compile when one of
//! them drifts back to a narrower type, and checks that each form writes
//! the same bytes.

use std::time::{Duration, SystemTime};

use coordination::prelude::*;
use coordination::{
    DelayQueue, Election, Group, Lock, PriorityQueue, Queue, ReliableDelayQueue,
    ReliablePriorityQueue, ReliableQueue, Semaphore, Session,
};

async fn mem() -> coordination::Result<Session> {
    coordination::connect("mem://")
        .await
        .map_err(|e| coordination::Error::InvalidArgument(e.to_string()))
}

#[tokio::test]
async fn every_data_argument_takes_any_bytes() -> coordination::Result<()> {
    let s = mem().await?;
    let text = String::from("v");
    let bytes: Vec<u8> = b"v".to_vec();

    let queue = Queue::new(&s, "/args/queue")?;
    queue.offer("v").await?;
    queue.offer(text.clone()).await?;
    queue.offer(&text).await?;
    queue.offer(bytes.as_slice()).await?;
    queue.offer(bytes.clone()).await?;
    queue.offer(&bytes).await?;
    queue.offer(b"v").await?;
    for _ in 0..7 {
        assert_eq!(queue.take().await?, b"v");
    }
    // Through the object-safe trait the argument stays `&[u8]`.
    let dyn_queue: &dyn WorkQueue<Item = Vec<u8>> = &queue;
    dyn_queue.offer(b"v").await?;
    assert_eq!(queue.take().await?, b"v");

    let reliable = ReliableQueue::new(&s, "/args/reliable")?;
    reliable.offer("v").await?;
    let delivery = reliable.take().await?;
    assert_eq!(delivery.data(), b"v");
    delivery.ack().await?;

    let priority = PriorityQueue::new(&s, "/args/priority")?;
    priority.offer("v", 1).await?;
    assert_eq!(priority.take().await?, b"v");
    let reliable_priority = ReliablePriorityQueue::new(&s, "/args/reliable-priority")?;
    reliable_priority.offer(text.clone(), 1).await?;
    reliable_priority.take().await?.ack().await?;

    let delay = DelayQueue::new(&s, "/args/delay")?;
    delay.offer("v", Duration::ZERO).await?;
    delay.offer_at(bytes.clone(), SystemTime::now()).await?;
    assert_eq!(delay.take().await?, b"v");
    assert_eq!(delay.take().await?, b"v");
    let reliable_delay = ReliableDelayQueue::new(&s, "/args/reliable-delay")?;
    reliable_delay.offer(&text, Duration::ZERO).await?;
    reliable_delay.offer_at(b"v", SystemTime::now()).await?;
    reliable_delay.take().await?.ack().await?;
    reliable_delay.take().await?.ack().await?;

    let election = Election::new(&s, "/args/election")?;
    let mut leadership = election.campaign("v").await?;
    assert_eq!(leadership.value(), b"v");
    leadership.proclaim(text.clone()).await?;
    assert_eq!(
        election.leader().await?.map(|l| l.value),
        Some(bytes.clone())
    );
    leadership.resign().await?;
    election
        .campaign_timeout(&bytes, Duration::from_secs(5))
        .await?
        .resign()
        .await?;
    election.lead("v", |_| async {}).await?;
    let latch = election.latch("v")?;
    assert_eq!(latch.id(), b"v");
    latch.await_leadership().await?;
    latch.close().await?;
    let mut participant = election.participate(text.clone())?;
    participant.wait_elected().await?;
    participant.stop().await?;

    let group = Group::new(&s, "/args/group")?;
    let member = group.join("v").await?;
    member.set_data(bytes.clone()).await?;
    let named = group.join_as("me", &text).await?;
    assert!(group.members().await?.iter().all(|m| m.data == b"v"));
    member.leave().await?;
    named.leave().await?;

    let lock = Lock::new(&s, "/args/lock")?.with_data("v")?;
    let guard = lock.acquire().await?;
    assert_eq!(lock.participants().await?[0].data, b"v");
    guard.release().await?;
    let semaphore = Semaphore::new(&s, "/args/semaphore", 1)?.with_data(b"v")?;
    let leases = semaphore.acquire(1).await?;
    assert_eq!(leases[0].data().await?, b"v");
    Semaphore::return_all(leases).await?;

    s.close().await
}

#[tokio::test]
async fn each_reliable_queue_has_its_own_new() -> coordination::Result<()> {
    let s = mem().await?;
    // `Queue::reliable` and `ReliableQueue::new` are the same queue.
    Queue::reliable(&s, "/args/same")?.offer("v").await?;
    let delivery = ReliableQueue::new(&s, "/args/same")?.take().await?;
    assert_eq!(delivery.data(), b"v");
    delivery.ack().await?;
    PriorityQueue::reliable(&s, "/args/same-priority")?
        .offer("v", 0)
        .await?;
    ReliablePriorityQueue::new(&s, "/args/same-priority")?
        .take()
        .await?
        .ack()
        .await?;
    DelayQueue::reliable(&s, "/args/same-delay")?
        .offer("v", Duration::ZERO)
        .await?;
    ReliableDelayQueue::new(&s, "/args/same-delay")?
        .take()
        .await?
        .ack()
        .await?;
    s.close().await
}

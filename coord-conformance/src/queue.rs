//! Conformance of the distributed queue ([`coord_core::recipes::Queue`],
//! [`coord_core::recipes::ReliableQueue`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coord_core::recipes::Queue;
use coord_core::Error;
use tokio::task::JoinSet;

use crate::{within, within_for, Harness};

/// offer / peek / poll / len / take in FIFO order; poll on empty is None,
/// a take with a deadline on empty times out.
pub async fn queue_fifo_basics(h: &dyn Harness) {
    let root = h.root("queue_fifo_basics");
    let s = h.open().await;
    let q = Queue::new(&s, &root).expect("queue");
    assert_eq!(q.poll().await.expect("poll"), None);
    assert_eq!(q.peek().await.expect("peek"), None);
    assert_eq!(q.len().await.expect("len"), 0);
    for i in 0..5 {
        q.offer(format!("item-{i}").as_bytes())
            .await
            .expect("offer");
    }
    assert_eq!(q.len().await.expect("len"), 5);
    assert_eq!(q.peek().await.expect("peek"), Some(b"item-0".to_vec()));
    assert_eq!(q.poll().await.expect("poll"), Some(b"item-0".to_vec()));
    assert_eq!(q.take().await.expect("take"), b"item-1".to_vec());
    // Another handle (another session) continues in order.
    let s2 = h.open().await;
    let q2 = Queue::new(&s2, &root).expect("queue");
    assert_eq!(q2.peek().await.expect("peek"), Some(b"item-2".to_vec()));
    assert_eq!(q2.poll().await.expect("poll"), Some(b"item-2".to_vec()));
    assert_eq!(q.poll().await.expect("poll"), Some(b"item-3".to_vec()));
    assert_eq!(q2.poll().await.expect("poll"), Some(b"item-4".to_vec()));
    assert_eq!(q.poll().await.expect("poll"), None);
    assert_eq!(q2.len().await.expect("len"), 0);
    assert!(matches!(
        q.take_timeout(Duration::from_millis(50)).await,
        Err(Error::Timeout(_))
    ));
}

/// A take waits for an offer made later by another session.
pub async fn queue_take_waits_for_offer(h: &dyn Harness) {
    let root = h.root("queue_take_waits_for_offer");
    let (s1, s2) = (h.open().await, h.open().await);
    let consumer = Queue::new(&s1, &root).expect("queue");
    let taker = tokio::spawn(async move { consumer.take().await });
    let producer = Queue::new(&s2, &root).expect("queue");
    producer.offer(b"late").await.expect("offer");
    let got = within("take returns", taker)
        .await
        .expect("join")
        .expect("take");
    assert_eq!(got, b"late".to_vec());
}

/// Draining N items lists the queue O(1) times per refill, not once per
/// item.
pub async fn queue_drain_lists_linearly(h: &dyn Harness) {
    let root = h.root("queue_drain_lists_linearly");
    let s = h.open().await;
    let q = Queue::new(&s, &root).expect("queue");
    for i in 0..100 {
        q.offer(format!("{i}").as_bytes()).await.expect("offer");
    }
    let consumer = Queue::new(&s, &root).expect("queue");
    for i in 0..100 {
        let got = consumer.poll().await.expect("poll").expect("an item");
        assert_eq!(got, format!("{i}").into_bytes());
    }
    assert_eq!(consumer.poll().await.expect("poll"), None);
    let listings = consumer.stats().listings();
    assert!(listings <= 4, "draining 100 items took {listings} listings");
}

/// Dropped takes (timeouts at random points) lose no item and duplicate
/// none.
pub async fn queue_cancelled_takes_lose_nothing(h: &dyn Harness) {
    let root = h.root("queue_cancelled_takes_lose_nothing");
    let s = h.open().await;
    let q = Queue::new(&s, &root).expect("queue");
    for i in 0..40 {
        q.offer(format!("{i}").as_bytes()).await.expect("offer");
    }
    let mut got = Vec::new();
    let mut n = 0u64;
    while got.len() < 40 {
        n += 1;
        // Mostly cut short at some point of the take; now and then given
        // time to finish, so a slow server still makes progress.
        let d = if n.is_multiple_of(5) {
            Duration::from_secs(5)
        } else {
            Duration::from_micros(n * 37 % 900)
        };
        if let Ok(r) = tokio::time::timeout(d, q.take()).await {
            got.push(String::from_utf8(r.expect("take")).expect("utf8"));
        }
        assert!(n < 100_000, "took too many attempts");
    }
    let want: Vec<String> = (0..40).map(|i| i.to_string()).collect();
    assert_eq!(got, want, "items lost, duplicated or out of order");
    assert_eq!(q.poll().await.expect("poll"), None);
}

const PRODUCERS: usize = 4;
const CONSUMERS: usize = 4;
const ITEMS: usize = 500;

/// 4 producers × 500 items, 4 consumers in strict order: every item is
/// delivered exactly once, and each consumer receives any one producer's
/// items in the order they were offered (items are taken in sequence
/// order). Consumers that spread (the default) are checked by
/// `round_trips_queue_four_consumers`.
pub async fn queue_four_by_four(h: &dyn Harness) {
    let root = h.root("queue_four_by_four");
    let total = PRODUCERS * ITEMS;
    let received = Arc::new(AtomicUsize::new(0));
    let mut tasks = JoinSet::new();
    for p in 0..PRODUCERS {
        let q = Queue::new(&h.open().await, &root).expect("queue");
        tasks.spawn(async move {
            for k in 0..ITEMS {
                q.offer(format!("{p}:{k}").as_bytes()).await.expect("offer");
            }
            Vec::new()
        });
    }
    for _ in 0..CONSUMERS {
        let q = Queue::new(&h.open().await, &root)
            .expect("queue")
            .strict_order();
        let received = received.clone();
        tasks.spawn(async move {
            let mut mine = Vec::new();
            while received.load(Ordering::SeqCst) < total {
                match q.take_timeout(Duration::from_millis(100)).await {
                    Ok(item) => {
                        received.fetch_add(1, Ordering::SeqCst);
                        let s = String::from_utf8(item).expect("utf8");
                        let (p, k) = s.split_once(':').expect("p:k");
                        mine.push((
                            p.parse::<usize>().expect("p"),
                            k.parse::<usize>().expect("k"),
                        ));
                    }
                    Err(Error::Timeout(_)) => {}
                    Err(e) => panic!("take: {e}"),
                }
            }
            mine
        });
    }
    let mut seen = vec![vec![0u32; ITEMS]; PRODUCERS];
    // 4000 operations: on etcd with TLS and authentication (a permission
    // check per request) on a loaded 2-core machine, a phase has taken 27 s.
    let bound = Duration::from_secs(100);
    while let Some(r) = within_for("producers and consumers finish", bound, tasks.join_next()).await
    {
        let mine = r.expect("task panicked");
        let mut last: HashMap<usize, usize> = HashMap::new();
        for (p, k) in mine {
            if let Some(&prev) = last.get(&p) {
                assert!(
                    k > prev,
                    "producer {p}'s items out of order: {k} after {prev}"
                );
            }
            last.insert(p, k);
            seen[p][k] += 1;
        }
    }
    for (p, ks) in seen.iter().enumerate() {
        for (k, &n) in ks.iter().enumerate() {
            assert_eq!(n, 1, "item {p}:{k} delivered {n} times");
        }
    }
}

/// Reliable mode: an item taken by a consumer whose session expires before
/// acknowledging is delivered again; acknowledged items never are.
pub async fn queue_reliable_redelivers_after_expiry(h: &dyn Harness) {
    let root = h.root("queue_reliable_redelivers_after_expiry");
    let (s1, s2) = (h.open().await, h.open().await);
    let a = Queue::reliable(&s1, &root).expect("queue");
    let b = Queue::reliable(&s2, &root).expect("queue");
    for i in 0..3 {
        a.offer(format!("{i}").as_bytes()).await.expect("offer");
    }
    let first = a.take().await.expect("take");
    assert_eq!(first.data(), b"0");
    // b skips the leased item.
    let second = b.poll().await.expect("poll").expect("an item");
    assert_eq!(second.data(), b"1");
    second.ack().await.expect("ack");
    h.expire(&s1).await;
    assert!(matches!(
        within("a's lease lost", first.lost()).await,
        Error::SessionExpired | Error::LockLost { .. }
    ));
    let mut got = Vec::new();
    for _ in 0..2 {
        let d = within("redelivery", b.take()).await.expect("take");
        got.push(d.data().to_vec());
        d.ack().await.expect("ack");
    }
    got.sort();
    assert_eq!(got, vec![b"0".to_vec(), b"2".to_vec()]);
    assert!(first.ack().await.is_err(), "an expired lease acknowledged");
    assert_eq!(b.len().await.expect("len"), 0);
    assert!(b.poll().await.expect("poll").is_none());
}

/// Reliable mode: a released (or dropped) delivery comes back.
pub async fn queue_reliable_release_redelivers(h: &dyn Harness) {
    let root = h.root("queue_reliable_release_redelivers");
    let s = h.open().await;
    let q = Queue::reliable(&s, &root).expect("queue");
    q.offer(b"x").await.expect("offer");
    let d = q.take().await.expect("take");
    assert!(
        q.poll().await.expect("poll").is_none(),
        "a leased item was delivered twice"
    );
    d.release().await.expect("release");
    let d = within("redelivery", q.take()).await.expect("take");
    assert_eq!(d.data(), b"x");
    drop(d);
    let d = within("redelivery after drop", q.take())
        .await
        .expect("take");
    d.ack().await.expect("ack");
    assert_eq!(q.len().await.expect("len"), 0);
}

/// Reliable mode under load: 2 producers × 100 items, 3 consumers, one of
/// them expired while holding an item: every item is acknowledged exactly
/// once, none is lost.
pub async fn queue_reliable_consumer_dies_mid_item(h: &dyn Harness) {
    let root = h.root("queue_reliable_consumer_dies_mid_item");
    const N: usize = 200;
    let producer = Queue::reliable(&h.open().await, &root).expect("queue");
    for i in 0..N {
        producer
            .offer(format!("{i}").as_bytes())
            .await
            .expect("offer");
    }
    // The doomed consumer takes one item and holds it.
    let doomed_session = h.open().await;
    let doomed = Queue::reliable(&doomed_session, &root).expect("queue");
    let held = doomed.take().await.expect("take");
    let acked = Arc::new(Mutex::new(vec![0u32; N]));
    let count = Arc::new(AtomicUsize::new(0));
    let mut tasks = JoinSet::new();
    for _ in 0..2 {
        let q = Queue::reliable(&h.open().await, &root).expect("queue");
        let (acked, count) = (acked.clone(), count.clone());
        tasks.spawn(async move {
            while count.load(Ordering::SeqCst) < N {
                match q.take_timeout(Duration::from_millis(100)).await {
                    Ok(d) => {
                        let i: usize = std::str::from_utf8(d.data())
                            .expect("utf8")
                            .parse()
                            .expect("index");
                        d.ack().await.expect("ack");
                        acked.lock().expect("acked")[i] += 1;
                        count.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(Error::Timeout(_)) => {}
                    Err(e) => panic!("take: {e}"),
                }
            }
        });
    }
    // Expire the doomed consumer once the others are well under way.
    crate::eventually("consumers progress", || {
        let c = count.clone();
        async move { c.load(Ordering::SeqCst) >= N / 4 }
    })
    .await;
    h.expire(&doomed_session).await;
    while let Some(r) = within("consumers finish", tasks.join_next()).await {
        r.expect("consumer panicked");
    }
    assert!(held.ack().await.is_err(), "an expired lease acknowledged");
    let acked = acked.lock().expect("acked").clone();
    for (i, &n) in acked.iter().enumerate() {
        assert_eq!(n, 1, "item {i} acknowledged {n} times");
    }
    assert_eq!(producer.len().await.expect("len"), 0);
}

#[doc(hidden)]
#[macro_export]
macro_rules! __queue_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            queue::queue_fifo_basics,
            queue::queue_take_waits_for_offer,
            queue::queue_drain_lists_linearly,
            queue::queue_cancelled_takes_lose_nothing,
            queue::queue_four_by_four,
            queue::queue_reliable_redelivers_after_expiry,
            queue::queue_reliable_release_redelivers,
            queue::queue_reliable_consumer_dies_mid_item,
        );
    };
}

//! Conformance of the priority and delay queues
//! ([`coord_core::recipes::PriorityQueue`],
//! [`coord_core::recipes::DelayQueue`] and their reliable forms).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use coord_core::prelude::WorkQueue;
use coord_core::recipes::{DelayQueue, PriorityQueue};
use coord_core::Error;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::{eventually, within, Harness};

/// How late a due item may be taken on a loaded machine and still count
/// as prompt (a watch or a timer woke the taker, not a retry).
const PROMPT: Duration = Duration::from_millis(1500);
/// Due-time rounding: due times are kept to the millisecond.
const ROUNDING: Duration = Duration::from_millis(2);

/// Priorities: lower numbers first, FIFO among equal ones; a higher
/// priority offered after a take still comes first; a waiting take wakes
/// on an offer; the trait's `offer` uses priority 0.
pub async fn priority_queue_basics(h: &dyn Harness) {
    let root = h.root("priority_queue_basics");
    let s = h.open().await;
    let q = PriorityQueue::new(&s, &root).expect("queue");
    assert_eq!(q.poll().await.expect("poll"), None);
    for (data, p) in [
        ("b1", 5),
        ("c1", i32::MAX),
        ("a1", -7),
        ("b2", 5),
        ("z", i32::MIN),
        ("b3", 5),
    ] {
        q.offer(data.as_bytes(), p).await.expect("offer");
    }
    assert_eq!(q.len().await.expect("len"), 6);
    assert_eq!(q.peek().await.expect("peek"), Some(b"z".to_vec()));
    assert_eq!(q.take().await.expect("take"), b"z".to_vec());
    assert_eq!(q.take().await.expect("take"), b"a1".to_vec());
    assert_eq!(q.take().await.expect("take"), b"b1".to_vec());
    // Offered by another session after this handle listed: comes first.
    let s2 = h.open().await;
    let other = PriorityQueue::new(&s2, &root).expect("queue");
    other.offer(b"urgent", 0).await.expect("offer");
    assert_eq!(q.poll().await.expect("poll"), Some(b"urgent".to_vec()));
    // Through the trait: priority 0, so before the 5s.
    WorkQueue::offer(&other, b"trait").await.expect("offer");
    let dynq: &dyn WorkQueue<Item = Vec<u8>> = &q;
    assert_eq!(dynq.take().await.expect("take"), b"trait".to_vec());
    for want in ["b2", "b3", "c1"] {
        assert_eq!(q.take().await.expect("take"), want.as_bytes().to_vec());
    }
    assert_eq!(q.poll().await.expect("poll"), None);
    // A take waits for an offer.
    let taker = {
        let q = q.clone();
        tokio::spawn(async move { q.take().await })
    };
    other.offer(b"late", 3).await.expect("offer");
    let got = within("take returns", taker).await.expect("join");
    assert_eq!(got.expect("take"), b"late".to_vec());
    assert!(matches!(
        q.take_timeout(Duration::from_millis(50)).await,
        Err(Error::Timeout(_))
    ));
}

/// 4 concurrent producers offering 3 priorities, interleaved: drained
/// afterwards by two consumers in turn, every item comes exactly once,
/// priorities in order (lower first), and within a priority each
/// producer's items in the order it offered them.
pub async fn priority_queue_concurrent_producers(h: &dyn Harness) {
    let root = h.root("priority_queue_concurrent_producers");
    const PRODUCERS: usize = 4;
    const PER: usize = 30;
    const PRIORITIES: [i32; 3] = [7, -2, 0];
    let mut tasks = JoinSet::new();
    for p in 0..PRODUCERS {
        let q = PriorityQueue::new(&h.open().await, &root).expect("queue");
        tasks.spawn(async move {
            for k in 0..PER {
                let prio = PRIORITIES[(k + p) % PRIORITIES.len()];
                q.offer(format!("{prio}:{p}:{k}").as_bytes(), prio)
                    .await
                    .expect("offer");
            }
        });
    }
    while let Some(r) = within("producers finish", tasks.join_next()).await {
        r.expect("producer panicked");
    }
    let (c1, c2) = (
        PriorityQueue::new(&h.open().await, &root).expect("queue"),
        PriorityQueue::new(&h.open().await, &root).expect("queue"),
    );
    let mut got = Vec::new();
    for i in 0.. {
        let c = if i % 2 == 0 { &c1 } else { &c2 };
        let Some(item) = c.poll().await.expect("poll") else {
            break;
        };
        let s = String::from_utf8(item).expect("utf8");
        let v: Vec<i64> = s.split(':').map(|x| x.parse().expect("n")).collect();
        got.push((v[0], v[1], v[2]));
    }
    assert_eq!(got.len(), PRODUCERS * PER, "items lost or duplicated");
    let unique: HashSet<_> = got.iter().collect();
    assert_eq!(unique.len(), got.len(), "an item delivered twice");
    for w in got.windows(2) {
        assert!(w[0].0 <= w[1].0, "priority {} after {}", w[1].0, w[0].0);
    }
    let mut last: HashMap<(i64, i64), i64> = HashMap::new();
    for (prio, p, k) in got {
        if let Some(prev) = last.insert((prio, p), k) {
            assert!(
                k > prev,
                "priority {prio}: producer {p}'s item {k} after {prev}"
            );
        }
    }
}

/// A delayed item is not taken before its due time and is taken promptly
/// after it, by a take waiting from before; items are taken earliest due
/// first; `offer_at` takes a wall-clock time, one in the past being due at
/// once.
pub async fn delay_queue_due_time(h: &dyn Harness) {
    let root = h.root("delay_queue_due_time");
    let (s1, s2) = (h.open().await, h.open().await);
    let producer = DelayQueue::new(&s1, &root).expect("queue");
    let consumer = DelayQueue::new(&s2, &root).expect("queue");
    let start = Instant::now();
    producer
        .offer(b"second", Duration::from_millis(600))
        .await
        .expect("offer");
    producer
        .offer(b"first", Duration::from_millis(300))
        .await
        .expect("offer");
    assert_eq!(producer.len().await.expect("len"), 2);
    assert_eq!(consumer.poll().await.expect("poll"), None, "taken early");
    assert_eq!(consumer.peek().await.expect("peek"), None, "visible early");
    let got = within("first due item", consumer.take())
        .await
        .expect("take");
    let at = start.elapsed();
    assert_eq!(got, b"first".to_vec());
    assert!(
        at + ROUNDING >= Duration::from_millis(300),
        "taken at {at:?}"
    );
    assert!(at <= Duration::from_millis(300) + PROMPT, "taken at {at:?}");
    let got = within("second due item", consumer.take())
        .await
        .expect("take");
    let at = start.elapsed();
    assert_eq!(got, b"second".to_vec());
    assert!(
        at + ROUNDING >= Duration::from_millis(600),
        "taken at {at:?}"
    );
    assert!(at <= Duration::from_millis(600) + PROMPT, "taken at {at:?}");
    // Wall-clock due times: a past one is due at once and comes before a
    // later one that is also due.
    let now = SystemTime::now();
    producer
        .offer_at(b"b", now - Duration::from_secs(5))
        .await
        .expect("offer_at");
    producer
        .offer_at(b"a", now - Duration::from_secs(60))
        .await
        .expect("offer_at");
    let future = now + Duration::from_millis(300);
    producer.offer_at(b"c", future).await.expect("offer_at");
    assert_eq!(consumer.poll().await.expect("poll"), Some(b"a".to_vec()));
    assert_eq!(consumer.poll().await.expect("poll"), Some(b"b".to_vec()));
    let got = within("wall-clock item", consumer.take())
        .await
        .expect("take");
    assert_eq!(got, b"c".to_vec());
    assert!(
        SystemTime::now() + ROUNDING >= future,
        "taken before its wall-clock due time"
    );
    assert!(consumer.is_empty().await.expect("is_empty"));
}

/// A take waiting for an item due late wakes for an item due earlier that
/// is offered while it waits, takes that one first, and the later one at
/// its time.
pub async fn delay_queue_earlier_item_overtakes(h: &dyn Harness) {
    let root = h.root("delay_queue_earlier_item_overtakes");
    let (s1, s2) = (h.open().await, h.open().await);
    let producer = DelayQueue::new(&s1, &root).expect("queue");
    let consumer = DelayQueue::new(&s2, &root).expect("queue");
    let start = Instant::now();
    producer
        .offer(b"late", Duration::from_millis(2500))
        .await
        .expect("offer");
    let taker = {
        let c = consumer.clone();
        tokio::spawn(async move { c.take().await })
    };
    // The taker has listed (and found nothing due) and is waiting.
    eventually("the taker waits", || async {
        consumer.stats().listings() >= 2
    })
    .await;
    let offered = Instant::now();
    producer
        .offer(b"early", Duration::from_millis(200))
        .await
        .expect("offer");
    let got = within("early item", taker).await.expect("join");
    let at = offered.elapsed();
    assert_eq!(got.expect("take"), b"early".to_vec());
    assert!(
        at + ROUNDING >= Duration::from_millis(200),
        "taken at {at:?}"
    );
    assert!(
        start.elapsed() < Duration::from_millis(2500),
        "the early item waited for the late one"
    );
    let got = within("late item", consumer.take()).await.expect("take");
    assert_eq!(got, b"late".to_vec());
    let at = start.elapsed();
    assert!(
        at + ROUNDING >= Duration::from_millis(2500),
        "taken at {at:?}"
    );
    assert!(
        at <= Duration::from_millis(2500) + PROMPT,
        "taken at {at:?}"
    );
}

/// Bad input is refused with `InvalidArgument` before any I/O (the queue's
/// directory is never made).
pub async fn delay_queue_bad_input(h: &dyn Harness) {
    let root = h.root("delay_queue_bad_input");
    let s = h.open().await;
    let q = DelayQueue::new(&s, &root).expect("queue");
    let r = DelayQueue::reliable(&s, &root).expect("queue");
    let too_long = coord_core::limits::MAX_DELAY + Duration::from_secs(1);
    assert!(matches!(
        q.offer(b"x", too_long).await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        r.offer(b"x", too_long).await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        q.offer_at(b"x", UNIX_EPOCH - Duration::from_secs(1)).await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        q.offer_at(b"x", SystemTime::now() + too_long + Duration::from_secs(60))
            .await,
        Err(Error::InvalidArgument(_))
    ));
    let big = vec![0u8; coord_core::path::MAX_DATA_LEN + 1];
    assert!(matches!(
        q.offer(&big, Duration::ZERO).await,
        Err(Error::InvalidArgument(_))
    ));
    let p = PriorityQueue::new(&s, &root).expect("queue");
    assert!(matches!(
        p.offer(&big, 1).await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(
        matches!(s.get(&root).await, Ok(None)),
        "a refused offer wrote to the server"
    );
}

/// Reliable priority queue: an item leased by a consumer whose session
/// expires is delivered again, before items of a lower priority; while
/// leased it is skipped; acknowledged items never come back.
pub async fn priority_queue_reliable_redelivers_after_expiry(h: &dyn Harness) {
    let root = h.root("priority_queue_reliable_redelivers_after_expiry");
    let (s1, s2) = (h.open().await, h.open().await);
    let a = PriorityQueue::reliable(&s1, &root).expect("queue");
    let b = PriorityQueue::reliable(&s2, &root).expect("queue");
    a.offer(b"low", 9).await.expect("offer");
    a.offer(b"top", -1).await.expect("offer");
    a.offer(b"mid", 4).await.expect("offer");
    let held = a.take().await.expect("take");
    assert_eq!(held.data(), b"top");
    let d = b.poll().await.expect("poll").expect("an item");
    assert_eq!(d.data(), b"mid", "a leased item was delivered twice");
    d.ack().await.expect("ack");
    h.expire(&s1).await;
    assert!(matches!(
        within("a's lease lost", held.lost()).await,
        Error::SessionExpired | Error::LockLost { .. }
    ));
    let d = within("redelivery", b.take()).await.expect("take");
    assert_eq!(d.data(), b"top", "the redelivered item lost its priority");
    d.ack().await.expect("ack");
    let d = within("last item", b.take()).await.expect("take");
    assert_eq!(d.data(), b"low");
    d.ack().await.expect("ack");
    assert!(held.ack().await.is_err(), "an expired lease acknowledged");
    assert_eq!(b.len().await.expect("len"), 0);
}

/// Reliable delay queue under load: 60 items due within a few hundred ms
/// across 5 due times, 2 live consumers and one that expires holding an
/// item: no item is taken before its due time, none is held by two live
/// consumers at once, every one is acknowledged exactly once.
pub async fn delay_queue_reliable_consumer_dies(h: &dyn Harness) {
    let root = h.root("delay_queue_reliable_consumer_dies");
    const N: usize = 60;
    let producer = DelayQueue::reliable(&h.open().await, &root).expect("queue");
    let start = SystemTime::now();
    for i in 0..N {
        let due = start + Duration::from_millis(100 * (i % 5) as u64 + 100);
        producer
            .offer_at(format!("{i}").as_bytes(), due)
            .await
            .expect("offer");
    }
    let due_of = move |i: usize| start + Duration::from_millis(100 * (i % 5) as u64 + 100);
    let doomed_session = h.open().await;
    let doomed = DelayQueue::reliable(&doomed_session, &root).expect("queue");
    let held = within("doomed take", doomed.take()).await.expect("take");
    let held_i: usize = std::str::from_utf8(held.data())
        .expect("utf8")
        .parse()
        .expect("index");
    assert!(
        SystemTime::now() + ROUNDING >= due_of(held_i),
        "taken early"
    );
    let acked = Arc::new(Mutex::new(vec![0u32; N]));
    let leased: Arc<Mutex<HashSet<usize>>> = Arc::default();
    let count = Arc::new(AtomicUsize::new(0));
    let mut tasks = JoinSet::new();
    for _ in 0..2 {
        let q = DelayQueue::reliable(&h.open().await, &root).expect("queue");
        let (acked, count, leased) = (acked.clone(), count.clone(), leased.clone());
        tasks.spawn(async move {
            while count.load(Ordering::SeqCst) < N {
                match q.take_timeout(Duration::from_millis(200)).await {
                    Ok(d) => {
                        let i: usize = std::str::from_utf8(d.data())
                            .expect("utf8")
                            .parse()
                            .expect("index");
                        assert!(
                            SystemTime::now() + ROUNDING >= due_of(i),
                            "item {i} taken before it was due"
                        );
                        assert!(
                            leased.lock().expect("leased").insert(i),
                            "item {i} leased to two live consumers at once"
                        );
                        // Acknowledge after marking it, unmark once done.
                        acked.lock().expect("acked")[i] += 1;
                        count.fetch_add(1, Ordering::SeqCst);
                        d.ack().await.expect("ack");
                        leased.lock().expect("leased").remove(&i);
                    }
                    Err(Error::Timeout(_)) => {}
                    Err(e) => panic!("take: {e}"),
                }
            }
        });
    }
    eventually("consumers progress", || {
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
macro_rules! __priority_delay_queue_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            priority_delay_queue::priority_queue_basics,
            priority_delay_queue::priority_queue_concurrent_producers,
            priority_delay_queue::priority_queue_reliable_redelivers_after_expiry,
            priority_delay_queue::delay_queue_due_time,
            priority_delay_queue::delay_queue_earlier_item_overtakes,
            priority_delay_queue::delay_queue_bad_input,
            priority_delay_queue::delay_queue_reliable_consumer_dies,
        );
    };
}

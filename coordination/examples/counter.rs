//! [`coordination::Counter`]: kazoo's `Counter`. One `i64` many sessions add to;
//! concurrent adds all count, and a watcher sees the value change.
//!
//! `cargo run -p coordination --example counter [-- --url URL]`

mod common;

use coordination::Counter;

#[tokio::main]
async fn main() -> common::Result {
    let path = format!("{}/hits", common::root("counter"));
    let watcher_session = common::session().await?;
    let mut changes = Counter::new(&watcher_session, &path)?.watch();
    assert_eq!(changes.next().await.transpose()?, Some(0)); // the value now: nobody wrote yet

    // Four clients add 10 each at the same time: every add is a
    // compare-and-set retried on conflict, so none is lost.
    let mut adders = Vec::new();
    for _ in 0..4 {
        let session = common::session().await?;
        let counter = Counter::new(&session, &path)?;
        adders.push(tokio::spawn(async move {
            for _ in 0..10 {
                counter.increment().await?;
            }
            session.close().await?;
            Ok::<_, coordination::Error>(())
        }));
    }
    for adder in adders {
        adder.await??;
    }

    let counter = Counter::new(&watcher_session, &path)?;
    let (value, version) = counter.get().await?;
    println!("4 clients added 10 each: the counter is {value}");
    assert_eq!(value, 40);

    // The watcher coalesces a burst of changes, but never misses the latest.
    let mut seen = changes.next().await.ok_or("the watcher ended")??;
    while seen != value {
        seen = changes.next().await.ok_or("the watcher ended")??;
    }
    println!("the watcher saw {seen}");

    // A compare-and-set succeeds only on the version it read.
    assert!(counter.compare_and_set(version, 100).await?);
    assert!(!counter.compare_and_set(version, 0).await?); // stale version
    let added = counter.add(-58).await?;
    println!("{} - 58 = {}", added.pre, added.post);
    assert_eq!((added.pre, added.post), (100, 42));
    watcher_session.close().await?;
    Ok(())
}

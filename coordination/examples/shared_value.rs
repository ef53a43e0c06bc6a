//! [`coordination::SharedValue`], [`coordination::TypedSharedValue`] and
//! [`coordination::SharedCount`]: Curator's `SharedValue` and `SharedCount`.
//! A value with a version that clients compare-and-set, and a watcher that
//! never misses the latest value.
//!
//! `cargo run -p coordination --example shared_value [-- --url URL]`
//! (the typed value's JSON needs the facade's `serde` feature in your own
//! build: `coordination = { version = "0.1", features = ["serde"] }`).

mod common;

use std::collections::BTreeMap;

use coordination::{SharedCount, SharedValue, TypedSharedValue};

#[tokio::main]
async fn main() -> common::Result {
    let root = common::root("shared_value");
    let (ops, app) = (common::session().await?, common::session().await?);

    // Bytes with a version. The first read makes the node with the
    // initial value; the app follows it.
    let mode_path = format!("{root}/mode");
    let mode = SharedValue::new(&app, &mode_path)?.with_initial("normal");
    let mut changes = mode.watch();
    let now = changes.next().await.ok_or("the watcher ended")??;
    assert_eq!(now, None); // the node is not made yet: a watcher never writes
    let read = mode.get().await?; // makes it, holding "normal"
    assert_eq!(read.value, b"normal");

    // Two operators switch the mode from what they both read: a
    // compare-and-set on the version, so exactly one wins.
    let theirs = SharedValue::new(&ops, &mode_path)?;
    assert!(theirs.try_set(read.version, "maintenance").await?);
    assert!(!mode.try_set(read.version, "degraded").await?); // stale: read again
    let mut seen = changes.next().await.ok_or("the watcher ended")??;
    while seen.as_ref().map(|v| v.value.as_slice()) != Some(b"maintenance") {
        seen = changes.next().await.ok_or("the watcher ended")??;
    }
    println!(
        "the app sees the mode {:?}",
        String::from_utf8_lossy(&seen.ok_or("missing")?.value)
    );
    mode.close(); // ends the watcher: SessionClosed once, then None
    assert!(matches!(
        changes.next().await,
        Some(Err(coordination::Error::SessionClosed))
    ));
    assert!(changes.next().await.is_none());

    // A typed value: JSON through serde. `update` reads, changes and
    // writes back only if nobody wrote meanwhile, retried until it lands.
    let limits_path = format!("{root}/limits");
    let limits = TypedSharedValue::new(&ops, &limits_path, &BTreeMap::<String, u32>::new())?;
    let done = limits
        .update(|now| {
            let mut next = now.clone();
            next.insert("requests_per_second".into(), 250);
            Ok(next)
        })
        .await?;
    let stored = ops.get(&limits_path).await?.ok_or("no node")?.data;
    println!("limits stored as {}", String::from_utf8_lossy(&stored));
    assert_eq!(stored, br#"{"requests_per_second":250}"#);
    assert_eq!(done.post["requests_per_second"], 250);

    // Curator's SharedCount: an i32 as 4 big-endian bytes, so a Curator
    // client on the same ZooKeeper path shares it.
    let workers_path = format!("{root}/workers");
    let mut adders = Vec::new();
    for _ in 0..3 {
        let session = common::session().await?;
        let workers = SharedCount::new(&session, &workers_path)?;
        adders.push(tokio::spawn(async move {
            for _ in 0..5 {
                workers.add(1).await?; // retried on conflicts, none lost
            }
            session.close().await?;
            Ok::<_, coordination::Error>(())
        }));
    }
    for adder in adders {
        adder.await??;
    }
    let workers = SharedCount::new(&ops, &workers_path)?.get().await?;
    println!("3 clients added 5 each: the count is {}", workers.value);
    assert_eq!(workers.value, 15);
    assert_eq!(
        ops.get(&workers_path).await?.ok_or("no node")?.data,
        [0, 0, 0, 15]
    );

    ops.close().await?;
    app.close().await?;
    Ok(())
}

//! [`coordination::Partitioner`]: kazoo's `SetPartitioner`, joined by
//! [`coordination::SetPartitioner::new`] then `join`. Workers split ten
//! queues so that each queue has exactly one owner; a worker that joins
//! makes the others release, then all split again.
//!
//! `cargo run -p coordination --example partitioner [-- --url URL]`

mod common;

use std::collections::BTreeSet;

use coordination::{PartitionState, Partitioner, SetPartitioner};

/// Wait for `Release`, stop working on the items, acknowledge it.
async fn release_when_told(p: &Partitioner) -> coordination::Result<()> {
    let mut states = p.watch();
    while states.next().await != Some(PartitionState::Release) {}
    p.release().await
}

#[tokio::main]
async fn main() -> common::Result {
    let path = format!("{}/queues", common::root("partitioner"));
    let items: Vec<String> = (0..10).map(|i| format!("queue-{i}")).collect();
    let mut workers = Vec::new();
    let session = common::session().await?;
    let first = SetPartitioner::new(&session, &path, "worker-a", items.iter().cloned())?
        .join()
        .await?;
    // Alone, it owns every queue (items come back sorted; these are).
    assert_eq!(first.wait_acquired().await?, items);
    workers.push(first);
    // A second worker joins: the first, which owned everything, lets go
    // when told, then both split the queues.
    let session = common::session().await?;
    let second = SetPartitioner::new(&session, &path, "worker-b", items.iter().cloned())?;
    workers.push(second.join().await?);
    release_when_told(&workers[0]).await?;
    let mut all = BTreeSet::new();
    for w in &workers {
        let mine = w.wait_acquired().await?;
        println!("{} owns {mine:?}", w.member_id());
        assert_eq!(mine.len(), 5);
        for item in mine {
            assert!(all.insert(item), "an item with two owners");
        }
    }
    assert_eq!(all.len(), 10, "every item owned");

    // A third worker joins: both owners release, then all three split.
    let session = common::session().await?;
    let third = SetPartitioner::new(&session, &path, "worker-c", items.iter().cloned())?
        .join()
        .await?;
    release_when_told(&workers[0]).await?;
    release_when_told(&workers[1]).await?;
    workers.push(third);
    let mut all = BTreeSet::new();
    for w in &workers {
        let mine = w.wait_acquired().await?;
        println!("{} owns {mine:?}", w.member_id());
        for item in mine {
            assert!(all.insert(item), "an item with two owners");
        }
    }
    assert_eq!(all.len(), 10, "every item owned");
    for w in workers {
        w.close().await?;
    }
    Ok(())
}

//! [`coordination::Barrier`] (hold everyone until it is removed) and
//! [`coordination::DoubleBarrier`] (enter when all N are in, leave when all are
//! out).
//!
//! `cargo run -p coordination --example barrier [-- --url URL]`

mod common;

use coordination::{Barrier, DoubleBarrier};

#[tokio::main]
async fn main() -> common::Result {
    let root = common::root("barrier");
    let session = common::session().await?;

    // A barrier: the deploy waits until the gate is removed.
    let barrier = Barrier::new(&session, &format!("{root}/deploy"))?;
    barrier.set().await?;
    let waiter = tokio::spawn({
        let barrier = barrier.clone();
        async move { barrier.wait().await }
    });
    barrier.remove().await?;
    waiter.await??;
    println!("the waiter went through once the barrier was removed");

    // A double barrier of 3: each worker enters, computes, leaves.
    let mut workers = Vec::new();
    for i in 0..3 {
        let s = common::session().await?;
        let round = DoubleBarrier::new(&s, &format!("{root}/round-1"), 3)?;
        workers.push(tokio::spawn(async move {
            let inside = round.enter().await?;
            println!("worker {i} is in with all the others");
            inside.leave().await
        }));
    }
    for w in workers {
        w.await??;
    }
    println!("all 3 workers entered and left together");
    Ok(())
}

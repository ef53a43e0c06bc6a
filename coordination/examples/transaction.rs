//! A transaction under a fence: the holder of a [`coordination::Lock`]
//! moves a job from `pending` to `running` and bumps the epoch, three
//! writes that land together or not at all, and only while it holds the
//! lock (`guard.commit` puts the lock's fence first). A second move of the
//! same job is refused whole, naming the op that failed; a holder that
//! lost the lock is refused at its fence, and writes nothing.
//!
//! `cargo run -p coordination --example transaction [-- --url URL]`

mod common;

use coordination::prelude::*; // Hold::commit
use coordination::{CreateMode, Error, Lock, Transaction, TxnFailure, TxnResult, TxnStep};

#[tokio::main]
async fn main() -> common::Result {
    let root = common::root("transaction");
    let lock_path = format!("{root}/lock");
    let (pending, running) = (format!("{root}/pending/17"), format!("{root}/running/17"));
    let epoch = format!("{root}/epoch");
    // Two clients, as two processes would be.
    let (a, b) = (common::session().await?, common::session().await?);
    a.create(&pending, b"resize images", CreateMode::Persistent)
        .await?;
    let e = a.create(&epoch, b"1", CreateMode::Persistent).await?;

    let guard = Lock::new(&a, &lock_path)?.acquire().await?;
    let move_job = |epoch_version| {
        Transaction::new()
            .delete(pending.as_str())
            .create(running.as_str(), "resize images, by A")
            .set_if(epoch.as_str(), "2", epoch_version)
    };
    let results = guard.commit(move_job(e.version)).await?;
    assert_eq!(results[0], TxnResult::Deleted);
    assert!(matches!(results[1], TxnResult::Created(_)));
    println!("moved job 17 and bumped the epoch: {results:?}");

    // Again: the delete finds no node, so nothing of it is applied.
    match guard.commit(move_job(e.version)).await {
        Err(Error::TransactionFailed { step, failure, .. }) => {
            assert_eq!((step, failure), (TxnStep::Op(0), TxnFailure::NoNode));
            println!("a second move was refused whole at {step}: {failure}");
        }
        other => return Err(format!("a second move: {other:?}").into()),
    }

    // The lock is broken under A (an operator deleted its node while A
    // was paused): A's next transaction is refused at its fence.
    b.delete(guard.node_path(), None).await?;
    let late = guard
        .commit(Transaction::new().set(epoch.as_str(), "3"))
        .await;
    assert!(
        matches!(
            late,
            Err(Error::TransactionFailed {
                step: TxnStep::Fence(0),
                failure: TxnFailure::FenceLost,
                ..
            })
        ),
        "{late:?}"
    );
    let now = b.get(&epoch).await?.ok_or("the epoch is gone")?;
    assert_eq!(now.data, b"2");
    println!("A, no longer holding the lock, wrote nothing: the epoch is still 2");

    assert!(guard.release().await.is_err());
    a.close().await?;
    b.close().await?;
    Ok(())
}

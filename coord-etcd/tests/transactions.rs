//! Transactions on etcd, beyond the conformance suite's: the limits fit a
//! server with etcd's default `--max-txn-ops`, and an answer lost with the
//! connection is `OutcomeUnknown`, the transaction applied whole.
//! Against the server at `COORD_TEST_ETCD`.

mod common;

use std::time::Duration;

use common::harness::EtcdHarness;
use coord_conformance::Harness;
use coord_core::{CreateMode, Error, Fence, Transaction, TxnResult};

/// The documented limit: `--max-txn-ops` (128 by default) over three etcd
/// ops a step at most.
const MAX_STEPS: usize = 42;

/// A transaction of as many of the costliest steps as the limit allows
/// (creates under a directory it makes, deletes compared by version and
/// children, a fence) fits one Txn on a default server; one more step is
/// refused before any I/O.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_costliest_transaction_within_the_limits_fits_a_default_server() {
    let h = EtcdHarness::from_env();
    let root = h.root("txn_limits");
    let s = h.open().await;
    assert_eq!(s.transaction_limits().max_steps, MAX_STEPS);
    let held = s
        .create(&format!("{root}/lock/n"), b"", CreateMode::Ephemeral)
        .await
        .expect("fence node");
    let fence = Fence {
        path: held.path.clone(),
        stamp: held.stamp,
    };
    let deletes = (MAX_STEPS - 1) / 2;
    let mut old = Vec::new();
    for i in 0..deletes {
        let made = s
            .create(&format!("{root}/old/n{i}"), b"", CreateMode::Persistent)
            .await
            .expect("create");
        old.push((made.path, made.version));
    }
    let mut txn = Transaction::new().guard(&fence);
    for (path, version) in &old {
        txn = txn.delete_if(path.clone(), *version);
    }
    for i in 0..MAX_STEPS - 1 - deletes {
        txn = txn.create(format!("{root}/new/deep/n{i}"), "x");
    }
    let results = s.commit(txn.clone()).await.expect("commit");
    assert_eq!(results.len(), MAX_STEPS - 1);
    assert!(results[..deletes].iter().all(|r| *r == TxnResult::Deleted));
    assert!(s
        .children(&format!("{root}/old"))
        .await
        .expect("children")
        .is_empty());
    let made = s
        .children(&format!("{root}/new/deep"))
        .await
        .expect("children");
    assert_eq!(made.len(), MAX_STEPS - 1 - deletes);
    let over = txn.check(format!("{root}/new"), 1);
    let before = s.requests_sent();
    assert!(matches!(
        s.commit(over).await,
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(s.requests_sent(), before, "refused before any I/O");
    let _ = s.close().await;
}

/// A transaction whose answer is lost (the request reached the server, the
/// answer never came back) is `OutcomeUnknown` naming its first written
/// path; it was applied whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_answer_is_outcome_unknown_and_applied_whole() {
    let h = EtcdHarness::from_env();
    let root = h.root("txn_lost_answer");
    let (s, fault) = h.open_faulty(Duration::from_secs(60)).await;
    let observer = h.open().await;
    s.ensure_dir(&root).await.expect("dir");
    fault.lose_next_answer();
    let done = s
        .commit(
            Transaction::new()
                .create(format!("{root}/a"), "")
                .create(format!("{root}/b"), ""),
        )
        .await;
    match &done {
        Err(Error::OutcomeUnknown { path, .. }) => assert_eq!(*path, format!("{root}/a")),
        other => panic!("expected OutcomeUnknown, got {other:?}"),
    }
    let a = observer.get(&format!("{root}/a")).await.expect("get");
    let b = observer.get(&format!("{root}/b")).await.expect("get");
    assert!(
        a.is_some() && b.is_some(),
        "the request reached the server: {a:?} {b:?}"
    );
    let _ = (s.close().await, observer.close().await);
}

/// A create under an ephemeral node is refused as a single create is
/// (`NotSupported`), and nothing of the transaction is applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_of_an_ephemeral_node_is_refused_whole() {
    let h = EtcdHarness::from_env();
    let root = h.root("txn_ephemeral_parent");
    let s = h.open().await;
    let eph = s
        .create(&format!("{root}/e"), b"", CreateMode::Ephemeral)
        .await
        .expect("ephemeral");
    let r = s
        .commit(
            Transaction::new()
                .create(format!("{root}/plain"), "")
                .create(format!("{}/kid", eph.path), ""),
        )
        .await;
    assert!(matches!(r, Err(Error::NotSupported { .. })), "{r:?}");
    assert!(s
        .get(&format!("{root}/plain"))
        .await
        .expect("get")
        .is_none());
    let _ = s.close().await;
}

/// A transaction that deletes this session's contender node (made by a
/// single create) does the single delete's bookkeeping: the name is lent
/// to the next contender at the prefix, with a new sequence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_deleting_a_contender_lends_its_name_again() {
    let h = EtcdHarness::from_env();
    let prefix = format!("{}/lock/_c_x-lock-", h.root("txn_lends_name"));
    let s = h.open().await;
    let first = s
        .create(&prefix, b"", CreateMode::EphemeralSequential)
        .await
        .expect("contender");
    let done = s
        .commit(Transaction::new().delete(first.path.clone()))
        .await
        .expect("commit");
    assert_eq!(done, vec![TxnResult::Deleted]);
    let next = s
        .create(&prefix, b"", CreateMode::EphemeralSequential)
        .await
        .expect("contender");
    assert_eq!(next.path, first.path, "the name is lent again");
    assert!(next.sequence > first.sequence);
    let _ = s.close().await;
}

/// A transaction whose parents are there is one request (one Txn), a
/// refused one too; one whose create finds no parent costs the parent's
/// create and the Txn once more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_is_one_request() {
    let h = EtcdHarness::from_env();
    let root = h.root("txn_one_request");
    let s = h.open().await;
    let cfg = s
        .create(&format!("{root}/cfg"), b"1", CreateMode::Persistent)
        .await
        .expect("create");
    let txn = Transaction::new()
        .check(format!("{root}/cfg"), cfg.version)
        .set(format!("{root}/cfg"), "2")
        .create(format!("{root}/a"), "")
        .create_with(format!("{root}/e"), "", CreateMode::Ephemeral);
    let before = s.requests_sent().expect("counted");
    s.commit(txn.clone()).await.expect("commit");
    assert_eq!(s.requests_sent().expect("counted") - before, 1);
    let before = s.requests_sent().expect("counted");
    let refused = s.commit(txn).await;
    assert!(
        matches!(refused, Err(Error::TransactionFailed { .. })),
        "{refused:?}"
    );
    assert_eq!(s.requests_sent().expect("counted") - before, 1);
    let before = s.requests_sent().expect("counted");
    s.commit(Transaction::new().create(format!("{root}/new/x"), ""))
        .await
        .expect("commit");
    assert_eq!(s.requests_sent().expect("counted") - before, 3);
    let _ = s.close().await;
}

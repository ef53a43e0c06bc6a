//! Transactions on Redis, beyond the conformance suite's: the limits a
//! whole transaction may reach, and an answer lost with the connection,
//! which the session finds again (through its own fault proxy). Against
//! the server at `COORD_TEST_REDIS`.

mod common;

use std::time::Duration;

use common::{behind_proxy, RedisHarness};
use coord_conformance::fault::Fault;
use coord_core::{CreateMode, Error, Transaction, TxnResult};

/// A transaction of as many steps as the limits allow is one script: all
/// its creates land, in op order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_at_the_limits_is_applied_whole() {
    let h = RedisHarness::from_env();
    let s = coord_redis::connect(h.options()).await.expect("connect");
    // The documented limits: 1,000 steps, 1,000,000 bytes.
    let limits = s.transaction_limits();
    assert_eq!((limits.max_steps, limits.max_bytes), (1_000, 1_000_000));
    let max_steps = limits.max_steps;
    let mut txn = Transaction::new();
    for i in 0..max_steps {
        txn = txn.create(format!("/many/n{i:04}"), [b'x'; 900]);
    }
    let results = s.commit(txn).await.expect("commit");
    assert_eq!(results.len(), max_steps);
    assert!(matches!(&results[999], TxnResult::Created(c) if c.path == "/many/n0999"));
    assert_eq!(s.children("/many").await.expect("children").len(), 1_000);
    let over = (0..=max_steps).fold(Transaction::new(), |t, i| t.check(format!("/c{i}"), 1));
    assert!(matches!(
        s.commit(over).await,
        Err(Error::InvalidArgument(_))
    ));
    s.close().await.expect("close");
}

/// A transaction whose answer is lost (the request reached the server, the
/// answer never came back) is found again: the commit returns what it did,
/// and it was applied once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_answer_is_found_again() {
    let h = RedisHarness::from_env();
    // A long TTL: no heartbeat goes out around the commit, so the answer
    // the proxy loses is the commit's.
    let (proxy, options) =
        behind_proxy(&h.options().with_session_timeout(Duration::from_secs(60))).await;
    let s = coord_redis::connect(options).await.expect("connect");
    let observer = coord_redis::connect(h.options()).await.expect("connect");
    let cfg = s
        .create("/jobs/cfg", b"1", CreateMode::Persistent)
        .await
        .expect("create");
    // Let the sweep the session starts with answer first.
    tokio::time::sleep(Duration::from_millis(200)).await;
    proxy.lose_next_answer();
    let results = s
        .commit(
            Transaction::new()
                .set_if("/jobs/cfg", "2", cfg.version)
                .create_with("/jobs/log-", "moved", CreateMode::PersistentSequential),
        )
        .await
        .expect("a commit whose answer was lost is found");
    assert_eq!(proxy.lost_answers(), 1);
    let (TxnResult::Set(stat), TxnResult::Created(made)) = (&results[0], &results[1]) else {
        panic!("{results:?}");
    };
    let node = observer.get("/jobs/cfg").await.expect("get").expect("node");
    assert_eq!(
        (node.data.as_slice(), node.stat.version),
        (&b"2"[..], stat.version)
    );
    let kids = observer.children("/jobs").await.expect("children");
    assert_eq!(kids.len(), 2, "applied once: {kids:?}");
    assert!(observer.get(&made.path).await.expect("get").is_some());
    s.close().await.expect("close");
    observer.close().await.expect("close");
}

/// A commit sent into a partition is known once the partition heals:
/// applied whole (the commit says what it did) or not at all (then it
/// never will be), never half.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_during_a_partition_is_known_after_the_heal() {
    let h = RedisHarness::from_env();
    let (proxy, options) = behind_proxy(
        &h.options()
            .with_session_timeout(Duration::from_secs(60))
            .with_request_timeout(Duration::from_millis(500)),
    )
    .await;
    let s = coord_redis::connect(options).await.expect("connect");
    let observer = coord_redis::connect(h.options()).await.expect("connect");
    s.ensure_dir("/cut").await.expect("dir");
    proxy.partition();
    let commit = tokio::spawn(async move {
        let done = s
            .commit(Transaction::new().create("/cut/a", "").create("/cut/b", ""))
            .await;
        (s, done)
    });
    // Past the request timeout, the session asks what became of it.
    tokio::time::sleep(Duration::from_secs(2)).await;
    proxy.heal();
    let (s, done) = commit.await.expect("the commit task");
    let a = observer.get("/cut/a").await.expect("get").is_some();
    let b = observer.get("/cut/b").await.expect("get").is_some();
    assert_eq!(a, b, "half applied: {done:?}");
    match done {
        Ok(results) => assert!(a && results.len() == 2, "{results:?}"),
        Err(Error::ConnectionLost(_)) => assert!(!a),
        other => panic!("the outcome is known after the heal: {other:?}"),
    }
    s.close().await.expect("close");
    observer.close().await.expect("close");
}

/// A create under an ephemeral node is refused as a single create is
/// (`NotSupported`), before the script writes anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_of_an_ephemeral_node_is_refused_whole() {
    let h = RedisHarness::from_env();
    let s = coord_redis::connect(h.options()).await.expect("connect");
    let eph = s
        .create("/eph/e", b"", CreateMode::Ephemeral)
        .await
        .expect("ephemeral");
    let r = s
        .commit(
            Transaction::new()
                .create("/eph/plain", "")
                .create(format!("{}/kid", eph.path), ""),
        )
        .await;
    assert!(matches!(r, Err(Error::NotSupported { .. })), "{r:?}");
    assert!(s.get("/eph/plain").await.expect("get").is_none());
    s.close().await.expect("close");
}

/// A transaction is one request (one script), applied or refused, with
/// its missing parents made in the same script.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_is_one_request() {
    let h = RedisHarness::from_env();
    let s = coord_redis::connect(h.options()).await.expect("connect");
    let cfg = s
        .create("/one/cfg", b"1", CreateMode::Persistent)
        .await
        .expect("create");
    let txn = Transaction::new()
        .check("/one/cfg", cfg.version)
        .set("/one/cfg", "2")
        .create("/one/new/deep/a", "")
        .create_with("/one/e", "", CreateMode::Ephemeral);
    for expect_ok in [true, false] {
        let before = s.requests_sent().expect("counted");
        let done = s.commit(txn.clone()).await;
        assert_eq!(done.is_ok(), expect_ok, "{done:?}");
        assert_eq!(s.requests_sent().expect("counted") - before, 1);
    }
    s.close().await.expect("close");
}

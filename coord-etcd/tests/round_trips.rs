//! Round trips of an uncontended lock: one Txn to join the queue (it also
//! reads the queue back, as etcd's Go mutex does) and one delete to leave.
//! Alone in its test binary, since it reads a process-wide request count.
//!
//! Needs `COORD_TEST_ETCD` (scripts/test-all sets it).

use coord_core::recipes::Lock;
use coord_etcd::{testing, EtcdOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uncontended_acquire_and_release_take_two_round_trips() {
    let endpoints = std::env::var("COORD_TEST_ETCD")
        .expect("COORD_TEST_ETCD is not set: this test needs a running etcd (scripts/test-all)");
    let session = coord_etcd::connect(EtcdOptions::from_endpoint_list(&endpoints))
        .await
        .expect("session");
    let id = uuid::Uuid::new_v4().simple().to_string();
    let lock = Lock::new(&session, &format!("/coord-round-trips/{id}")).expect("lock");
    // The first acquire makes the lock's directory; count the next ones.
    lock.acquire()
        .await
        .expect("acquire")
        .release()
        .await
        .expect("release");

    for _ in 0..3 {
        let before = testing::requests();
        let guard = lock.acquire().await.expect("acquire");
        let acquired = testing::requests();
        guard.release().await.expect("release");
        let released = testing::requests();
        assert_eq!(acquired - before, 1, "round trips to acquire");
        assert_eq!(released - acquired, 1, "round trips to release");
    }
    session.close().await.expect("close");
}

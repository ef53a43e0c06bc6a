//! A few operations of every workload on the in-memory backend, so the
//! benchmark never rots (the full matrix is `scripts/bench`).

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_workload_runs_on_mem() {
    let report = coord_bench::run("mem://", &coord_bench::Config::smoke())
        .await
        .expect("the smoke run");
    assert!(
        report.failures.is_empty(),
        "failed workloads: {:?}",
        report.failures
    );
    for key in [
        "raw.per_s",
        "w1.lock.per_s",
        "w1.native.per_s",
        "w2.lock.k8.per_s",
        "w2.simple.k8.wakeups",
        "w3.per_s",
        "w4.per_s",
        "w5.resign_p50_ms",
        "w5.expiry_p50_ms",
        "w6.items_per_s",
        "w6.drain2_s",
        "w7.n3.round_ms",
        "w8.full_view_ms",
        "w6.four_vs_one.per_s",
        "rt.lock.acquire",
        "rt.lock.release",
        "rt.semaphore.acquire",
        "rt.queue.offer",
        "rt.queue.take1",
        "rt.queue.take4",
        "rt.queue.take4.deletes",
        "rt.w2.k8.requests",
    ] {
        let v = report.value(key).unwrap_or_else(|| panic!("no row {key}"));
        assert!(v.is_finite() && v >= 0.0, "{key} = {v}");
    }
    assert!(report.value("w4.max_inside").expect("w4") <= 4.0);
    // W2 measures handoffs between sessions, not one task re-taking a
    // free lock: on mem an acquire and release can run without yielding,
    // and then no contender ever waited (0 wake-ups, exactly). How many
    // wait in a 10-acquisition block varies; that some do does not.
    let w = report.value("w2.lock.k8.wakeups").expect("wake-ups");
    assert!(
        w > 0.0,
        "W2 on mem woke no waiter: the contenders never overlapped"
    );
    // Interleaved blocks: the ratio is the median of the blocks' ratios.
    let w2 = report.get("w2.lock.k8.per_s").expect("w2 row");
    assert_eq!(w2.blocks.len(), 3, "W2 runs in 3 interleaved blocks");
    assert!(w2.ratio().is_some_and(|r| r.is_finite() && r > 0.0));
    assert!(report.json().contains("\"rows\""));
    assert!(report.markdown().contains("| W2 |"));
}

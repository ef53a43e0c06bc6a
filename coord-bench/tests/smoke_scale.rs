//! The lock-scale workload (issue 35) at tiny sizes on the in-memory
//! backend, so it never rots (the full run is `scripts/bench-scale`).

use coord_bench::workloads::scale::{self, ScaleConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scale_workload_runs_on_mem() {
    let cfg = ScaleConfig::smoke();
    let run = scale::run("mem://", &cfg).await.expect("the smoke run");
    let rep = &run.report;
    assert!(rep.failures.is_empty(), "failed: {:?}", rep.failures);
    for &k in &cfg.ks {
        for name in ["coord Lock", "tokio Mutex"] {
            let blocks = run
                .blocks
                .get(&(k, name.to_owned()))
                .unwrap_or_else(|| panic!("no blocks of {name} at K = {k}"));
            assert_eq!(blocks.len(), cfg.blocks, "{name} K = {k}");
            for h in blocks {
                // Mutual exclusion held, and every hand-off was counted
                // once: the contenders' own counts add up to the shared
                // tally, which reached the block's size.
                assert_eq!(h.violations, 0, "{name} K = {k}");
                assert_eq!(h.tallied, h.acquisitions, "{name} K = {k}");
                assert!(h.acquisitions >= cfg.per_block(k), "{name} K = {k}");
                assert!(h.per_s.is_finite() && h.per_s > 0.0, "{name} K = {k}");
                assert!(
                    h.steady_per_s.is_finite() && h.steady_per_s > 0.0,
                    "{name} K = {k}"
                );
            }
        }
        let r = rep
            .get(&format!("scale.k{k}.lock.vs.tokio"))
            .expect("coord ÷ tokio row");
        assert_eq!(r.blocks.len(), cfg.blocks, "one ratio per block");
        assert!(r.ratio().is_some_and(|x| x.is_finite() && x > 0.0));
    }
    // At K > 1 the holder waits until another contender waits, so a
    // release wakes someone: hand-offs between sessions, not one task
    // re-taking a free lock.
    // The rate with K waiting, and beside it the whole block's.
    assert!(rep.value("scale.k8.lock.per_s").is_some());
    assert!(rep.value("scale.k8.lock.whole_per_s").is_some());
    let w = rep.value("scale.k8.lock.wakeups").expect("wake-ups at 8");
    assert!(w > 0.0, "no waiter woke at K = 8");
    assert!(rep
        .get("scale.k4.lock.vs_k8")
        .and_then(|r| r.ratio())
        .is_some());
    let md = run.markdown();
    assert!(
        md.contains("| K | coord Lock /s | tokio Mutex /s |"),
        "{md}"
    );
    assert!(md.contains("coord Lock ÷ tokio Mutex"), "{md}");
}

//! The growth workloads and the soak, at tiny sizes on the in-memory
//! backend, so they never rot (`coord-bench --growth`, `--soak`).

use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn growth_workloads_run_on_mem() {
    let cfg = coord_bench::Config::smoke();
    let g = &cfg.growth;
    let report = coord_bench::run_growth("mem://", &cfg)
        .await
        .expect("the growth run");
    assert!(
        report.failures.is_empty(),
        "failed workloads: {:?}",
        report.failures
    );
    let value = |key: &str| report.value(key).unwrap_or_else(|| panic!("no row {key}"));
    // Every watcher saw every member that joined, at every size.
    for &n in &g.group_sizes {
        assert_eq!(value(&format!("growth.group.n{n}.members")), n as f64);
        assert!(value(&format!("growth.group.n{n}.full_view_ms")) > 0.0);
    }
    let ratio = report.get("growth.group.ratio").expect("group ratio");
    assert_eq!(ratio.blocks.len(), g.group_blocks, "one ratio per block");
    // Every item was taken, each exactly once (the drain fails otherwise),
    // with 4 consumers and with 1.
    let (big, small) = g.queue_sizes;
    for c in [cfg.consumers, 1] {
        for n in [small, big] {
            assert_eq!(value(&format!("growth.queue.c{c}.n{n}.taken")), n as f64);
            // A lone consumer lists at least once.
            assert!(value(&format!("growth.queue.c{c}.n{n}.listings_per_item")) > 0.0);
        }
        assert!(report
            .get(&format!("growth.queue.c{c}.ratio"))
            .and_then(|r| r.ratio())
            .is_some_and(|r| r > 0.0));
    }
    assert!(value("growth.cycle.coord.per_s") > 0.0);
    // Holding locks and watches takes memory: a figure, not a NaN.
    for what in ["locks", "watches"] {
        let rss = value(&format!("growth.memory.{what}.rss_mib"));
        assert!(rss > 0.0, "{what}: RSS {rss}");
        assert!(value(&format!("growth.memory.{what}.setup_per_s")) > 0.0);
    }
    assert!(report
        .targets
        .iter()
        .any(|t| t.what.starts_with("group:") && t.measured.is_finite()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_soak_samples_memory_and_checks_growth() {
    use coord_bench::workloads::soak::{parse_duration, run, Soak};
    assert_eq!(parse_duration("30m"), Ok(Duration::from_secs(1800)));
    assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
    assert!(parse_duration("3 weeks").is_err());
    let mut soak = Soak::new(Duration::from_millis(800));
    soak.every = Duration::from_millis(100);
    soak.warmup = Duration::from_millis(200);
    let report = run("mem://", &soak).await.expect("the soak");
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    let samples = report
        .rows
        .iter()
        .filter(|r| r.key.starts_with("soak.rss."))
        .count();
    assert!(samples >= 5, "{samples} samples in 0.8 s, one per 0.1 s");
    assert!(report.value("soak.per_s").expect("cycles") > 0.0);
    let end = report.get("soak.end_mib").expect("end");
    assert!(end.value > 0.0 && end.ratio().is_some());
    assert_eq!(report.targets.len(), 1, "the 10 % target is checked");
}

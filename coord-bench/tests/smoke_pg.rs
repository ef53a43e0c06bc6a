//! A few operations of every workload on the PostgreSQL server at
//! `COORD_TEST_PG` (scripts/test-all starts one), with the native floors
//! beside them: `pg_advisory_lock` for W1 and W2, `SKIP LOCKED` consumers
//! for W6. Without a server it fails; it never skips.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_workload_runs_on_pg_beside_the_native_floors() {
    let url = match std::env::var("COORD_TEST_PG") {
        Ok(url) if !url.is_empty() => url,
        _ => panic!(
            "COORD_TEST_PG is not set: this test needs a PostgreSQL server. Run \
             scripts/test-all, or start one (scripts/servers/pg.sh) and set COORD_TEST_PG"
        ),
    };
    let report = coord_bench::run(&url, &coord_bench::Config::smoke())
        .await
        .expect("the smoke run");
    assert_eq!(report.backend, "pg");
    assert!(
        report.failures.is_empty(),
        "failed workloads: {:?}",
        report.failures
    );
    for key in [
        "raw.per_s",
        "w1.native.per_s",
        "w1.lock.per_s",
        "w2.native.k8.per_s",
        "w2.lock.k8.per_s",
        "w6.native.drain_per_s",
        "w6.vs_native.drain_per_s",
    ] {
        let v = report.value(key).unwrap_or_else(|| panic!("no row {key}"));
        assert!(v.is_finite() && v > 0.0, "{key} = {v}");
    }
    // The ratios to the native floors come from interleaved blocks.
    for key in [
        "w1.lock.per_s",
        "w2.lock.k8.per_s",
        "w6.vs_native.drain_per_s",
    ] {
        let row = report.get(key).expect("row");
        assert!(!row.blocks.is_empty(), "{key} ran in blocks");
        assert!(
            row.ratio().is_some_and(|r| r.is_finite() && r > 0.0),
            "{key}: {:?}",
            row.ratio()
        );
    }
    // The URL's password, if it has one, is in neither the table nor the
    // JSON.
    let password = url
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .and_then(|(user, _)| user.split_once(':'))
        .map(|(_, pw)| pw.to_owned());
    if let Some(pw) = password.filter(|p| !p.is_empty()) {
        assert!(
            !report.markdown().contains(&pw),
            "the password in the table"
        );
        assert!(!report.json().contains(&pw), "the password in the JSON");
        assert!(report.url.contains(":***@"), "{}", report.url);
    }
}

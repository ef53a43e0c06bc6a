//! `coordctl run-once`: each period runs at most once, and what
//! `--on-crash skip|retry` does when CMD or coordctl dies mid-run.

use super::*;

/// Three `run-once` instances with a 1 s period: each period's command
/// runs at most once, and periods keep running.
pub(crate) fn run_once_runs_each_period_at_most_once(url: &str) {
    let job = unique("job");
    let dir = temp_dir();
    let runs = dir.join("runs");
    let runs_s = runs.to_string_lossy().into_owned();
    let mut instances: Vec<Running> = (0..3)
        .map(|i| {
            let mut c = coordctl(
                url,
                &[
                    "run-once",
                    &job,
                    "--every",
                    "1s",
                    "--",
                    "sh",
                    "-c",
                    r#"echo "$COORD_PERIOD $COORD_FENCING_TOKEN" >> "$1"; sleep 0.2"#,
                    "sh",
                    &runs_s,
                ],
            );
            let log = std::fs::File::create(dir.join(format!("log-{i}")))
                .unwrap_or_else(|e| panic!("log file: {e}"));
            c.stderr(log);
            Running::start(c)
        })
        .collect();
    std::thread::sleep(Duration::from_millis(3500));
    for i in &mut instances {
        assert_eq!(code(i.signal_and_wait(Signal::SIGTERM, 20)), Some(143));
    }
    let text = std::fs::read_to_string(&runs).unwrap_or_default();
    let periods: Vec<u64> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    let mut distinct = periods.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        periods.len(),
        "a period ran twice: {text:?}"
    );
    assert!(periods.len() >= 2, "too few periods ran: {text:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The index of the current 3650-day period (`run-once --every 3650d`),
/// which does not change while a test runs (the next starts in 2030).
pub(crate) fn ten_year_period() -> u64 {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    secs / (3650 * 86_400)
}

/// Wait until the file at `path` contains `needle` (within `secs`); its
/// content.
pub(crate) fn wait_for_text(path: &std::path::Path, needle: &str, secs: u64) -> String {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{} never said {needle:?} within {secs}s: {text:?}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `run-once JOB --every 3650d [--on-crash WHAT] -- sh -c SCRIPT sh DIR`,
/// its stderr to DIR/NAME.log.
pub(crate) fn run_once(
    url: &str,
    job: &str,
    on_crash: Option<&str>,
    script: &str,
    dir: &std::path::Path,
    name: &str,
    extra: &[&str],
) -> Running {
    let dir_s = dir.to_string_lossy().into_owned();
    let mut args: Vec<&str> = extra.to_vec();
    args.extend(["run-once", job, "--every", "3650d"]);
    if let Some(w) = on_crash {
        args.extend(["--on-crash", w]);
    }
    args.extend(["--", "sh", "-c", script, "sh", &dir_s]);
    let mut c = coordctl(url, &args);
    c.stderr(
        std::fs::File::create(dir.join(format!("{name}.log")))
            .unwrap_or_else(|e| panic!("log: {e}")),
    );
    Running::start(c)
}

/// Lines in DIR/runs.
pub(crate) fn runs(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("runs"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// `run-once` when CMD fails and when coordctl dies mid-run:
/// - default (`--on-crash skip`): a CMD exiting 3 is not run again, and
///   another instance started later finds the period abandoned and does
///   not run it either; a runner killed with SIGKILL mid-run leaves its
///   period abandoned for the next instance too;
/// - `--on-crash retry`: a CMD killed by a signal (SIGKILL) is run again by
///   the same instance, which then records the period; a runner killed
///   with SIGKILL mid-run has its period run by another instance once its
///   session has expired.
pub(crate) fn run_once_on_crash_skip_and_retry(url: &str) {
    let period = ten_year_period().to_string();

    // Skip (the default): CMD fails.
    let dir = temp_dir();
    let job = unique("job");
    let fail = r#"echo "$COORD_PERIOD" >> "$1/runs"; exit 3"#;
    let mut a = run_once(url, &job, None, fail, &dir, "a", &[]);
    wait_for_text(&dir.join("a.log"), "not run again (--on-crash skip)", 20);
    let mut b = run_once(url, &job, Some("skip"), fail, &dir, "b", &[]);
    wait_for_text(
        &dir.join("b.log"),
        &format!("period {period} was started by an instance whose run failed"),
        20,
    );
    assert_eq!(
        runs(&dir),
        vec![period.clone()],
        "the failed period ran again"
    );
    let v = inspect_json(url, &job);
    assert_eq!(
        (v["job"]["last_run"].clone(), v["job"]["started"].as_u64()),
        (serde_json::Value::Null, period.parse().ok()),
        "{v:#}"
    );
    assert_eq!(code(a.signal_and_wait(Signal::SIGTERM, 20)), Some(143));
    assert_eq!(code(b.signal_and_wait(Signal::SIGTERM, 20)), Some(143));
    let _ = std::fs::remove_dir_all(&dir);

    // Retry: the first run's CMD is killed by SIGKILL, the second succeeds.
    let dir = temp_dir();
    let job = unique("job");
    let flaky = r#"echo "$COORD_PERIOD" >> "$1/runs"; if [ ! -e "$1/once" ]; then : > "$1/once"; kill -9 $$; fi"#;
    let mut a = run_once(url, &job, Some("retry"), flaky, &dir, "a", &[]);
    let log = wait_for_text(&dir.join("a.log"), "ran here (exit 0)", 30);
    assert!(
        log.contains("exited with 137") && log.contains("it is run again (--on-crash retry)"),
        "{log}"
    );
    assert_eq!(
        runs(&dir),
        [period.clone(), period.clone()],
        "run once more, then done"
    );
    assert_eq!(
        inspect_json(url, &job)["job"]["last_run"].as_u64(),
        period.parse().ok()
    );
    assert_eq!(code(a.signal_and_wait(Signal::SIGTERM, 20)), Some(143));
    let _ = std::fs::remove_dir_all(&dir);

    // coordctl itself killed mid-run, each way.
    for (on_crash, then) in [
        (
            "skip",
            "was started by an instance whose run failed or died",
        ),
        ("retry", "ran here (exit 0)"),
    ] {
        let dir = temp_dir();
        let job = unique("job");
        let hang = r#"echo $$ > "$1/pid"; echo "$COORD_PERIOD" >> "$1/runs"; exec sleep 60"#;
        let mut a = run_once(
            url,
            &job,
            Some(on_crash),
            hang,
            &dir,
            "a",
            &["--session-timeout", "2s"],
        );
        let pid = wait_for_file(&dir.join("pid"), 20);
        assert_eq!(a.signal_and_wait(Signal::SIGKILL, 10).code(), None);
        if let Ok(pid) = pid.trim().parse::<i32>() {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
        }
        let ok = r#"echo "$COORD_PERIOD" >> "$1/runs""#;
        let mut b = run_once(url, &job, Some(on_crash), ok, &dir, "b", &[]);
        wait_for_text(&dir.join("b.log"), then, 40);
        let want = if on_crash == "skip" {
            vec![period.clone()]
        } else {
            vec![period.clone(), period.clone()]
        };
        assert_eq!(runs(&dir), want, "{on_crash}");
        assert_eq!(code(b.signal_and_wait(Signal::SIGTERM, 20)), Some(143));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

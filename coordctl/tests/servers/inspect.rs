//! `coordctl inspect` on everything coordctl makes, held by real
//! coordctl processes, as a table and as JSON.

use super::*;

/// `coordctl inspect PATH --json`, parsed, once it lists `n` entries
/// (polled, within 20 s).
pub(crate) fn wait_for_entries(url: &str, path: &str, n: usize) -> serde_json::Value {
    wait_for_inspection(url, path, &format!("{n} entries"), |v| {
        v["entries"].as_array().map_or(0, Vec::len) == n
    })
}

/// `coordctl inspect PATH --json`, parsed, once `ok` holds for it (polled,
/// within 20 s).
pub(crate) fn wait_for_inspection(
    url: &str,
    path: &str,
    what: &str,
    ok: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let v = inspect_json(url, path);
        if ok(&v) {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "inspect {path} never showed {what}: {v:#}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `coordctl inspect PATH --json`, parsed; it must succeed, print one
/// JSON object on stdout, and no mem:// warning on stderr.
pub(crate) fn inspect_json(url: &str, path: &str) -> serde_json::Value {
    let out = run(coordctl(url, &["inspect", path, "--json"]), 20);
    assert_eq!(code(out.status), Some(0), "{out:?}");
    assert!(!stderr(&out).contains("mem://"), "{out:?}");
    serde_json::from_str(stdout(&out).trim_end())
        .unwrap_or_else(|e| panic!("inspect --json printed no JSON ({e}): {out:?}"))
}

/// `coordctl inspect PATH` (the table): its stdout lines.
pub(crate) fn inspect_table(url: &str, path: &str, args: &[&str]) -> Vec<String> {
    let mut all = vec!["inspect", path];
    all.extend_from_slice(args);
    let out = run(coordctl(url, &all), 20);
    assert_eq!(code(out.status), Some(0), "{out:?}");
    stdout(&out).lines().map(str::to_owned).collect()
}

/// The (role, data) of each entry of an inspection.
pub(crate) fn roles_and_data(v: &serde_json::Value) -> Vec<(String, String)> {
    v["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no entries: {v:#}"))
        .iter()
        .map(|e| {
            (
                e["role"].as_str().unwrap_or("?").to_owned(),
                e["data"].as_str().unwrap_or("?").to_owned(),
            )
        })
        .collect()
}

/// `inspect` on each thing coordctl makes, held by real coordctl
/// processes: a lock's holder then its waiter (table and JSON, with
/// stamps, creation times as the backend keeps them, and the holder's
/// stamp its fencing token); a semaphore's holders and waiter; an
/// election's leader and candidate; a group's member; a queue's length
/// and head; a run-once job's last run; and a path with nothing there.
pub(crate) fn inspect_reports_what_lives_there(url: &str) {
    let etcd = url.starts_with("etcd://");
    let dir = temp_dir();
    let release = dir.join("release");
    let token_file = dir.join("token");
    let (release_s, token_s) = (
        release.to_string_lossy().into_owned(),
        token_file.to_string_lossy().into_owned(),
    );
    let hold = r#"echo "$COORD_FENCING_TOKEN" > "$2"; while [ ! -e "$1" ]; do sleep 0.05; done"#;

    // A lock: a holder, then a waiter.
    let lock = unique("lock");
    let mut holder = Running::start(coordctl(
        url,
        &[
            "lock", &lock, "--", "sh", "-c", hold, "sh", &release_s, &token_s,
        ],
    ));
    let token = wait_for_file(&token_file, 20);
    let mut waiter = Running::start(coordctl(url, &["lock", &lock, "--", "true"]));
    let v = wait_for_entries(url, &lock, 2);
    assert_eq!(v["kind"], "lock", "{v:#}");
    assert_eq!(v["path"], lock.as_str(), "{v:#}");
    let e = &v["entries"];
    assert_eq!(
        (e[0]["role"].as_str(), e[1]["role"].as_str()),
        (Some("holder"), Some("waiter")),
        "{v:#}"
    );
    assert_eq!(
        e[0]["stamp"].as_u64(),
        token.trim().parse::<u64>().ok(),
        "the holder's stamp is its token: {v:#}"
    );
    assert!(e[0]["stamp"].as_u64() < e[1]["stamp"].as_u64(), "{v:#}");
    for x in [&e[0], &e[1]] {
        assert_eq!(x["ephemeral"], true, "{v:#}");
        assert!(
            x["session"].as_str().is_some_and(|s| !s.is_empty()),
            "an ephemeral node names its owner session: {v:#}"
        );
        assert!(
            x["node"]
                .as_str()
                .is_some_and(|n| n.starts_with(&format!("{lock}/"))),
            "{v:#}"
        );
        if etcd {
            assert!(x["since"].is_null() && x["age_ms"].is_null(), "{v:#}");
        } else {
            assert!(
                x["since"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("20") && t.ends_with('Z')),
                "{v:#}"
            );
            assert!(x["age_ms"].as_u64().is_some_and(|a| a < 600_000), "{v:#}");
        }
    }
    assert_ne!(
        e[0]["session"], e[1]["session"],
        "holder and waiter are two processes, two sessions: {v:#}"
    );
    let table = inspect_table(url, &lock, &[]);
    assert_eq!(
        table[0],
        format!("{lock}: lock: 1 holder, 1 waiter"),
        "{table:#?}"
    );
    assert!(
        table[1].starts_with("ROLE") && table[1].contains("SESSION") && table[1].ends_with("DATA"),
        "{table:#?}"
    );
    assert!(
        table[2].starts_with("holder ") && table[3].starts_with("waiter "),
        "{table:#?}"
    );
    assert!(table[2].contains(token.trim()), "{table:#?}");
    assert!(table.iter().any(|l| l.starts_with("note: ")), "{table:#?}");
    std::fs::write(&release, "").unwrap_or_else(|e| panic!("release: {e}"));
    assert_eq!(code(holder.wait(20)), Some(0));
    assert_eq!(code(waiter.wait(20)), Some(0));

    // A semaphore of 2 leases: two holders and a waiter.
    let sem = unique("semaphore");
    let release2 = dir.join("release2");
    let release2_s = release2.to_string_lossy().into_owned();
    let lease = || {
        Running::start(coordctl(
            url,
            &[
                "lock",
                &sem,
                "--leases",
                "2",
                "--",
                "sh",
                "-c",
                r#"while [ ! -e "$1" ]; do sleep 0.05; done"#,
                "sh",
                &release2_s,
            ],
        ))
    };
    let mut leases = vec![lease(), lease()];
    wait_for_entries(url, &sem, 2);
    leases.push(lease());
    // Once the third counts the leases with its own lease node made.
    let v = wait_for_inspection(url, &sem, "a counting waiter", |v| {
        v["entries"].as_array().map_or(0, Vec::len) == 3 && v["max_leases"]["how"] == "inferred"
    });
    assert_eq!(v["kind"], "semaphore", "{v:#}");
    let roles: Vec<String> = roles_and_data(&v).into_iter().map(|(r, _)| r).collect();
    assert_eq!(roles, ["holder", "holder", "waiter"], "{v:#}");
    assert_eq!(v["max_leases"]["value"], 2, "{v:#}");
    assert_eq!(v["max_leases"]["how"], "inferred", "{v:#}");
    let told = inspect_table(url, &sem, &["--max-leases", "2"]);
    assert_eq!(
        told[0],
        format!("{sem}: semaphore: 2 holders of 2 leases, 1 waiter"),
        "{told:#?}"
    );
    std::fs::write(&release2, "").unwrap_or_else(|e| panic!("release: {e}"));
    for mut l in leases {
        assert_eq!(code(l.wait(30)), Some(0));
    }

    // An election: the leader, then a candidate, with their values.
    let election = unique("election");
    let mut a = Running::start(coordctl(url, &["elect", &election, "node-a"]));
    assert_eq!(a.line(20), "leader node-a");
    let mut b = Running::start(coordctl(url, &["elect", &election, "node-b"]));
    let v = wait_for_entries(url, &election, 2);
    assert_eq!(v["kind"], "election", "{v:#}");
    assert_eq!(
        roles_and_data(&v),
        [
            ("leader".to_owned(), "node-a".to_owned()),
            ("candidate".to_owned(), "node-b".to_owned())
        ],
        "{v:#}"
    );
    let table = inspect_table(url, &election, &[]);
    assert_eq!(
        table[0],
        format!(r#"{election}: election: leader "node-a", 1 candidate"#),
        "{table:#?}"
    );
    assert_eq!(code(a.signal_and_wait(Signal::SIGTERM, 20)), Some(143));
    assert_eq!(b.line(20), "leader node-b");
    assert_eq!(code(b.signal_and_wait(Signal::SIGTERM, 20)), Some(143));

    // A group member.
    let group = unique("group");
    let mut m = Running::start(coordctl(url, &["join", &group, "host-1:80"]));
    assert!(m.line(20).starts_with("joined "));
    let v = wait_for_entries(url, &group, 1);
    assert_eq!(v["kind"], "group", "{v:#}");
    assert_eq!(
        roles_and_data(&v),
        [("member".to_owned(), "host-1:80".to_owned())],
        "{v:#}"
    );
    assert_eq!(code(m.signal_and_wait(Signal::SIGTERM, 20)), Some(143));

    // A queue: its length and head.
    let q = unique("queue");
    let out = run(
        coordctl(url, &["queue", "push", &q, "first", "second", "third"]),
        20,
    );
    assert!(out.status.success(), "{out:?}");
    let v = inspect_json(url, &q);
    assert_eq!(v["kind"], "queue", "{v:#}");
    assert_eq!(v["queue"]["len"], 3, "{v:#}");
    assert_eq!(v["queue"]["leased"], 0, "{v:#}");
    assert_eq!(
        roles_and_data(&v),
        [("head".to_owned(), "first".to_owned())],
        "{v:#}"
    );
    assert_eq!(
        inspect_table(url, &q, &[])[0],
        format!(r#"{q}: queue: length 3 (0 leased to consumers), head "first""#)
    );
    let out = run(coordctl(url, &["queue", "pop", &q]), 20);
    assert_eq!(stdout(&out), "first\n", "{out:?}");
    let v = inspect_json(url, &q);
    assert_eq!(v["queue"]["len"], 2, "{v:#}");
    assert_eq!(
        roles_and_data(&v),
        [("head".to_owned(), "second".to_owned())],
        "{v:#}"
    );

    // A run-once job: its last run is the period it ran.
    let job = unique("job");
    let log = dir.join("job-log");
    let mut c = coordctl(url, &["run-once", &job, "--every", "3650d", "--", "true"]);
    c.stderr(std::fs::File::create(&log).unwrap_or_else(|e| panic!("log: {e}")));
    let mut runner = Running::start(c);
    wait_for_text(&log, "ran here", 20);
    let period = ten_year_period();
    let v = inspect_json(url, &job);
    assert_eq!(v["kind"], "periodic-job", "{v:#}");
    assert_eq!(v["job"]["last_run"], period, "{v:#}");
    assert_eq!(
        v["job"]["started"], period,
        "--on-crash skip marks it started: {v:#}"
    );
    assert_eq!(
        inspect_table(url, &job, &[])[0],
        format!("{job}: run-once job: last run period {period}, last started period {period}, not running now")
    );
    assert_eq!(code(runner.signal_and_wait(Signal::SIGTERM, 20)), Some(143));

    // Nothing there.
    let nothing = unique("nothing");
    let v = inspect_json(url, &nothing);
    assert_eq!(v["kind"], "missing", "{v:#}");
    assert_eq!(
        inspect_table(url, &nothing, &[])[0],
        format!("{nothing}: nothing here")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

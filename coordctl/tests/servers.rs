//! The real coordctl binary against real ZooKeeper, etcd and Redis servers
//! (COORD_TEST_ZK, COORD_TEST_ETCD, COORD_TEST_REDIS, as scripts/test-all
//! sets them). Each test runs on each backend; none skips: an unset or
//! unreachable server fails the test.

mod common;

use std::time::{Duration, Instant};

use common::*;
use nix::sys::signal::Signal;

/// The binary was built with every backend (see coordctl's Cargo.toml).
#[test]
fn binary_has_every_backend() {
    let out = run(coordctl("mem://", &["--version"]), 10);
    let version = stdout(&out);
    for b in ["mem", "zk", "etcd", "redis"] {
        assert!(version.contains(b), "{b} missing from {version:?}");
    }
}

/// 8 concurrent `coordctl lock` processes: the command runs in one of them
/// at a time (its start and end timestamps never interleave with
/// another's), and the fencing tokens increase in the order they held it.
fn locks_never_overlap_and_tokens_increase(url: &str) {
    const N: usize = 8;
    let path = unique("lock");
    let dir = temp_dir();
    // Inside the lock: record start time and token, work, record end time.
    let script =
        r#"s=$(date +%s%N); sleep 0.15; e=$(date +%s%N); echo "$s $e $COORD_FENCING_TOKEN" > "$1""#;
    let children: Vec<_> = (0..N)
        .map(|i| {
            let file = dir.join(format!("holder-{i}"));
            let file = file.to_string_lossy().into_owned();
            let mut c = coordctl(
                url,
                &[
                    "lock",
                    &path,
                    "--timeout",
                    "60s",
                    "--",
                    "sh",
                    "-c",
                    script,
                    "sh",
                    &file,
                ],
            );
            c.stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            c.spawn().unwrap_or_else(|e| panic!("spawn: {e}"))
        })
        .collect();
    for child in children {
        let out = finish(child, 90);
        assert!(out.status.success(), "a lock process failed: {out:?}");
    }
    let mut held: Vec<(u128, u128, u64)> = (0..N)
        .map(|i| {
            let text = std::fs::read_to_string(dir.join(format!("holder-{i}")))
                .unwrap_or_else(|e| panic!("holder {i} wrote nothing: {e}"));
            let f: Vec<&str> = text.split_whitespace().collect();
            let num = |k: usize| f.get(k).and_then(|s| s.parse::<u128>().ok());
            match (num(0), num(1), num(2)) {
                (Some(s), Some(e), Some(t)) => (s, e, u64::try_from(t).unwrap_or(u64::MAX)),
                _ => panic!("holder {i} wrote {text:?}"),
            }
        })
        .collect();
    held.sort();
    for w in held.windows(2) {
        let ((_, end, token), (next_start, _, next_token)) = (w[0], w[1]);
        assert!(
            end <= next_start,
            "two holders overlapped: {held:?} (times in ns)"
        );
        assert!(
            next_token > token,
            "tokens did not increase in holding order: {held:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `elect` prints `leader VALUE` once elected; `leader` shows that value;
/// when the leader is stopped, the next in line takes over; with nobody
/// left, `leader` exits 1.
fn leader_shows_the_elected_value(url: &str) {
    let path = unique("election");
    let mut a = Running::start(coordctl(url, &["elect", &path, "node-a"]));
    assert_eq!(a.line(20), "leader node-a");
    let out = run(coordctl(url, &["leader", &path]), 20);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout(&out), "node-a\n");

    let mut b = Running::start(coordctl(url, &["elect", &path, "node-b"]));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        stdout(&run(coordctl(url, &["leader", &path]), 20)),
        "node-a\n"
    );

    // SIGTERM: node-a resigns (and exits 143); node-b takes over.
    assert_eq!(code(a.signal_and_wait(Signal::SIGTERM, 20)), Some(143));
    assert_eq!(b.line(20), "leader node-b");
    assert_eq!(
        stdout(&run(coordctl(url, &["leader", &path]), 20)),
        "node-b\n"
    );

    assert_eq!(code(b.signal_and_wait(Signal::SIGINT, 20)), Some(130));
    let out = run(coordctl(url, &["leader", &path]), 20);
    assert_eq!(code(out.status), Some(1), "{out:?}");
    assert!(stderr(&out).contains("no leader"), "{out:?}");
}

/// A `lock` holder killed with SIGKILL cannot release: the lock passes on
/// once the server ends its session, after the session timeout (2 s).
fn killed_holder_hands_the_lock_on(url: &str) {
    let path = unique("lock");
    let dir = temp_dir();
    let pidfile = dir.join("pid");
    let pidfile_s = pidfile.to_string_lossy().into_owned();
    let mut holder = Running::start(coordctl(
        url,
        &[
            "--session-timeout",
            "2s",
            "lock",
            &path,
            "--",
            "sh",
            "-c",
            r#"echo $$ > "$1"; exec sleep 60"#,
            "sh",
            &pidfile_s,
        ],
    ));
    let cmd_pid = wait_for_file(&pidfile, 20);
    let killed = Instant::now();
    assert_eq!(
        holder.signal_and_wait(Signal::SIGKILL, 10).code(),
        None,
        "the holder was not killed"
    );
    // The orphaned command must not outlive the test.
    if let Ok(pid) = cmd_pid.trim().parse::<i32>() {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
    }
    let out = run(
        coordctl(url, &["lock", &path, "--timeout", "30s", "--", "true"]),
        40,
    );
    let waited = killed.elapsed();
    assert!(out.status.success(), "the lock was not handed on: {out:?}");
    assert!(
        waited >= Duration::from_millis(500),
        "the lock passed on after {waited:?}: before the session timeout, so it was not held"
    );
    assert!(
        waited < Duration::from_secs(20),
        "the lock passed on only after {waited:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A command for `coordctl lock … -- CMD` that says when it runs (it
/// writes `ready`) and when it gets SIGTERM (it writes `term` to `termed`
/// and exits 0), in a temp dir of its own.
struct Trapped {
    dir: std::path::PathBuf,
    ready: std::path::PathBuf,
    termed: std::path::PathBuf,
}

impl Trapped {
    fn new() -> Self {
        let dir = temp_dir();
        Trapped {
            ready: dir.join("ready"),
            termed: dir.join("termed"),
            dir,
        }
    }

    /// Start `coordctl --url url ARGS… -- CMD` with piped output.
    fn spawn(&self, url: &str, args: &[&str]) -> std::process::Child {
        let (ready, termed) = (
            self.ready.to_string_lossy().into_owned(),
            self.termed.to_string_lossy().into_owned(),
        );
        let mut all: Vec<&str> = args.to_vec();
        all.extend([
            "--",
            "sh",
            "-c",
            r#"trap 'echo term > "$2"; exit 0' TERM; echo ready > "$1"; while true; do sleep 0.05; done"#,
            "sh",
            &ready,
            &termed,
        ]);
        let mut c = coordctl(url, &all);
        c.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        c.spawn().unwrap_or_else(|e| panic!("spawn: {e}"))
    }
}

/// The next in line for the lock at `path` (`lock PATH KIND… -- …`, KIND
/// e.g. `--write`, or nothing for the plain lock): its command succeeds
/// only if the holder's command had been stopped (`termed` exists) by the
/// time it runs.
fn next_in_line(
    url: &str,
    path: &str,
    kind: &[&str],
    termed: &std::path::Path,
) -> std::process::Child {
    let termed = termed.to_string_lossy().into_owned();
    let mut args = vec!["lock", path];
    args.extend_from_slice(kind);
    args.extend([
        "--timeout",
        "60s",
        "--",
        "sh",
        "-c",
        r#"test -e "$1""#,
        "sh",
        &termed,
    ]);
    let mut c = coordctl(url, &args);
    c.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    c.spawn().unwrap_or_else(|e| panic!("spawn: {e}"))
}

/// A lock deleted under a running command: the command gets SIGTERM and
/// coordctl exits 4 with a message.
fn lost_lock_stops_the_command(url: &str) {
    let path = unique("lock");
    let trapped = Trapped::new();
    let (dir, ready, termed) = (
        trapped.dir.clone(),
        trapped.ready.clone(),
        trapped.termed.clone(),
    );
    let holder = trapped.spawn(url, &["lock", &path]);
    wait_for_file(&ready, 20);
    // Someone deletes the holder's node (an operator, a stale-lock reaper).
    assert_eq!(delete_children(url, &path), 1);
    let out = finish(holder, 30);
    assert_eq!(code(out.status), Some(4), "{out:?}");
    assert!(stderr(&out).contains("lost the lock"), "{out:?}");
    assert_eq!(wait_for_file(&termed, 5), "term\n");
    let _ = std::fs::remove_dir_all(&dir);

    // The same for a leader without a command: it exits 4.
    let election = unique("election");
    let mut leader = Running::start(coordctl(url, &["elect", &election, "node-a"]));
    assert_eq!(leader.line(20), "leader node-a");
    assert_eq!(delete_children(url, &election), 1);
    assert_eq!(code(leader.wait(20)), Some(4));
}

/// SIGINT/SIGTERM release everything before exit: a waiter interrupted in
/// line leaves no node behind; a holder whose command ends on SIGTERM
/// exits with the command's status and frees the lock at once (not after
/// its session timeout).
fn signals_release_everything(url: &str) {
    let path = unique("lock");
    let dir = temp_dir();
    let ready = dir.join("ready");
    let ready_s = ready.to_string_lossy().into_owned();
    let mut holder = Running::start(coordctl(
        url,
        &[
            "lock",
            &path,
            "--",
            "sh",
            "-c",
            r#"trap 'exit 9' TERM; echo ready > "$1"; while true; do sleep 0.05; done"#,
            "sh",
            &ready_s,
        ],
    ));
    wait_for_file(&ready, 20);
    let mut waiter = Running::start(coordctl(url, &["lock", &path, "--", "true"]));
    let queued = Instant::now() + Duration::from_secs(20);
    while children(url, &path).len() < 2 {
        assert!(Instant::now() < queued, "the waiter never queued");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(code(waiter.signal_and_wait(Signal::SIGINT, 20)), Some(130));
    assert_eq!(children(url, &path).len(), 1, "the waiter left its node");

    assert_eq!(code(holder.signal_and_wait(Signal::SIGTERM, 20)), Some(9));
    let start = Instant::now();
    let out = run(
        coordctl(url, &["lock", &path, "--timeout", "5s", "--", "true"]),
        20,
    );
    assert!(out.status.success(), "{out:?}");
    assert!(start.elapsed() < Duration::from_secs(5));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Three `run-once` instances with a 1 s period: each period's command
/// runs at most once, and periods keep running.
fn run_once_runs_each_period_at_most_once(url: &str) {
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

/// `members --watch` and `leader --watch` print changes as they happen.
fn watches_print_changes(url: &str) {
    let g = unique("group");
    let mut watch = Running::start(coordctl(url, &["members", &g, "--watch"]));
    let mut member = Running::start(coordctl(url, &["join", &g, "host-1"]));
    assert!(member.line(20).starts_with("joined "));
    assert_eq!(watch.line(20), "+ host-1");
    assert_eq!(code(member.signal_and_wait(Signal::SIGTERM, 20)), Some(143));
    assert_eq!(watch.line(20), "- host-1");
    assert_eq!(code(watch.signal_and_wait(Signal::SIGINT, 20)), Some(130));

    // `leader --watch` says `no leader` at the start and whenever the
    // last candidate leaves, and each new leader's value.
    let e = unique("election");
    let mut watch = Running::start(coordctl(url, &["leader", &e, "--watch"]));
    assert_eq!(watch.line(20), "no leader");
    let mut a = Running::start(coordctl(url, &["elect", &e, "node-a"]));
    assert_eq!(a.line(20), "leader node-a");
    assert_eq!(watch.line(20), "node-a");
    let mut b = Running::start(coordctl(url, &["elect", &e, "node-b"]));
    wait_for_entries(url, &e, 2);
    assert_eq!(code(a.signal_and_wait(Signal::SIGTERM, 20)), Some(143));
    assert_eq!(b.line(20), "leader node-b");
    assert_eq!(watch.line(20), "node-b");
    assert_eq!(code(b.signal_and_wait(Signal::SIGTERM, 20)), Some(143));
    assert_eq!(watch.line(20), "no leader");
    let mut c = Running::start(coordctl(url, &["elect", &e, "node-c"]));
    assert_eq!(c.line(20), "leader node-c");
    assert_eq!(watch.line(20), "node-c");
    assert_eq!(code(c.signal_and_wait(Signal::SIGTERM, 20)), Some(143));
    assert_eq!(watch.line(20), "no leader");
    assert_eq!(code(watch.signal_and_wait(Signal::SIGINT, 20)), Some(130));
}

/// `coordctl inspect PATH --json`, parsed, once it lists `n` entries
/// (polled, within 20 s).
fn wait_for_entries(url: &str, path: &str, n: usize) -> serde_json::Value {
    wait_for_inspection(url, path, &format!("{n} entries"), |v| {
        v["entries"].as_array().map_or(0, Vec::len) == n
    })
}

/// `coordctl inspect PATH --json`, parsed, once `ok` holds for it (polled,
/// within 20 s).
fn wait_for_inspection(
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
fn inspect_json(url: &str, path: &str) -> serde_json::Value {
    let out = run(coordctl(url, &["inspect", path, "--json"]), 20);
    assert_eq!(code(out.status), Some(0), "{out:?}");
    assert!(!stderr(&out).contains("mem://"), "{out:?}");
    serde_json::from_str(stdout(&out).trim_end())
        .unwrap_or_else(|e| panic!("inspect --json printed no JSON ({e}): {out:?}"))
}

/// `coordctl inspect PATH` (the table): its stdout lines.
fn inspect_table(url: &str, path: &str, args: &[&str]) -> Vec<String> {
    let mut all = vec!["inspect", path];
    all.extend_from_slice(args);
    let out = run(coordctl(url, &all), 20);
    assert_eq!(code(out.status), Some(0), "{out:?}");
    stdout(&out).lines().map(str::to_owned).collect()
}

/// The (role, data) of each entry of an inspection.
fn roles_and_data(v: &serde_json::Value) -> Vec<(String, String)> {
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
fn inspect_reports_what_lives_there(url: &str) {
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

/// The index of the current 3650-day period (`run-once --every 3650d`),
/// which does not change while a test runs (the next starts in 2030).
fn ten_year_period() -> u64 {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    secs / (3650 * 86_400)
}

/// Wait until the file at `path` contains `needle` (within `secs`); its
/// content.
fn wait_for_text(path: &std::path::Path, needle: &str, secs: u64) -> String {
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
fn run_once(
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
fn runs(dir: &std::path::Path) -> Vec<String> {
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
fn run_once_on_crash_skip_and_retry(url: &str) {
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

/// `lock --shared` holders run together and keep an exclusive one out.
fn shared_holders_share(url: &str) {
    let path = unique("rwlock");
    let dir = temp_dir();
    let release = dir.join("release");
    let release_s = release.to_string_lossy().into_owned();
    let mut reader = Running::start(coordctl(
        url,
        &[
            "lock",
            &path,
            "--shared",
            "--",
            "sh",
            "-c",
            r#"echo in; while [ ! -e "$1" ]; do sleep 0.05; done"#,
            "sh",
            &release_s,
        ],
    ));
    assert_eq!(reader.line(20), "in");
    let out = run(
        coordctl(
            url,
            &["lock", &path, "--shared", "--timeout", "5s", "--", "true"],
        ),
        20,
    );
    assert!(
        out.status.success(),
        "a second reader was kept out: {out:?}"
    );
    let out = run(
        coordctl(url, &["lock", &path, "--timeout", "500ms", "--", "true"]),
        20,
    );
    assert_eq!(code(out.status), Some(3), "a writer got in: {out:?}");
    assert!(stderr(&out).contains("timed out"), "{out:?}");
    std::fs::write(&release, "").unwrap_or_else(|e| panic!("release: {e}"));
    assert_eq!(code(reader.wait(20)), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Send `sig` to `child` (not reaped yet, so the pid is still its).
fn signal(child: &std::process::Child, sig: Signal) {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    nix::sys::signal::kill(pid, sig).unwrap_or_else(|e| panic!("kill: {e}"));
}

/// `lock PATH KIND… --timeout 500ms -- true` gives up (exit 3): the hold
/// at PATH keeps it out.
fn kept_out(url: &str, path: &str, kind: &[&str], holder: &str) {
    let mut args = vec!["lock", path];
    args.extend_from_slice(kind);
    args.extend(["--timeout", "500ms", "--", "true"]);
    let out = run(coordctl(url, &args), 20);
    assert_eq!(
        code(out.status),
        Some(3),
        "{kind:?} got past {holder}: {out:?}"
    );
    assert!(stderr(&out).contains("timed out"), "{out:?}");
}

/// `lock --write` is the write half of the read/write lock: it keeps
/// `--shared` holders and other `--write` holders out, and they, queued
/// behind it, run only once its command has ended. A `--shared` holder
/// keeps a `--write` one out the same way.
fn write_excludes_shared_and_write(url: &str) {
    let path = unique("rwlock");
    let trapped = Trapped::new();
    let writer = trapped.spawn(url, &["lock", &path, "--write"]);
    wait_for_file(&trapped.ready, 20);
    kept_out(url, &path, &["--shared"], "a writer");
    kept_out(url, &path, &["--write"], "a writer");
    // Queued behind the writer: they may run only once its command ended.
    let next_writer = next_in_line(url, &path, &["--write"], &trapped.termed);
    let next_reader = next_in_line(url, &path, &["--shared"], &trapped.termed);
    let lines = participants_once(url, &path, &["--kind", "rwlock"], 3);
    let states: Vec<String> = lines.iter().map(|l| fields(l).0).collect();
    assert_eq!(states, ["holding", "waiting", "waiting"], "{lines:?}");
    // Writers are named as Curator's are (what its readers look for), not
    // as the plain lock's nodes; coord's own readers would be kept out by
    // either. The two waiters queued in either order.
    let halves: Vec<bool> = lines
        .iter()
        .map(|l| {
            let node = fields(l).1;
            assert!(
                node.contains("-__WRIT__") || node.contains("-__READ__"),
                "{lines:?}"
            );
            node.contains("-__WRIT__")
        })
        .collect();
    assert!(halves[0], "the holder is not a writer: {lines:?}");
    assert_eq!(
        halves.iter().filter(|w| **w).count(),
        2,
        "not one writer waiting and one reader: {lines:?}"
    );
    // SIGTERM is passed to the command, which says so and exits 0.
    signal(&writer, Signal::SIGTERM);
    let out = finish(writer, 30);
    assert_eq!(code(out.status), Some(0), "{out:?}");
    assert_eq!(wait_for_file(&trapped.termed, 5), "term\n");
    for next in [next_writer, next_reader] {
        let out = finish(next, 30);
        assert!(
            out.status.success(),
            "ran before the writer's command had ended: {out:?}"
        );
    }
    assert!(participants_once(url, &path, &["--kind", "rwlock"], 0).is_empty());
    let _ = std::fs::remove_dir_all(&trapped.dir);

    // A reader keeps a writer out; the writer runs once it has ended.
    let trapped = Trapped::new();
    let reader = trapped.spawn(url, &["lock", &path, "--shared"]);
    wait_for_file(&trapped.ready, 20);
    kept_out(url, &path, &["--write"], "a reader");
    let next_writer = next_in_line(url, &path, &["--write"], &trapped.termed);
    participants_once(url, &path, &["--kind", "rwlock"], 2);
    signal(&reader, Signal::SIGTERM);
    assert_eq!(code(finish(reader, 30).status), Some(0));
    let out = finish(next_writer, 30);
    assert!(
        out.status.success(),
        "the writer ran before the reader's command had ended: {out:?}"
    );
    let _ = std::fs::remove_dir_all(&trapped.dir);
}

/// `lock --leases 2`: two holders run their commands at once; a third
/// waits (or gives up, with --timeout) until one of them has ended.
fn leases_let_n_run_at_once(url: &str) {
    let path = unique("semaphore");
    let listed = ["--kind", "semaphore", "--max-leases", "2"];
    let (a, b) = (Trapped::new(), Trapped::new());
    let holder_a = a.spawn(url, &["lock", &path, "--leases", "2"]);
    let holder_b = b.spawn(url, &["lock", &path, "--leases", "2"]);
    // Both commands run, at the same time.
    wait_for_file(&a.ready, 20);
    wait_for_file(&b.ready, 20);
    let lines = participants_once(url, &path, &listed, 2);
    let states: Vec<String> = lines.iter().map(|l| fields(l).0).collect();
    assert_eq!(states, ["holding", "holding"], "{lines:?}");
    for l in &lines {
        assert!(
            fields(l).1.starts_with(&format!("{path}/leases/")),
            "{lines:?}"
        );
    }

    let out = run(
        coordctl(
            url,
            &[
                "lock",
                &path,
                "--leases",
                "2",
                "--timeout",
                "500ms",
                "--",
                "true",
            ],
        ),
        20,
    );
    assert_eq!(code(out.status), Some(3), "a third got a lease: {out:?}");
    assert!(
        stderr(&out).contains("waiting for a lease of the semaphore"),
        "{out:?}"
    );

    // The third may run only once A's command has ended.
    let third = next_in_line(url, &path, &["--leases", "2"], &a.termed);
    let lines = participants_once(url, &path, &listed, 3);
    let states: Vec<String> = lines.iter().map(|l| fields(l).0).collect();
    assert_eq!(states, ["holding", "holding", "waiting"], "{lines:?}");
    signal(&holder_a, Signal::SIGTERM);
    assert_eq!(code(finish(holder_a, 30).status), Some(0));
    assert_eq!(wait_for_file(&a.termed, 5), "term\n");
    let out = finish(third, 30);
    assert!(
        out.status.success(),
        "the third ran before a holder's command had ended: {out:?}"
    );
    // B held throughout.
    assert!(!b.termed.exists(), "B's command was stopped");
    participants_once(url, &path, &listed, 1);
    signal(&holder_b, Signal::SIGTERM);
    assert_eq!(code(finish(holder_b, 30).status), Some(0));
    assert!(participants_once(url, &path, &listed, 0).is_empty());
    let _ = std::fs::remove_dir_all(&a.dir);
    let _ = std::fs::remove_dir_all(&b.dir);
}

/// `queue` and `join`/`members` across processes.
fn queue_and_members(url: &str) {
    let q = unique("queue");
    let out = run(coordctl(url, &["queue", "push", &q, "a", "b"]), 20);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        stdout(&run(coordctl(url, &["queue", "len", &q]), 20)),
        "2\n"
    );
    assert_eq!(
        stdout(&run(coordctl(url, &["queue", "pop", &q]), 20)),
        "a\n"
    );
    let out = run(coordctl(url, &["queue", "pop", &q, "--timeout", "1s"]), 20);
    assert_eq!(stdout(&out), "b\n");
    let out = run(
        coordctl(url, &["queue", "pop", &q, "--timeout", "200ms"]),
        20,
    );
    assert_eq!(code(out.status), Some(3), "{out:?}");

    let g = unique("group");
    let mut member = Running::start(coordctl(url, &["join", &g, "10.0.0.7:8080"]));
    assert!(member.line(20).starts_with("joined "));
    assert_eq!(
        stdout(&run(coordctl(url, &["members", &g]), 20)),
        "10.0.0.7:8080\n"
    );
    assert_eq!(code(member.signal_and_wait(Signal::SIGTERM, 20)), Some(143));
    assert_eq!(stdout(&run(coordctl(url, &["members", &g]), 20)), "");
}

/// The data of the items in the queue at `q` (leased ones included), read
/// with the library: `items/` under the queue's path.
fn queue_items(url: &str, q: &str) -> Vec<String> {
    let dir = coordination::path::join(q, "items");
    with_session(url, async |s| {
        let nodes = match s.children(&dir).await {
            Ok(c) => c,
            Err(coordination::Error::NotFound { .. }) => Vec::new(),
            Err(e) => panic!("children of {dir}: {e}"),
        };
        let mut out = Vec::new();
        for c in nodes {
            let item = coordination::path::join(&dir, &c.name);
            match s.get(&item).await {
                Ok(Some(n)) => out.push(String::from_utf8_lossy(&n.data).into_owned()),
                Ok(None) => {}
                Err(e) => panic!("get {item}: {e}"),
            }
        }
        out
    })
}

/// How one interrupted `queue pop` ended.
#[derive(Debug, Default)]
struct Tally {
    /// Printed its item and exited 0 (the signal came too late to matter,
    /// or while the item was being acknowledged).
    printed: usize,
    /// Exited 130/143: the signal stopped the take.
    interrupted: usize,
    /// Killed by the signal before coordctl took signals over.
    killed: usize,
}

/// 60 items; 60 `queue pop` processes, four at a time, each sent SIGINT or
/// SIGTERM (alternately) at a random moment 0–300 ms after it started
/// (half of them within the time a pop takes here, so that many land
/// mid-take).
/// Every item is printed at most once, and every item not printed is still
/// in the queue, with no lease left on it once the processes are gone;
/// after draining, every item was printed exactly once.
fn interrupted_pops_lose_nothing(url: &str) {
    const ITEMS: usize = 60;
    const AT_ONCE: usize = 4;
    let seed = Rng::seed();
    let mut rng = Rng(seed);
    let ctx = format!("seed {seed} (rerun with COORD_TEST_SEED={seed})");
    let started = Instant::now();
    let q = unique("queue");
    let items: Vec<String> = (0..ITEMS).map(|i| format!("item-{i:02}")).collect();
    let mut push = vec!["queue", "push", q.as_str()];
    push.extend(items.iter().map(String::as_str));
    let out = run(coordctl(url, &push), 30);
    assert!(out.status.success(), "push: {out:?}");

    // How long a short coordctl run takes here (start, connect, one
    // request, close): half the signals land within 1.5 times that, where
    // a pop is busy, the other half anywhere in 0–300 ms.
    let typical = (0..3)
        .map(|_| {
            let t = Instant::now();
            let out = run(coordctl(url, &["queue", "len", &q]), 30);
            assert!(out.status.success(), "len: {out:?}");
            t.elapsed()
        })
        .max()
        .unwrap_or_default();
    let busy_ms = u64::try_from(typical.as_millis() * 3 / 2)
        .unwrap_or(300)
        .clamp(1, 300);

    let mut printed: Vec<String> = Vec::new();
    let mut tally = Tally::default();
    for wave in 0..ITEMS / AT_ONCE {
        let mut procs = Vec::new();
        for i in 0..AT_ONCE {
            let n = wave * AT_ONCE + i;
            let sig = if n.is_multiple_of(2) {
                Signal::SIGINT
            } else {
                Signal::SIGTERM
            };
            let window = if rng.below(2) == 0 { busy_ms } else { 300 };
            let delay = Duration::from_millis(rng.below(window));
            let mut c = coordctl(url, &["queue", "pop", &q]);
            c.stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            let child = c.spawn().unwrap_or_else(|e| panic!("spawn: {e}"));
            procs.push((Instant::now() + delay, sig, delay, child));
        }
        let mut order: Vec<usize> = (0..procs.len()).collect();
        order.sort_by_key(|&i| procs[i].0);
        for i in order {
            let (at, sig, _, child) = &procs[i];
            std::thread::sleep(at.saturating_duration_since(Instant::now()));
            // Not reaped yet, so the pid is still this child's.
            let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
            let _ = nix::sys::signal::kill(pid, *sig);
        }
        for (_, sig, delay, child) in procs {
            let out = finish(child, 30);
            let text = stdout(&out);
            let lines: Vec<&str> = text.lines().collect();
            let what = format!(
                "{ctx}: a pop sent {sig:?} after {delay:?} printed {lines:?} and ended with {:?}; stderr: {}",
                out.status,
                stderr(&out)
            );
            use std::os::unix::process::ExitStatusExt;
            match (lines.as_slice(), out.status.code(), out.status.signal()) {
                ([item], Some(0), _) => {
                    tally.printed += 1;
                    printed.push((*item).to_owned());
                }
                ([], Some(130 | 143), _) => tally.interrupted += 1,
                ([], None, Some(s)) if s == sig as i32 => tally.killed += 1,
                _ => panic!("{what}"),
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    for item in &printed {
        assert!(
            seen.insert(item.clone()),
            "{ctx}: {item} was printed twice: {printed:?}"
        );
    }
    // Every process has exited, having closed its session: no lease is
    // left, and what was not printed is in the queue.
    let claims = children(url, &coordination::path::join(&q, "claims"));
    assert!(claims.is_empty(), "{ctx}: leases left behind: {claims:?}");
    let left = queue_items(url, &q);
    for item in &items {
        let p = seen.contains(item);
        let l = left.iter().filter(|x| *x == item).count();
        assert!(
            (p && l == 0) || (!p && l == 1),
            "{ctx}: {item}: printed {p}, {l} times in the queue; printed {printed:?}, left {left:?}"
        );
    }
    assert_eq!(left.len() + printed.len(), ITEMS, "{ctx}: left {left:?}");
    let interrupted_phase = started.elapsed();

    // Drain: every item left is printed once, then the queue is empty.
    let mut drained = Vec::new();
    loop {
        let out = run(coordctl(url, &["queue", "pop", &q, "--timeout", "0s"]), 30);
        match out.status.code() {
            Some(0) => drained.push(stdout(&out).trim_end_matches('\n').to_owned()),
            Some(3) => break,
            _ => panic!("{ctx}: draining: {out:?}"),
        }
        assert!(
            drained.len() <= ITEMS,
            "{ctx}: drained too much: {drained:?}"
        );
    }
    let mut all: Vec<String> = printed.iter().chain(&drained).cloned().collect();
    all.sort();
    assert_eq!(
        all, items,
        "{ctx}: printed {printed:?}, drained {drained:?}"
    );
    assert_eq!(
        stdout(&run(coordctl(url, &["queue", "len", &q]), 20)),
        "0\n"
    );
    eprintln!(
        "interrupted pops on {url}: {ctx}: a short run takes {typical:?}; {tally:?}; \
         {} printed while interrupted, {} left and drained; {interrupted_phase:?} for the pops, {:?} in all",
        printed.len(),
        drained.len(),
        started.elapsed()
    );
}

/// `queue pop` whose stdout cannot take the item (`/dev/full`, a pipe
/// nobody reads): it exits non-zero saying so, and the item stays in the
/// queue.
fn pop_to_a_broken_stdout_keeps_the_item(url: &str) {
    let q = unique("queue");
    let out = run(coordctl(url, &["queue", "push", &q, "only"]), 20);
    assert!(out.status.success(), "{out:?}");

    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap_or_else(|e| panic!("/dev/full: {e}"));
    let mut c = coordctl(url, &["queue", "pop", &q]);
    c.stdout(full).stderr(std::process::Stdio::piped());
    let out = finish(c.spawn().unwrap_or_else(|e| panic!("spawn: {e}")), 30);
    assert_eq!(code(out.status), Some(5), "{out:?}");
    let err = stderr(&out);
    assert!(err.contains("cannot write the item to stdout"), "{err}");
    assert!(err.contains("given back"), "{err}");
    assert_eq!(queue_items(url, &q), ["only"]);
    assert!(children(url, &coordination::path::join(&q, "claims")).is_empty());

    // A pipe whose reader is gone.
    let mut c = coordctl(url, &["queue", "pop", &q]);
    c.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap_or_else(|e| panic!("spawn: {e}"));
    drop(child.stdout.take());
    let out = finish(child, 30);
    assert_eq!(code(out.status), Some(5), "{out:?}");
    assert!(stderr(&out).contains("given back"), "{out:?}");

    let out = run(coordctl(url, &["queue", "pop", &q, "--timeout", "5s"]), 20);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout(&out), "only\n");
    assert_eq!(
        stdout(&run(coordctl(url, &["queue", "len", &q]), 20)),
        "0\n"
    );
}

/// A lock holder cut off from the server (a partition: the connection
/// stays open, nothing gets through): once its session's lease deadline
/// passes, the lock counts as lost on the client, before the server can
/// give it to anyone else: CMD gets SIGTERM (before the next holder's CMD
/// starts) and coordctl exits 4. The same for a leader without CMD.
fn cut_off_holder_stops_its_command(url: &str) {
    let proxy = Blackhole::start(&host_port(url));
    let cut_url = via(url, &proxy.addr);
    let path = unique("lock");
    let trapped = Trapped::new();
    let (dir, ready, termed) = (
        trapped.dir.clone(),
        trapped.ready.clone(),
        trapped.termed.clone(),
    );
    let holder = trapped.spawn(&cut_url, &["--session-timeout", "2s", "lock", &path]);
    let leader = Running::start(coordctl(
        &cut_url,
        &[
            "--session-timeout",
            "2s",
            "elect",
            &unique("election"),
            "node-a",
        ],
    ));
    wait_for_file(&ready, 20);
    assert_eq!(leader.line(20), "leader node-a");
    // Next in line, connected directly: when it gets the lock, the cut-off
    // holder's command must have been stopped already.
    let next = next_in_line(url, &path, &[], &termed);
    let queued = Instant::now() + Duration::from_secs(20);
    while children(url, &path).len() < 2 {
        assert!(Instant::now() < queued, "the next holder never queued");
        std::thread::sleep(Duration::from_millis(50));
    }
    let cut = Instant::now();
    proxy.cut();
    let out = finish(next, 60);
    assert!(
        out.status.success(),
        "the lock passed on before the cut-off holder's command was stopped: {out:?}"
    );
    let out = finish(holder, 40);
    assert_eq!(code(out.status), Some(4), "{out:?}");
    assert!(stderr(&out).contains("lost the lock"), "{out:?}");
    assert_eq!(wait_for_file(&termed, 5), "term\n");
    let mut leader = leader;
    assert_eq!(code(leader.wait(40)), Some(4));
    eprintln!(
        "cut off on {url}: both ended {:?} after the cut",
        cut.elapsed()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `elect` and `join` with a command: the command gets its environment
/// (COORD_FENCING_TOKEN, COORD_MEMBER) and its status is passed on; when
/// the leadership or membership is deleted under it, it gets SIGTERM and
/// coordctl exits 4 once it has ended.
fn lost_leadership_and_membership_stop_the_command(url: &str) {
    let election = unique("election");
    let out = run(
        coordctl(
            url,
            &[
                "elect",
                &election,
                "node-a",
                "--",
                "sh",
                "-c",
                "echo token=$COORD_FENCING_TOKEN; exit 5",
            ],
        ),
        20,
    );
    assert_eq!(code(out.status), Some(5), "{out:?}");
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.first(), Some(&"leader node-a"), "{out:?}");
    assert!(
        lines
            .get(1)
            .and_then(|l| l.strip_prefix("token="))
            .is_some_and(|t| t.parse::<u64>().is_ok()),
        "{out:?}"
    );
    let group = unique("group");
    let out = run(
        coordctl(
            url,
            &[
                "join",
                &group,
                "host-1",
                "--",
                "sh",
                "-c",
                "echo member=$COORD_MEMBER",
            ],
        ),
        20,
    );
    assert!(out.status.success(), "{out:?}");
    let name = joined_name(&out);
    assert!(
        stdout(&out).contains(&format!("member={name}\n")),
        "{out:?}"
    );

    for (args, says) in [
        (
            vec!["elect", election.as_str(), "node-b"],
            "lost leadership",
        ),
        (vec!["join", group.as_str(), "host-2"], "lost membership"),
    ] {
        let path = args[1];
        let dir = temp_dir();
        let termed = dir.join("termed");
        let termed_s = termed.to_string_lossy().into_owned();
        let mut all = args.clone();
        all.extend(["--", "sh", "-c", TRAPS_TERM, "sh", &termed_s]);
        let mut c = coordctl(url, &all);
        c.stderr(std::process::Stdio::piped());
        let mut holder = Running::start(c);
        assert!(!holder.line(20).is_empty());
        assert_eq!(holder.line(20), "ready");
        assert_eq!(delete_children(url, path), 1, "{args:?}");
        assert_eq!(code(holder.wait(30)), Some(4), "{args:?}");
        assert_eq!(wait_for_file(&termed, 5), "term\n", "{args:?}");
        let mut err = String::new();
        if let Some(mut e) = holder.child.stderr.take() {
            use std::io::Read;
            let _ = e.read_to_string(&mut err);
        }
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(err.contains("sending it SIGTERM"), "{args:?}: {err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// `coordctl participants PATH [ARGS…]`: its stdout lines, once there are
/// `n` of them (polled, within 20 s).
fn participants_once(url: &str, path: &str, args: &[&str], n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut all = vec!["participants", path];
    all.extend_from_slice(args);
    loop {
        let out = run(coordctl(url, &all), 20);
        assert_eq!(code(out.status), Some(0), "{all:?}: {out:?}");
        let lines: Vec<String> = stdout(&out).lines().map(str::to_owned).collect();
        if lines.len() == n {
            return lines;
        }
        assert!(
            Instant::now() < deadline,
            "{all:?} never listed {n}: {lines:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A `participants` text line's fields: state, node, stamp, since, data.
fn fields(line: &str) -> (String, String, u64, String, String) {
    let f: Vec<&str> = line.splitn(5, ' ').collect();
    match f.as_slice() {
        [state, node, stamp, since, data] => (
            (*state).to_owned(),
            (*node).to_owned(),
            stamp
                .parse()
                .unwrap_or_else(|e| panic!("stamp in {line:?}: {e}")),
            (*since).to_owned(),
            (*data).to_owned(),
        ),
        _ => panic!("not a participants line: {line:?}"),
    }
}

/// Whether `since` is as the backend at `url` keeps it: RFC 3339 UTC to
/// the millisecond, or `-` on etcd (no time per key).
fn since_ok(url: &str, since: &str) -> bool {
    if url.starts_with("etcd://") {
        return since == "-";
    }
    let b = since.as_bytes();
    b.len() == 24
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'.'
        && since.ends_with('Z')
        && since.starts_with("20")
}

/// `participants` lists a `lock` holder, then a waiter, in queue order,
/// in text and in JSON; then nobody once both are gone. The same for an
/// election's leader, a semaphore's lease, and data that would mess up a
/// terminal.
fn participants_lists_holder_and_waiter(url: &str) {
    let path = unique("lock");
    let dir = temp_dir();
    let release = dir.join("release");
    let release_s = release.to_string_lossy().into_owned();
    let mut holder = Running::start(coordctl(
        url,
        &[
            "lock",
            &path,
            "--",
            "sh",
            "-c",
            r#"echo in; while [ ! -e "$1" ]; do sleep 0.05; done"#,
            "sh",
            &release_s,
        ],
    ));
    assert_eq!(holder.line(20), "in");
    let mut waiter = Running::start(coordctl(
        url,
        &["lock", &path, "--", "sh", "-c", "echo waiter-in"],
    ));
    let lines = participants_once(url, &path, &[], 2);
    let (s0, n0, t0, since0, d0) = fields(&lines[0]);
    let (s1, n1, t1, since1, d1) = fields(&lines[1]);
    assert_eq!(
        (s0.as_str(), s1.as_str()),
        ("holding", "waiting"),
        "{lines:?}"
    );
    assert!(n0.starts_with(&format!("{path}/")), "{lines:?}");
    assert!(n1.starts_with(&format!("{path}/")) && n1 != n0, "{lines:?}");
    assert!(t0 < t1, "stamps out of queue order: {lines:?}");
    assert!(
        since_ok(url, &since0) && since_ok(url, &since1),
        "{lines:?}"
    );
    assert_eq!((d0.as_str(), d1.as_str()), (r#""""#, r#""""#), "{lines:?}");

    let json = participants_once(url, &path, &["--json"], 2);
    let since = if url.starts_with("etcd://") {
        r#""since":null,"#
    } else {
        r#""since":"20"#
    };
    for (line, (state, node, stamp)) in json
        .iter()
        .zip([("holding", &n0, t0), ("waiting", &n1, t1)])
    {
        let head = format!(r#"{{"state":"{state}","node":"{node}","stamp":{stamp},"#);
        assert!(line.starts_with(&head), "{line} does not start {head}");
        assert!(line.contains(since), "{line}");
        assert!(line.ends_with(r#""data":""}"#), "{line}");
    }

    std::fs::write(&release, "").unwrap_or_else(|e| panic!("release: {e}"));
    assert_eq!(code(holder.wait(20)), Some(0));
    assert_eq!(waiter.line(20), "waiter-in");
    assert_eq!(code(waiter.wait(20)), Some(0));
    assert!(participants_once(url, &path, &[], 0).is_empty());

    // An election: its leader holds, with its value as data.
    let election = unique("election");
    let mut leader = Running::start(coordctl(url, &["elect", &election, "node-a"]));
    assert_eq!(leader.line(20), "leader node-a");
    let lines = participants_once(url, &election, &["--kind", "election"], 1);
    let (state, _, _, _, data) = fields(&lines[0]);
    assert_eq!((state.as_str(), data.as_str()), ("holding", r#""node-a""#));
    assert_eq!(code(leader.signal_and_wait(Signal::SIGTERM, 20)), Some(143));

    // Held through the library: a semaphore lease, and a lock whose data
    // is made to clear the screen and forge a line.
    let sem = unique("semaphore");
    let evil = unique("lock");
    with_session(url, async |s| {
        let leases = coordination::Semaphore::new(s, &sem, 2)
            .and_then(|x| x.with_data("lease-1"))
            .unwrap_or_else(|e| panic!("semaphore: {e}"))
            .acquire(1)
            .await
            .unwrap_or_else(|e| panic!("lease: {e}"));
        let guard = coordination::Lock::new(s, &evil)
            .and_then(|l| l.with_data(b"\x1b[2J\"x\"\nwaiting /forged 1 - \"\"\xff"))
            .unwrap_or_else(|e| panic!("lock: {e}"))
            .acquire()
            .await
            .unwrap_or_else(|e| panic!("acquire: {e}"));
        let lines = participants_once(url, &sem, &["--kind", "semaphore", "--max-leases", "2"], 1);
        let (state, _, _, _, data) = fields(&lines[0]);
        assert_eq!((state.as_str(), data.as_str()), ("holding", r#""lease-1""#));
        let lines = participants_once(url, &evil, &[], 1);
        let (state, _, _, _, data) = fields(&lines[0]);
        assert_eq!(state, "holding");
        assert_eq!(
            data,
            "\"\\u001b[2J\\\"x\\\"\\nwaiting /forged 1 - \\\"\\\"\u{fffd}\""
        );
        let _ = guard.release().await;
        let _ = coordination::Semaphore::return_all(leases).await;
    });
    let _ = std::fs::remove_dir_all(&dir);
}

/// `revoke` asks the holder of a `lock --revocable`: its command gets
/// SIGTERM, the lock is released once the command has ended, coordctl
/// exits 6, and the next in line gets the lock. Only the holder is asked,
/// not the waiter.
fn revoke_stops_a_revocable_lock(url: &str) {
    let path = unique("lock");
    let trapped = Trapped::new();
    let (dir, ready, termed) = (
        trapped.dir.clone(),
        trapped.ready.clone(),
        trapped.termed.clone(),
    );
    let holder = trapped.spawn(url, &["lock", &path, "--revocable"]);
    wait_for_file(&ready, 20);
    // The next in line runs only once the holder's command has ended.
    let next = next_in_line(url, &path, &[], &termed);
    let lines = participants_once(url, &path, &[], 2);
    let (_, holder_node, _, _, _) = fields(&lines[0]);

    let out = run(coordctl(url, &["revoke", &path]), 20);
    assert_eq!(code(out.status), Some(0), "{out:?}");
    assert_eq!(
        stdout(&out),
        format!("{holder_node}\n"),
        "only the holder is asked"
    );

    let out = finish(holder, 30);
    assert_eq!(code(out.status), Some(6), "{out:?}");
    assert!(stderr(&out).contains("was requested"), "{out:?}");
    assert!(stderr(&out).contains("released on request"), "{out:?}");
    assert_eq!(wait_for_file(&termed, 5), "term\n");
    let out = finish(next, 30);
    assert!(
        out.status.success(),
        "the next holder ran before the revoked command had ended: {out:?}"
    );
    assert!(participants_once(url, &path, &[], 0).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A plain `lock` (no --revocable) hears the request and ignores it: its
/// command runs on until it ends by itself, and coordctl exits with the
/// command's status. With nobody holding, `revoke` exits 1.
fn revoke_is_ignored_without_revocable(url: &str) {
    let path = unique("lock");
    let out = run(coordctl(url, &["revoke", &path]), 20);
    assert_eq!(code(out.status), Some(1), "{out:?}");
    assert!(stderr(&out).contains("nobody holds"), "{out:?}");
    assert_eq!(stdout(&out), "");

    let dir = temp_dir();
    let ready = dir.join("ready");
    let release = dir.join("release");
    let (ready_s, release_s) = (
        ready.to_string_lossy().into_owned(),
        release.to_string_lossy().into_owned(),
    );
    let mut holder = Running::start(coordctl(
        url,
        &[
            "lock",
            &path,
            "--",
            "sh",
            "-c",
            r#"trap 'echo term; exit 0' TERM; echo ready > "$1"; while [ ! -e "$2" ]; do sleep 0.05; done; exit 7"#,
            "sh",
            &ready_s,
            &release_s,
        ],
    ));
    wait_for_file(&ready, 20);
    let out = run(coordctl(url, &["revoke", &path]), 20);
    assert_eq!(code(out.status), Some(0), "{out:?}");
    assert_eq!(stdout(&out).lines().count(), 1, "{out:?}");
    // The request is in the holder's node…
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let lines = participants_once(url, &path, &[], 1);
        if fields(&lines[0]).4 == r#""__REVOKE__""# {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the request never landed: {lines:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // …and nothing comes of it: a revocable holder would have stopped in
    // milliseconds.
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        matches!(holder.child.try_wait(), Ok(None)),
        "the plain lock's command was stopped"
    );
    std::fs::write(&release, "").unwrap_or_else(|e| panic!("release: {e}"));
    assert_eq!(code(holder.wait(20)), Some(7));

    let out = run(coordctl(url, &["revoke", &path]), 20);
    assert_eq!(code(out.status), Some(1), "{out:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `coordctl --url … demo` runs the demo on the server.
/// `coordctl counter`: get, set, add (negative too), concurrent adds from
/// several processes all count, watch prints changes, and a node that is
/// not a decimal integer or an overflowing add is a usage error (exit 2)
/// that writes nothing.
fn counter_commands(url: &str) {
    let c = unique("counter");
    let counter = |args: &[&str]| {
        let mut all = vec!["counter", c.as_str()];
        all.extend_from_slice(args);
        run(coordctl(url, &all), 30)
    };
    assert_eq!(stdout(&counter(&["get"])), "0\n");
    let out = counter(&["set", "41"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout(&out), "");
    assert_eq!(stdout(&counter(&["add", "1"])), "42\n");
    assert_eq!(stdout(&counter(&["add", "-50"])), "-8\n");
    assert_eq!(stdout(&counter(&["get"])), "-8\n");

    let mut watch = Running::start(coordctl(url, &["counter", &c, "watch"]));
    assert_eq!(watch.line(20), "-8");
    assert_eq!(stdout(&counter(&["add", "10"])), "2\n");
    assert_eq!(watch.line(20), "2");

    // Six processes add at once: each prints a different new value, and
    // the counter ends six higher.
    const N: i64 = 6;
    let adders: Vec<_> = (0..N)
        .map(|_| {
            let mut cmd = coordctl(url, &["counter", &c, "add", "1"]);
            cmd.stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            cmd.spawn().unwrap_or_else(|e| panic!("spawn: {e}"))
        })
        .collect();
    let mut posts: Vec<i64> = adders
        .into_iter()
        .map(|child| {
            let out = finish(child, 60);
            assert!(out.status.success(), "an add failed: {out:?}");
            stdout(&out)
                .trim()
                .parse()
                .unwrap_or_else(|e| panic!("{out:?}: {e}"))
        })
        .collect();
    posts.sort();
    assert_eq!(posts, (3..3 + N).collect::<Vec<_>>());
    assert_eq!(stdout(&counter(&["get"])), format!("{}\n", 2 + N));
    // The watcher reaches the latest value (intermediate ones may be
    // coalesced, never out of order).
    let mut last = 2;
    while last != 2 + N {
        let v: i64 = watch.line(20).parse().expect("a number");
        assert!(v > last && v <= 2 + N, "watch went from {last} to {v}");
        last = v;
    }
    assert_eq!(code(watch.signal_and_wait(Signal::SIGINT, 20)), Some(130));

    let max = i64::MAX.to_string();
    assert!(counter(&["set", &max]).status.success());
    let out = counter(&["add", "1"]);
    assert_eq!(code(out.status), Some(2), "{out:?}");
    assert!(stderr(&out).contains("overflow"), "{out:?}");
    assert_eq!(stdout(&counter(&["get"])), format!("{max}\n"));
    assert_eq!(code(counter(&["add", "one"]).status), Some(2));

    let garbage = unique("counter");
    with_session(url, async |s| {
        s.create(
            &garbage,
            b"\x00\x00\x00\x05",
            coordination::CreateMode::Persistent,
        )
        .await
        .unwrap_or_else(|e| panic!("create: {e}"))
    });
    for args in [&["get"][..], &["add", "1"]] {
        let mut all = vec!["counter", garbage.as_str()];
        all.extend_from_slice(args);
        let out = run(coordctl(url, &all), 30);
        assert_eq!(code(out.status), Some(2), "{args:?}: {out:?}");
        assert!(stderr(&out).contains("decimal"), "{out:?}");
    }
    let data = with_session(url, async |s| {
        s.get(&garbage).await.expect("get").expect("node").data
    });
    assert_eq!(data, b"\x00\x00\x00\x05", "a failed add wrote");
}

fn demo_runs(url: &str) {
    let out = run(coordctl(url, &["demo"]), 90);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("invariants held"), "{out:?}");
}

/// `coordctl watch`: prints the nodes present, `initialized`, then one
/// line per change made through the library by another session; SIGINT
/// ends it with 130.
fn watch_prints_cache_events(url: &str) {
    let root = unique("watch");
    let (a, b) = (format!("{root}/a"), format!("{root}/a/b"));
    with_session(url, async |s| {
        s.create(&a, b"one", coordination::CreateMode::Persistent)
            .await
            .unwrap_or_else(|e| panic!("create: {e}"))
    });
    let mut watch = Running::start(coordctl(url, &["watch", &root]));
    expect_initial_load(&watch, &root, &a);
    with_session(url, async |s| {
        s.create(&b, b"two", coordination::CreateMode::Persistent)
            .await
            .unwrap_or_else(|e| panic!("create: {e}"))
    });
    assert_eq!(watch.line(20), format!("added {b} two"));
    with_session(url, async |s| {
        s.set(&a, b"uno", None)
            .await
            .unwrap_or_else(|e| panic!("set: {e}"))
    });
    assert_eq!(watch.line(20), format!("updated {a} uno"));
    with_session(url, async |s| {
        s.delete(&b, None)
            .await
            .unwrap_or_else(|e| panic!("delete: {e}"))
    });
    assert_eq!(watch.line(20), format!("removed {b}"));
    assert_eq!(code(watch.signal_and_wait(Signal::SIGINT, 20)), Some(130));
}

/// `coordctl watch --children --json`: one JSON object per event, the
/// data also as exact bytes (`data_hex`, here with a byte that is not
/// UTF-8), `path` and data only where the event has them.
fn watch_json_prints_cache_events(url: &str) {
    let root = unique("watchjson");
    let a = format!("{root}/a");
    with_session(url, async |s| {
        s.create(&a, b"\xffone", coordination::CreateMode::Persistent)
            .await
            .unwrap_or_else(|e| panic!("create: {e}"))
    });
    let mut watch = Running::start(coordctl(url, &["watch", &root, "--children", "--json"]));
    let next = || -> serde_json::Value {
        let l = watch.line(20);
        serde_json::from_str(&l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))
    };
    assert_eq!(
        next(),
        serde_json::json!({"event": "added", "path": a, "data": "\u{fffd}one", "data_hex": "ff6f6e65"})
    );
    assert_eq!(next(), serde_json::json!({"event": "initialized"}));
    with_session(url, async |s| {
        s.delete(&a, None)
            .await
            .unwrap_or_else(|e| panic!("delete: {e}"))
    });
    assert_eq!(next(), serde_json::json!({"event": "removed", "path": a}));
    assert_eq!(code(watch.signal_and_wait(Signal::SIGINT, 20)), Some(130));
}

macro_rules! on_backend {
    ($backend:ident, $url:path) => {
        mod $backend {
            use super::*;

            #[test]
            fn locks_never_overlap_and_tokens_increase() {
                super::locks_never_overlap_and_tokens_increase(&$url());
            }

            #[test]
            fn leader_shows_the_elected_value() {
                super::leader_shows_the_elected_value(&$url());
            }

            #[test]
            fn killed_holder_hands_the_lock_on() {
                super::killed_holder_hands_the_lock_on(&$url());
            }

            #[test]
            fn lost_lock_stops_the_command() {
                super::lost_lock_stops_the_command(&$url());
            }

            #[test]
            fn shared_holders_share() {
                super::shared_holders_share(&$url());
            }

            #[test]
            fn write_excludes_shared_and_write() {
                super::write_excludes_shared_and_write(&$url());
            }

            #[test]
            fn leases_let_n_run_at_once() {
                super::leases_let_n_run_at_once(&$url());
            }

            #[test]
            fn queue_and_members() {
                super::queue_and_members(&$url());
            }

            #[test]
            fn signals_release_everything() {
                super::signals_release_everything(&$url());
            }

            #[test]
            fn run_once_runs_each_period_at_most_once() {
                super::run_once_runs_each_period_at_most_once(&$url());
            }

            #[test]
            fn watches_print_changes() {
                super::watches_print_changes(&$url());
            }

            #[test]
            fn interrupted_pops_lose_nothing() {
                super::interrupted_pops_lose_nothing(&$url());
            }

            #[test]
            fn pop_to_a_broken_stdout_keeps_the_item() {
                super::pop_to_a_broken_stdout_keeps_the_item(&$url());
            }

            #[test]
            fn cut_off_holder_stops_its_command() {
                super::cut_off_holder_stops_its_command(&$url());
            }

            #[test]
            fn lost_leadership_and_membership_stop_the_command() {
                super::lost_leadership_and_membership_stop_the_command(&$url());
            }

            #[test]
            fn participants_lists_holder_and_waiter() {
                super::participants_lists_holder_and_waiter(&$url());
            }

            #[test]
            fn revoke_stops_a_revocable_lock() {
                super::revoke_stops_a_revocable_lock(&$url());
            }

            #[test]
            fn revoke_is_ignored_without_revocable() {
                super::revoke_is_ignored_without_revocable(&$url());
            }

            #[test]
            fn inspect_reports_what_lives_there() {
                super::inspect_reports_what_lives_there(&$url());
            }

            #[test]
            fn run_once_on_crash_skip_and_retry() {
                super::run_once_on_crash_skip_and_retry(&$url());
            }

            #[test]
            fn counter_commands() {
                super::counter_commands(&$url());
            }

            #[test]
            fn watch_prints_cache_events() {
                super::watch_prints_cache_events(&$url());
            }

            #[test]
            fn watch_json_prints_cache_events() {
                super::watch_json_prints_cache_events(&$url());
            }

            #[test]
            fn demo_runs() {
                super::demo_runs(&$url());
            }
        }
    };
}

on_backend!(zk, common::zk_url);
on_backend!(etcd, common::etcd_url);
on_backend!(redis, common::redis_url);

//! `coordctl lock` in every form (plain, `--shared`, `--write`, `--leases`,
//! `--revocable`) against real servers: one holder at a time, hand-over after
//! a kill, a lost or cut-off hold stops the command, signals release.

use super::*;

/// 8 concurrent `coordctl lock` processes: the command runs in one of them
/// at a time (its start and end timestamps never interleave with
/// another's), and the fencing tokens increase in the order they held it.
pub(crate) fn locks_never_overlap_and_tokens_increase(url: &str) {
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

/// A `lock` holder killed with SIGKILL cannot release: the lock passes on
/// once the server ends its session, after the session timeout (2 s).
pub(crate) fn killed_holder_hands_the_lock_on(url: &str) {
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
pub(crate) struct Trapped {
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
pub(crate) fn next_in_line(
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
pub(crate) fn lost_lock_stops_the_command(url: &str) {
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
pub(crate) fn signals_release_everything(url: &str) {
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

/// `lock --shared` holders run together and keep an exclusive one out.
pub(crate) fn shared_holders_share(url: &str) {
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
pub(crate) fn signal(child: &std::process::Child, sig: Signal) {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    nix::sys::signal::kill(pid, sig).unwrap_or_else(|e| panic!("kill: {e}"));
}

/// `lock PATH KIND… --timeout 500ms -- true` gives up (exit 3): the hold
/// at PATH keeps it out.
pub(crate) fn kept_out(url: &str, path: &str, kind: &[&str], holder: &str) {
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
pub(crate) fn write_excludes_shared_and_write(url: &str) {
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
pub(crate) fn leases_let_n_run_at_once(url: &str) {
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

/// A lock holder cut off from the server (a partition: the connection
/// stays open, nothing gets through): once its session's lease deadline
/// passes, the lock counts as lost on the client, before the server can
/// give it to anyone else: CMD gets SIGTERM (before the next holder's CMD
/// starts) and coordctl exits 4. The same for a leader without CMD.
pub(crate) fn cut_off_holder_stops_its_command(url: &str) {
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

/// `revoke` asks the holder of a `lock --revocable`: its command gets
/// SIGTERM, the lock is released once the command has ended, coordctl
/// exits 6, and the next in line gets the lock. Only the holder is asked,
/// not the waiter.
pub(crate) fn revoke_stops_a_revocable_lock(url: &str) {
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
pub(crate) fn revoke_is_ignored_without_revocable(url: &str) {
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

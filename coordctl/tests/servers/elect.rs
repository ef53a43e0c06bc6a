//! `coordctl elect`, `leader` and `participants`: the elected value,
//! a lost term or membership stops the command, holders and waiters listed.

use super::*;

/// `elect` prints `leader VALUE` once elected; `leader` shows that value;
/// when the leader is stopped, the next in line takes over; with nobody
/// left, `leader` exits 1.
pub(crate) fn leader_shows_the_elected_value(url: &str) {
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

/// `elect` and `join` with a command: the command gets its environment
/// (COORD_FENCING_TOKEN, COORD_MEMBER) and its status is passed on; when
/// the leadership or membership is deleted under it, it gets SIGTERM and
/// coordctl exits 4 once it has ended.
pub(crate) fn lost_leadership_and_membership_stop_the_command(url: &str) {
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
pub(crate) fn participants_once(url: &str, path: &str, args: &[&str], n: usize) -> Vec<String> {
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
pub(crate) fn fields(line: &str) -> (String, String, u64, String, String) {
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
pub(crate) fn since_ok(url: &str, since: &str) -> bool {
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
pub(crate) fn participants_lists_holder_and_waiter(url: &str) {
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

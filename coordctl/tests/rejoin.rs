//! The real coordctl binary's commands that outlive their sessions
//! (`elect --rejoin`, `join --rejoin`, `watch`), against real ZooKeeper,
//! etcd, Redis and PostgreSQL servers (COORD_TEST_ZK, COORD_TEST_ETCD,
//! COORD_TEST_REDIS, COORD_TEST_PG, as scripts/test-all sets them), each
//! cut off from its server behind a fault proxy past its session timeout.
//! None skips: an unset or unreachable server fails the test.

mod common;

use std::time::Instant;

use common::*;
use nix::sys::signal::Signal;
/// CMD of the `elect --rejoin` test: says its token, and on SIGTERM adds
/// `term TOKEN` to the file `$1` and exits 0.
const SAYS_TOKEN: &str = r#"trap 'echo "term $COORD_FENCING_TOKEN" >> "$1"; exit 0' TERM; echo "token $COORD_FENCING_TOKEN"; while true; do sleep 0.05; done"#;

/// The token in a `token N` line.
fn token_of(line: &str) -> u64 {
    line.strip_prefix("token ")
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("not a `token N` line: {line:?}"))
}

/// `elect --rejoin` through a partition longer than its session timeout:
/// its CMD is stopped when the term ends, before the other candidate
/// leads; after the heal it campaigns again on a new session, and once the
/// other leader goes it leads again and runs CMD again with a larger
/// token. It never exits 4; a signal goes to CMD, whose status it exits
/// with.
fn elect_rejoin_runs_again(url: &str) {
    let proxy = Blackhole::start(&host_port(url));
    let cut_url = via(url, &proxy.addr);
    let election = unique("election");
    let dir = temp_dir();
    let termed = dir.join("termed");
    let termed_s = termed.to_string_lossy().into_owned();
    let mut c = coordctl(
        &cut_url,
        &[
            "--session-timeout",
            "2s",
            "elect",
            &election,
            "node-a",
            "--rejoin",
            "--",
            "sh",
            "-c",
            SAYS_TOKEN,
            "sh",
            &termed_s,
        ],
    );
    c.stderr(std::process::Stdio::piped());
    let mut a = Running::start(c);
    assert_eq!(a.line(20), "leader node-a");
    let first = token_of(&a.line(20));
    let mut b = Running::start(coordctl(url, &["elect", &election, "node-b"]));
    wait_until(20, "node-b's offer is made", || {
        children(url, &election).len() == 2
    });
    proxy.cut();
    assert_eq!(b.line(30), "leader node-b");
    // A's term ended (its CMD stopped) before B's began.
    assert_eq!(
        std::fs::read_to_string(&termed).unwrap_or_default(),
        format!("term {first}\n"),
        "node-b leads while node-a's command runs"
    );
    assert!(
        matches!(a.child.try_wait(), Ok(None)),
        "elect --rejoin exited when its term ended"
    );
    proxy.heal();
    wait_until(30, "node-a campaigns again after the heal", || {
        children(url, &election).len() == 2
    });
    assert_eq!(code(b.signal_and_wait(Signal::SIGTERM, 20)), Some(143));
    assert_eq!(a.line(30), "leader node-a");
    let again = token_of(&a.line(20));
    assert!(again > first, "token {again} after {first}");
    assert_eq!(code(a.signal_and_wait(Signal::SIGTERM, 20)), Some(0));
    assert_eq!(
        wait_for_file(&termed, 5),
        format!("term {first}\nterm {again}\n")
    );
    assert!(
        children(url, &election).is_empty(),
        "an offer left after exit"
    );
    let mut err = String::new();
    if let Some(mut e) = a.child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    assert!(err.contains("lost leadership of"), "{err}");
}

/// `join --rejoin` through partitions longer than its session timeout and
/// a deletion of its node: each time the member comes back on the server,
/// same name, same data, while CMD keeps running (it is never sent
/// SIGTERM, coordctl never exits 4); stderr says it was lost and joined
/// again. A signal goes to CMD; coordctl leaves and exits with CMD's
/// status.
fn join_rejoin_keeps_the_membership(url: &str) {
    let proxy = Blackhole::start(&host_port(url));
    let cut_url = via(url, &proxy.addr);
    let group = unique("group");
    let dir = temp_dir();
    let termed = dir.join("termed");
    let termed_s = termed.to_string_lossy().into_owned();
    let mut c = coordctl(
        &cut_url,
        &[
            "--session-timeout",
            "2s",
            "join",
            &group,
            "host-1:80",
            "--rejoin",
            "--name",
            "host-1",
            "--",
            "sh",
            "-c",
            TRAPS_TERM,
            "sh",
            &termed_s,
        ],
    );
    c.stderr(std::process::Stdio::piped());
    let mut member = Running::start(c);
    assert_eq!(member.line(20), "joined host-1");
    assert_eq!(member.line(20), "ready");
    let listed = || stdout(&run(coordctl(url, &["members", &group]), 20));
    assert_eq!(listed(), "host-1:80\n");
    let still_running = |member: &mut Running, what: &str| {
        assert!(
            matches!(member.child.try_wait(), Ok(None)),
            "{what}: coordctl exited"
        );
        assert!(!termed.exists(), "{what}: the command was stopped");
    };
    for round in 1..=2 {
        proxy.cut();
        wait_until(
            30,
            "the partitioned member's session ends on the server",
            || children(url, &group).is_empty(),
        );
        proxy.heal();
        let healed = Instant::now();
        wait_until(30, "the member is back after the heal", || {
            children(url, &group) == ["host-1"]
        });
        eprintln!(
            "join --rejoin on {url}: back {:?} after heal #{round}",
            healed.elapsed()
        );
        assert_eq!(
            listed(),
            "host-1:80\n",
            "round {round}: back with other data"
        );
        still_running(&mut member, &format!("round {round}"));
    }
    assert_eq!(delete_children(url, &group), 1);
    wait_until(30, "the deleted member is back", || {
        children(url, &group) == ["host-1"]
    });
    assert_eq!(listed(), "host-1:80\n");
    still_running(&mut member, "after the delete");

    assert_eq!(code(member.signal_and_wait(Signal::SIGTERM, 20)), Some(0));
    assert_eq!(wait_for_file(&termed, 5), "term\n");
    assert!(
        children(url, &group).is_empty(),
        "still a member after exit"
    );
    let mut err = String::new();
    if let Some(mut e) = member.child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    assert!(err.contains("lost membership of"), "{err}");
    assert!(err.contains("again as host-1"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `coordctl watch` follows across session loss: cut off from the server
/// (behind a proxy that stops passing anything) past its 2 s session
/// timeout, it prints `reset` and keeps running; once the server is
/// reachable again it prints exactly what another session changed
/// meanwhile, `initialized`, and then goes on printing changes.
fn watch_follows_across_session_loss(url: &str) {
    let proxy = Blackhole::start(&host_port(url));
    let cut_url = via(url, &proxy.addr);
    let root = unique("watchfollow");
    let (a, b) = (format!("{root}/a"), format!("{root}/b"));
    with_session(url, async |s| {
        s.create(&a, b"one", coordination::CreateMode::Persistent)
            .await
            .unwrap_or_else(|e| panic!("create: {e}"))
    });
    let mut watch = Running::start(coordctl(
        &cut_url,
        &["--session-timeout", "2s", "watch", &root],
    ));
    expect_initial_load(&watch, &root, &a);
    let cut = Instant::now();
    proxy.cut();
    with_session(url, async |s| {
        s.set(&a, b"uno", None)
            .await
            .unwrap_or_else(|e| panic!("set: {e}"));
        s.create(&b, b"two", coordination::CreateMode::Persistent)
            .await
            .unwrap_or_else(|e| panic!("create: {e}"))
    });
    // The session is given up at its lease deadline, while cut off.
    assert_eq!(watch.line(20), "reset");
    assert!(
        watch.child.try_wait().ok().flatten().is_none(),
        "watch exited on losing its session"
    );
    let lost = cut.elapsed();
    proxy.heal();
    assert_eq!(watch.line(30), format!("updated {a} uno"));
    assert_eq!(watch.line(20), format!("added {b} two"));
    assert_eq!(watch.line(20), "initialized");
    with_session(url, async |s| {
        s.delete(&b, None)
            .await
            .unwrap_or_else(|e| panic!("delete: {e}"))
    });
    assert_eq!(watch.line(20), format!("removed {b}"));
    assert_eq!(code(watch.signal_and_wait(Signal::SIGINT, 20)), Some(130));
    eprintln!("watch on {url}: reset {lost:?} after the cut");
}

macro_rules! on_backend {
    ($name:ident, $url:path) => {
        mod $name {
            use super::*;

            #[test]
            fn elect_rejoin_runs_again() {
                super::elect_rejoin_runs_again(&$url());
            }

            #[test]
            fn join_rejoin_keeps_the_membership() {
                super::join_rejoin_keeps_the_membership(&$url());
            }

            #[test]
            fn watch_follows_across_session_loss() {
                super::watch_follows_across_session_loss(&$url());
            }
        }
    };
}

on_backend!(zk, common::zk_url);
on_backend!(etcd, common::etcd_url);
on_backend!(redis, common::redis_url);
on_backend!(pg, common::pg_url);

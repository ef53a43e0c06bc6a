//! `coordctl watch`, `members --watch`, `leader --watch` and `counter`,
//! and the demo on each server.

use super::*;

/// `members --watch` and `leader --watch` print changes as they happen.
pub(crate) fn watches_print_changes(url: &str) {
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

/// `coordctl --url … demo` runs the demo on the server.
/// `coordctl counter`: get, set, add (negative too), concurrent adds from
/// several processes all count, watch prints changes, and a node that is
/// not a decimal integer or an overflowing add is a usage error (exit 2)
/// that writes nothing.
pub(crate) fn counter_commands(url: &str) {
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

pub(crate) fn demo_runs(url: &str) {
    let out = run(coordctl(url, &["demo"]), 90);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("invariants held"), "{out:?}");
}

/// `coordctl watch`: prints the nodes present, `initialized`, then one
/// line per change made through the library by another session; SIGINT
/// ends it with 130.
pub(crate) fn watch_prints_cache_events(url: &str) {
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
pub(crate) fn watch_json_prints_cache_events(url: &str) {
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

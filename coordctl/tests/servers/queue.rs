//! `coordctl queue` and `join`/`members` across processes: interrupted
//! pops and a broken stdout lose no item.

use super::*;

/// `queue` and `join`/`members` across processes.
pub(crate) fn queue_and_members(url: &str) {
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
pub(crate) fn queue_items(url: &str, q: &str) -> Vec<String> {
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
pub(crate) struct Tally {
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
pub(crate) fn interrupted_pops_lose_nothing(url: &str) {
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
pub(crate) fn pop_to_a_broken_stdout_keeps_the_item(url: &str) {
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

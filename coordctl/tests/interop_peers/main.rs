//! Interop storms: coordctl and the real peer libraries on one path, on the
//! real servers (COORD_TEST_ZK, COORD_TEST_ETCD), while participants are
//! killed with SIGKILL and restarted.
//!
//! Peers: Apache Curator 5.4 (Debian's libcurator-recipes-java, driven by
//! tests/interop/Peers.java, compiled here with javac), kazoo (PyPI; driven
//! by tests/interop/peers.py), and etcd's Go `concurrency` package as
//! `etcdctl elect` / `etcdctl lock` (Debian's etcd-client). A missing peer
//! fails the test and says how to install it (scripts/test-all does).
//!
//! How holding is observed, the same for every implementation: right after
//! a participant gets the hold (lock, lease, leadership) it creates
//! `holders/<KIND>.<IMPL>.<ID>` exclusively in the storm's directory (KIND
//! W: exclusive, R: shared), lists the directory and, if it sees a W
//! marker next to any other or more markers than the recipe allows, logs a
//! violation; it logs the hold, holds 100..300 ms, removes its marker and
//! releases. For coordctl the marker protocol is the command run under the
//! hold (`peers.py hold`). After the harness kills a participant (its whole
//! process group, and waits until none of it runs) it removes that
//! participant's marker: a dead process does not act, while what it held
//! stays held until its session ends (2 s) — which is what is tested.
//!
//! Each storm runs at least 15 s, then on until every implementation (and
//! kind, for the read/write locks) has held twice and a holder has been
//! killed with SIGKILL (30 s at most), and asserts: no violation, those
//! holds, that kill. The first 4 s are calm (everyone runs); then every
//! 0.7..1.4 s a participant is stopped and started again: every other time
//! the one holding (or next to hold), otherwise any that has run for 2 s.
//! Sessions are 2 s everywhere (coordctl `--session-timeout 2s`, Curator
//! `newClient(.., 2000, ..)`, kazoo `timeout=2.0`, `etcdctl lock --ttl 2`)
//! but etcdctl elect's (see below). What each proves:
//!
//! - [`zk_election_coordctl_and_curator_leader_latch`]: `coordctl elect`
//!   (default layout, `_c_<uuid>-latch-<seq>`) and Curator `LeaderLatch`
//!   are one election: at most one leader at any moment.
//! - [`zk_election_coordctl_and_kazoo_election`]: the same with kazoo's
//!   `Election`, whose lock is replaced by `client.Lock(path, id,
//!   extra_lock_patterns=("-latch-",))` (Election takes no patterns; it
//!   runs on that Lock).
//! - [`zk_election_selector_coordctl_and_curator_leader_selector`]:
//!   `coordctl elect --layout selector` (`_c_<uuid>-lock-<seq>`) and Curator
//!   `LeaderSelector`: at most one leader.
//! - [`zk_rwlock_coordctl_and_curator`]: `coordctl lock --shared/--write`
//!   and Curator `InterProcessReadWriteLock` readers and writers are one
//!   read/write lock: a writer never holds with anyone else.
//! - [`zk_rwlock_coordctl_and_kazoo`]: the same with kazoo's `ReadLock`
//!   (`extra_lock_patterns=("__WRIT__",)`) and `WriteLock`
//!   (`extra_lock_patterns=("__READ__", "__WRIT__")`). Curator and kazoo are
//!   not mixed in one storm: Curator does not know kazoo's node names.
//! - [`zk_lock_coordctl_and_curator_mutex`],
//!   [`zk_lock_coordctl_and_kazoo_lock`]: `coordctl lock` (`_c_<uuid>-lock-<seq>`)
//!   with Curator's `InterProcessMutex`, and with kazoo's `Lock` given
//!   `extra_lock_patterns=("-lock-",)`: one holder at a time.
//! - [`zk_counter_coordctl_and_kazoo_counter`]: `coordctl counter add` and
//!   kazoo's `Counter` adding to one node at once: no add lost, each reads
//!   the other's value (not a kill storm: an add cut off mid-way may or may
//!   not have counted, by design).
//! - [`zk_semaphore_coordctl_and_curator`]: `coordctl lock --leases 2` and
//!   Curator `InterProcessSemaphoreV2(client, path, 2)`: at most 2 holders,
//!   and the two leases are held by one of each at once (twice at least).
//! - [`etcd_election_coordctl_and_etcdctl_elect`]: `coordctl elect` and
//!   `etcdctl elect`: at most one leader. etcdctl elect's session has a
//!   fixed 60 s TTL (no --ttl), so etcdctl participants are stopped with
//!   SIGTERM (it resigns) rather than SIGKILL; coordctl ones are killed.
//! - [`etcd_lock_coordctl_and_etcdctl_lock`]: `coordctl lock` and
//!   `etcdctl lock --ttl 2`: one holder at a time, both sides SIGKILLed.
//!
//! And two controls, storms like the others that end at the first
//! violation, which show the harness sees an overlap when there is one
//! (each asserts that violations were seen; without the calm start, the
//! selector one found none in 30 s once in five runs: kills make the two
//! sides' live moments rarer):
//!
//! - [`control_plain_lock_and_curator_readers_overlap`]: a plain `coordctl
//!   lock` (`-lock-` nodes) is not a writer to Curator's read lock.
//! - [`control_selector_layout_and_curator_leader_latch_overlap`] shows
//!   that Curator's `LeaderLatch` does not order `--layout selector` offers.
//!
//! Storms on one server run one at a time (a ZooKeeper and an etcd storm
//! may run together).

#[path = "../common/mod.rs"]
mod common;
mod peers;
mod storm;

use std::process::{Command, Stdio};

use common::BIN;
use peers::*;
use storm::*;

/// `coordctl elect` (default layout: Curator's LeaderLatch names) and
/// Curator's `LeaderLatch`: at most one leader at any moment.
#[test]
fn zk_election_coordctl_and_curator_leader_latch() {
    let url = zk_url();
    let mut s = Storm::new("election-latch", &ZK_STORM);
    let path = s.path(&url);
    s.coordctl("c1", &url, &["elect", &path, "c1"], "W", 1);
    s.coordctl("c2", &url, &["elect", &path, "c2"], "W", 1);
    s.curator("j1", "latch", &path, 1);
    s.curator("j2", "latch", &path, 1);
    storm(s, &["coordctl", "curator"]).passed();
}

/// `coordctl elect` and kazoo's `Election`, whose lock is replaced by
/// `client.Lock(path, id, extra_lock_patterns=("-latch-",))` so that it
/// counts coord's offers (kazoo's Election takes no patterns itself; it
/// is that Lock underneath): at most one leader at any moment.
#[test]
fn zk_election_coordctl_and_kazoo_election() {
    require_kazoo();
    let url = zk_url();
    let mut s = Storm::new("election-kazoo", &ZK_STORM);
    let path = s.path(&url);
    s.coordctl("c1", &url, &["elect", &path, "c1"], "W", 1);
    s.coordctl("c2", &url, &["elect", &path, "c2"], "W", 1);
    s.kazoo("k1", "election", &path, "W", 1);
    s.kazoo("k2", "election", &path, "W", 1);
    storm(s, &["coordctl", "kazoo"]).passed();
}

/// `coordctl elect --layout selector` (`_c_<uuid>-lock-<seq>`, the names of
/// Curator's InterProcessMutex) and Curator's `LeaderSelector`: at most one
/// leader at any moment.
#[test]
fn zk_election_selector_coordctl_and_curator_leader_selector() {
    let url = zk_url();
    let mut s = Storm::new("election-selector", &ZK_STORM);
    let path = s.path(&url);
    for id in ["c1", "c2"] {
        s.coordctl(
            id,
            &url,
            &["elect", "--layout", "selector", &path, id],
            "W",
            1,
        );
    }
    s.curator("j1", "selector", &path, 1);
    s.curator("j2", "selector", &path, 1);
    storm(s, &["coordctl", "curator"]).passed();
}

/// `coordctl lock --shared` / `--write` and Curator's
/// `InterProcessReadWriteLock` read and write locks on one path: a writer
/// never holds with anyone else.
#[test]
fn zk_rwlock_coordctl_and_curator() {
    let url = zk_url();
    let mut s = Storm::new("rwlock-curator", &ZK_STORM);
    let path = s.path(&url);
    s.coordctl("c-r1", &url, &["lock", "--shared", &path], "R", 1000);
    s.coordctl("c-r2", &url, &["lock", "--shared", &path], "R", 1000);
    s.coordctl("c-w1", &url, &["lock", "--write", &path], "W", 1);
    s.curator("j-r1", "read", &path, 1);
    s.curator("j-w1", "write", &path, 1);
    storm(s, &["coordctl/R", "coordctl/W", "curator/R", "curator/W"]).passed();
}

/// `coordctl lock --shared` / `--write` and kazoo's `ReadLock` (with
/// `extra_lock_patterns=("__WRIT__",)`) and `WriteLock` (with
/// `extra_lock_patterns=("__READ__", "__WRIT__")`): a writer never holds
/// with anyone else.
#[test]
fn zk_rwlock_coordctl_and_kazoo() {
    require_kazoo();
    let url = zk_url();
    let mut s = Storm::new("rwlock-kazoo", &ZK_STORM);
    let path = s.path(&url);
    s.coordctl("c-r1", &url, &["lock", "--shared", &path], "R", 1000);
    s.coordctl("c-r2", &url, &["lock", "--shared", &path], "R", 1000);
    s.coordctl("c-w1", &url, &["lock", "--write", &path], "W", 1);
    s.kazoo("k-r1", "read", &path, "R", 1000);
    s.kazoo("k-w1", "write", &path, "W", 1);
    storm(s, &["coordctl/R", "coordctl/W", "kazoo/R", "kazoo/W"]).passed();
}

/// `coordctl lock` and Curator's `InterProcessMutex` on one path: one
/// holder at a time.
#[test]
fn zk_lock_coordctl_and_curator_mutex() {
    let url = zk_url();
    let mut s = Storm::new("lock-curator", &ZK_STORM);
    let path = s.path(&url);
    s.coordctl("c1", &url, &["lock", &path], "W", 1);
    s.coordctl("c2", &url, &["lock", &path], "W", 1);
    s.curator("j1", "mutex", &path, 1);
    s.curator("j2", "mutex", &path, 1);
    storm(s, &["coordctl", "curator"]).passed();
}

/// `coordctl lock` and kazoo's `Lock` given
/// `extra_lock_patterns=("-lock-",)`: one holder at a time. (Not mixed with
/// Curator: Curator's mutex does not order kazoo's `__lock__` nodes.)
#[test]
fn zk_lock_coordctl_and_kazoo_lock() {
    require_kazoo();
    let url = zk_url();
    let mut s = Storm::new("lock-kazoo", &ZK_STORM);
    let path = s.path(&url);
    s.coordctl("c1", &url, &["lock", &path], "W", 1);
    s.coordctl("c2", &url, &["lock", &path], "W", 1);
    s.kazoo("k1", "lock", &path, "W", 1);
    s.kazoo("k2", "lock", &path, "W", 1);
    storm(s, &["coordctl", "kazoo"]).passed();
}

/// kazoo's `Counter` and `coordctl counter` on one node, adding at once:
/// the value is stored as kazoo stores it (decimal text), each reads what
/// the other wrote, and no add of either is lost (both retry on a version
/// conflict).
#[test]
fn zk_counter_coordctl_and_kazoo_counter() {
    require_kazoo();
    const ADDS: usize = 15;
    let _one = ZK_STORM.lock().unwrap_or_else(|e| e.into_inner());
    let url = zk_url();
    let path = format!("/coord-interop/counter/{}", uuid::Uuid::new_v4().simple());
    let kazoo = |n: usize| {
        Command::new("python3")
            .args([
                "-c",
                "import sys\n\
                 from kazoo.client import KazooClient\n\
                 zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=15)\n\
                 c = zk.Counter(sys.argv[2])\n\
                 for _ in range(int(sys.argv[3])):\n    c += 1\n\
                 print(c.value); zk.stop()\n",
                &zk_hosts(),
                &path,
                &n.to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start python3")
    };
    let coordctl = |path: String, url: String| {
        std::thread::spawn(move || {
            for _ in 0..ADDS {
                let o = Command::new(BIN)
                    .args(["--url", &url, "-q", "counter", &path, "add", "1"])
                    .stdin(Stdio::null())
                    .output()
                    .expect("run coordctl");
                assert!(
                    o.status.success(),
                    "coordctl counter add: {}",
                    String::from_utf8_lossy(&o.stderr)
                );
            }
        })
    };
    let k = [kazoo(ADDS), kazoo(ADDS)];
    let c = [
        coordctl(path.clone(), url.clone()),
        coordctl(path.clone(), url.clone()),
    ];
    for h in c {
        h.join().expect("coordctl adds");
    }
    for p in k {
        let o = p.wait_with_output().expect("kazoo counter");
        assert!(
            o.status.success(),
            "kazoo Counter: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let o = Command::new(BIN)
        .args(["--url", &url, "-q", "counter", &path, "get"])
        .output()
        .expect("coordctl counter get");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        (4 * ADDS).to_string(),
        "every add of both implementations counted once"
    );
    let o = Command::new("python3")
        .args([
            "-c",
            "import sys\n\
             from kazoo.client import KazooClient\n\
             zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=15)\n\
             print(zk.Counter(sys.argv[2]).value); zk.stop()\n",
            &zk_hosts(),
            &path,
        ])
        .output()
        .expect("kazoo read");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        (4 * ADDS).to_string(),
        "kazoo reads the same value: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `coordctl lock --leases 2` and Curator's `InterProcessSemaphoreV2` with
/// 2 leases, 3 of each: never more than 2 holders, and a coordctl and a
/// Curator holder do hold leases at once (twice at least).
#[test]
fn zk_semaphore_coordctl_and_curator() {
    let url = zk_url();
    let mut s = Storm::new("semaphore-curator", &ZK_STORM);
    let path = s.path(&url);
    for i in 1..=3 {
        s.coordctl(
            &format!("c{i}"),
            &url,
            &["lock", "--leases", "2", &path],
            "R",
            2,
        );
        s.curator(&format!("j{i}"), "lease", &path, 2);
    }
    let r = storm(s, &["coordctl", "curator", ACROSS]);
    assert_eq!(r.max_seen, 2, "{r:?}");
    r.passed();
}

/// `coordctl elect` and `etcdctl elect` on one election: at most one
/// leader. etcdctl participants are stopped with SIGTERM (see [`Stop`]).
#[test]
fn etcd_election_coordctl_and_etcdctl_elect() {
    require_etcdctl();
    let url = etcd_url();
    let mut s = Storm::new("election-etcdctl", &ETCD_STORM);
    let path = s.path(&url);
    s.coordctl("c1", &url, &["elect", &path, "c1"], "W", 1);
    s.coordctl("c2", &url, &["elect", &path, "c2"], "W", 1);
    s.etcdctl_elect("e1", &path);
    s.etcdctl_elect("e2", &path);
    let r = storm(s, &["coordctl", "etcdctl"]);
    assert!(r.terms >= 1, "no etcdctl participant was stopped: {r:?}");
    r.passed();
}

/// `coordctl lock` and `etcdctl lock --ttl 2` on one lock: one holder at a
/// time, with both sides killed.
#[test]
fn etcd_lock_coordctl_and_etcdctl_lock() {
    require_etcdctl();
    let url = etcd_url();
    let mut s = Storm::new("lock-etcdctl", &ETCD_STORM);
    let path = s.path(&url);
    s.coordctl("c1", &url, &["lock", &path], "W", 1);
    s.coordctl("c2", &url, &["lock", &path], "W", 1);
    s.etcdctl_lock("e1", &path);
    s.etcdctl_lock("e2", &path);
    storm(s, &["coordctl", "etcdctl"]).passed();
}

/// Control: a plain `coordctl lock` (`-lock-` nodes) is a different
/// recipe from Curator's read lock, which does not count its nodes as
/// writers, so the two hold at once. The harness must see that.
#[test]
fn control_plain_lock_and_curator_readers_overlap() {
    let url = zk_url();
    let mut s = Storm::new("control-lock-vs-readers", &ZK_STORM);
    let path = s.path(&url);
    s.coordctl("c1", &url, &["lock", &path], "W", 1);
    s.coordctl("c2", &url, &["lock", &path], "W", 1);
    s.curator("j-r1", "read", &path, 1);
    s.curator("j-r2", "read", &path, 1);
    let r = s.run(Until::Violation);
    assert!(
        !r.violations.is_empty(),
        "no overlap seen where one must be: the harness cannot see violations ({r:?})"
    );
    r.passed();
}

/// Control: `coordctl elect --layout selector` offers (`-lock-`) are not
/// LeaderLatch offers (`-latch-`): Curator's LeaderLatch does not order
/// them, so two leaders overlap. The harness must see that; the default
/// layout (the LeaderLatch storm above) is the one to use with LeaderLatch.
#[test]
fn control_selector_layout_and_curator_leader_latch_overlap() {
    let url = zk_url();
    let mut s = Storm::new("control-selector-vs-latch", &ZK_STORM);
    let path = s.path(&url);
    for id in ["c1", "c2"] {
        s.coordctl(
            id,
            &url,
            &["elect", "--layout", "selector", &path, id],
            "W",
            1,
        );
    }
    s.curator("j1", "latch", &path, 1);
    s.curator("j2", "latch", &path, 1);
    let r = s.run(Until::Violation);
    assert!(
        !r.violations.is_empty(),
        "no overlap seen where one must be: the harness cannot see violations ({r:?})"
    );
    r.passed();
}

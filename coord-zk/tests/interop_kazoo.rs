//! A Rust process and a Python one using kazoo share one lock on the same
//! ZooKeeper (`COORD_TEST_ZK`): coord's `Lock` names its nodes as Curator's
//! `InterProcessMutex` does (`_c_<uuid>-lock-<seq>`), kazoo's `Lock` counts
//! them given `extra_lock_patterns=("-lock-",)`, and coord counts kazoo's
//! `<hex>__lock__<seq>` nodes because every child with a ten-digit suffix is
//! a contender.
//!
//! Needs `python3` with kazoo (`scripts/servers/zk.sh` installs it from PyPI
//! when missing). Fails, never skips, without it.

mod common;

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use coord_core::recipes::Lock;
use coord_core::{Error, Session};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// A kazoo client holding a `Lock` on one path, driven line by line:
/// `acquire <seconds>` → `acquired` | `timeout`; `release` → `released`;
/// `contenders` → the contenders' data, comma-separated.
const KAZOO_DRIVER: &str = r#"
import sys
from kazoo.client import KazooClient
from kazoo.exceptions import LockTimeout

zk = KazooClient(hosts=sys.argv[1])
zk.start(timeout=15)
lock = zk.Lock(sys.argv[2], identifier="kazoo", extra_lock_patterns=("-lock-",))
print("ready", flush=True)
for line in sys.stdin:
    cmd = line.split()
    if not cmd:
        continue
    if cmd[0] == "acquire":
        try:
            ok = lock.acquire(timeout=float(cmd[1]))
        except LockTimeout:
            ok = False
        print("acquired" if ok else "timeout", flush=True)
    elif cmd[0] == "release":
        lock.release()
        print("released", flush=True)
    elif cmd[0] == "contenders":
        print(",".join(lock.contenders()), flush=True)
    elif cmd[0] == "quit":
        break
zk.stop()
zk.close()
"#;

struct Kazoo {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Kazoo {
    async fn start(hosts: &str, path: &str) -> Kazoo {
        let check = Command::new("python3")
            .args(["-c", "import kazoo"])
            .status()
            .await
            .expect("python3 must be installed for the kazoo interop test");
        assert!(
            check.success(),
            "kazoo is not installed: run scripts/test-all (scripts/servers/zk.sh installs it), \
             or `python3 -m pip install kazoo`"
        );
        let mut child = Command::new("python3")
            .args(["-c", KAZOO_DRIVER, hosts, path])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start python3");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut kazoo = Kazoo {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
        };
        assert_eq!(kazoo.answer().await, "ready");
        kazoo
    }

    async fn send(&mut self, command: &str) {
        self.stdin
            .write_all(format!("{command}\n").as_bytes())
            .await
            .expect("write to kazoo");
        self.stdin.flush().await.expect("flush to kazoo");
    }

    async fn answer(&mut self) -> String {
        let line = tokio::time::timeout(Duration::from_secs(60), self.lines.next_line())
            .await
            .expect("kazoo answers within 60 s")
            .expect("read from kazoo");
        line.expect("kazoo exited early")
    }

    async fn ask(&mut self, command: &str) -> String {
        self.send(command).await;
        self.answer().await
    }

    async fn quit(mut self) {
        self.send("quit").await;
        let _ = tokio::time::timeout(Duration::from_secs(20), self.child.wait()).await;
    }
}

async fn open() -> (Session, String) {
    let options = common::options_from_env();
    let session = Session::new(Arc::new(common::connect(&options).await));
    let id = uuid::Uuid::new_v4().simple().to_string();
    (session, format!("/coord-interop/kazoo-{}", &id[..12]))
}

/// While Rust holds the lock, kazoo waits; Rust's release lets it in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_waits_for_a_rust_holder() {
    let (session, dir) = open().await;
    let lock = Lock::new(&session, &dir)
        .expect("lock path")
        .with_data("rust")
        .expect("lock data");
    let guard = lock.acquire().await.expect("uncontended acquire");
    assert!(
        coord_core::path::name(guard.node_path()).starts_with("_c_"),
        "{}",
        guard.node_path()
    );

    let mut kazoo = Kazoo::start(common::options_from_env().hosts(), &dir).await;
    // kazoo sees our node as a contender, ahead of it.
    assert_eq!(kazoo.ask("contenders").await, "rust");
    assert_eq!(kazoo.ask("acquire 1").await, "timeout");

    kazoo.send("acquire 30").await;
    // kazoo's node is queued behind ours: coord sees it as a contender too.
    let kazoo_child = wait_for_child(&session, &dir, "__lock__").await;
    assert!(kazoo_child.sequence.is_some(), "{kazoo_child:?}");
    guard.release().await.expect("release");
    assert_eq!(kazoo.answer().await, "acquired");

    // Now kazoo holds: a Rust acquire must wait.
    assert!(matches!(
        lock.acquire_timeout(Duration::from_millis(500)).await,
        Err(Error::Timeout(_))
    ));
    assert_eq!(kazoo.ask("release").await, "released");
    let guard = lock
        .acquire_timeout(Duration::from_secs(20))
        .await
        .expect("acquire after kazoo's release");
    guard.release().await.expect("release");
    kazoo.quit().await;
    session.close().await.expect("close");
}

/// While kazoo holds the lock, Rust waits (seeing kazoo's node as its
/// predecessor); kazoo's release lets it in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_waits_for_a_kazoo_holder() {
    let (session, dir) = open().await;
    let mut kazoo = Kazoo::start(common::options_from_env().hosts(), &dir).await;
    assert_eq!(kazoo.ask("acquire 10").await, "acquired");

    let children = session.children(&dir).await.expect("list the lock dir");
    assert_eq!(children.len(), 1, "{children:?}");
    assert!(children[0].name.contains("__lock__"), "{children:?}");
    assert!(children[0].sequence.is_some(), "{children:?}");

    let lock = Lock::new(&session, &dir).expect("lock path");
    assert!(lock.try_acquire().await.expect("try").is_none());
    let waiting = tokio::spawn({
        let lock = lock.clone();
        async move { lock.acquire_timeout(Duration::from_secs(30)).await }
    });
    // Our node queues behind kazoo's.
    let ours = wait_for_child(&session, &dir, "-lock-").await;
    assert!(
        ours.sequence > children[0].sequence,
        "{ours:?} {children:?}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !waiting.is_finished(),
        "acquired while kazoo holds the lock"
    );

    assert_eq!(kazoo.ask("release").await, "released");
    let guard = waiting
        .await
        .expect("join")
        .expect("acquire after kazoo's release");
    // kazoo queues behind us now.
    kazoo.send("acquire 30").await;
    wait_for_child(&session, &dir, "__lock__").await;
    guard.release().await.expect("release");
    assert_eq!(kazoo.answer().await, "acquired");
    assert_eq!(kazoo.ask("release").await, "released");
    kazoo.quit().await;
    session.close().await.expect("close");
}

/// Wait until a child whose name contains `marker` shows up in `dir`.
async fn wait_for_child(session: &Session, dir: &str, marker: &str) -> coord_core::Child {
    for _ in 0..200 {
        let children = session.children(dir).await.expect("list the lock dir");
        if let Some(child) = children.into_iter().find(|c| c.name.contains(marker)) {
            return child;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no child with {marker:?} appeared in {dir}");
}

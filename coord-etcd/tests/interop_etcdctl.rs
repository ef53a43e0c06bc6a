//! coord and Go's `concurrency` package (run as `etcdctl lock` / `etcdctl
//! elect`, ETCDCTL_API=3) on the same etcd, at the same keys: every key
//! under `P/` is a contender ordered by create revision; an election's
//! value is the key's value.
//!
//! Needs `COORD_TEST_ETCD` (scripts/test-all sets it) and `etcdctl` on the
//! PATH (Debian's etcd-client). Without either, the tests fail.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::endpoints;
use coord_core::recipes::{Election, Lock};
use coord_core::{CreateMode, Session};
use coord_etcd::EtcdOptions;

/// Generous: a loaded CI machine is slow, and a correct run never waits it out.
const WAIT: Duration = Duration::from_secs(30);
/// How long something that must not happen is given to happen.
const QUIET: Duration = Duration::from_secs(2);

fn options() -> EtcdOptions {
    EtcdOptions::from_endpoint_list(&endpoints())
}

async fn open(options: EtcdOptions) -> Session {
    coord_etcd::connect(options)
        .await
        .unwrap_or_else(|e| panic!("cannot open an etcd session at {}: {e}", endpoints()))
}

fn root(test: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("/coord-interop/{test}-{}", &id[..12])
}

/// A running etcdctl, its stdout read line by line; killed on drop.
struct Etcdctl {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Etcdctl {
    fn spawn(args: &[&str]) -> Self {
        let mut child = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .arg("--endpoints")
            .arg(endpoints())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run etcdctl (Debian package etcd-client): {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Etcdctl { child, lines }
    }

    /// The next line of output, waiting up to `wait` (blocking this thread:
    /// the tests run on a multi-threaded runtime).
    fn line(&self, wait: Duration) -> Option<String> {
        self.lines.recv_timeout(wait).ok()
    }

    fn expect_line(&self, what: &str) -> String {
        self.line(WAIT)
            .unwrap_or_else(|| panic!("etcdctl printed no {what} within {WAIT:?}"))
    }

    fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// SIGTERM: etcdctl unlocks / resigns and exits, as on Ctrl-C.
    fn terminate(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + WAIT;
        while self.running() {
            assert!(Instant::now() < deadline, "etcdctl did not exit on SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn wait_exit(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            assert!(Instant::now() < deadline, "etcdctl did not exit");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Etcdctl {
    fn drop(&mut self) {
        if self.running() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// (a) While a coord session holds the lock at P, `etcdctl lock P` waits;
/// once we release, it gets the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcdctl_lock_waits_for_a_coord_holder() {
    let session = open(options()).await;
    let p = root("lock-a");
    let lock = Lock::new(&session, &p).expect("lock");
    let guard = lock.acquire().await.expect("uncontended acquire");

    let mut go = Etcdctl::spawn(&["lock", &p, "echo", "go-acquired"]);
    assert_eq!(
        go.line(QUIET),
        None,
        "etcdctl lock got the lock while coord held it"
    );
    assert!(go.running(), "etcdctl lock gave up instead of waiting");

    guard.release().await.expect("release");
    assert_eq!(go.expect_line("acquisition"), "go-acquired");
    assert!(go.wait_exit().success(), "etcdctl lock failed");
    session.close().await.expect("close");
}

/// (a, primitive level) An ephemeral-sequential node under P blocks
/// `etcdctl lock P` until it is deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcdctl_lock_waits_for_our_node() {
    let session = open(options()).await;
    let p = root("lock-node");
    let mine = session
        .create(
            &format!("{p}/_c_{}-lock-", uuid::Uuid::new_v4()),
            b"",
            CreateMode::EphemeralSequential,
        )
        .await
        .expect("create");

    let mut go = Etcdctl::spawn(&["lock", &p, "echo", "go-acquired"]);
    assert_eq!(go.line(QUIET), None, "etcdctl lock ignored our node");
    session.delete(&mine.path, None).await.expect("delete");
    assert_eq!(go.expect_line("acquisition"), "go-acquired");
    assert!(go.wait_exit().success());
    session.close().await.expect("close");
}

/// (b) A key made by `etcdctl lock P` is a contender in our `children(P)`,
/// ordered before a node we create after it; our lock waits for it. Under
/// a namespace, to check that etcdctl sees our keys where `key_of` says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcdctl_lock_holder_is_a_contender() {
    let ns = format!(
        "/coord-interop-ns-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let opts = options().with_namespace(ns.clone());
    let session = open(opts.clone()).await;
    let p = root("lock-b");
    let p_key = opts.key_of(&p);
    assert_eq!(p_key, format!("{ns}{p}"));

    let mut go = Etcdctl::spawn(&["lock", &p_key]);
    let go_key = go.expect_line("lock key");
    let go_name = go_key
        .strip_prefix(&format!("{p_key}/"))
        .unwrap_or_else(|| panic!("etcdctl's key {go_key} is not under {p_key}/"))
        .to_owned();

    let lock = Lock::new(&session, &p).expect("lock");
    assert!(
        lock.try_acquire().await.expect("try_acquire").is_none(),
        "coord took the lock etcdctl holds"
    );

    let waiter = {
        let lock = lock.clone();
        tokio::spawn(async move { lock.acquire().await })
    };
    // Our queued node appears after etcdctl's, with a larger sequence.
    let deadline = Instant::now() + WAIT;
    let listed = loop {
        let listed = session.children(&p).await.expect("children");
        if listed.len() == 2 {
            break listed;
        }
        assert!(
            Instant::now() < deadline,
            "our contender is not listed: {listed:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        listed[0].name, go_name,
        "etcdctl's key is not the first contender"
    );
    let go_seq = listed[0].sequence.expect("etcdctl's key has a sequence");
    let our_seq = listed[1].sequence.expect("our node has a sequence");
    assert!(
        go_seq < our_seq,
        "sequence {go_seq} is not below ours {our_seq}"
    );
    assert!(listed[1].name.contains("-lock-"));

    tokio::time::sleep(QUIET).await;
    assert!(
        !waiter.is_finished(),
        "coord got the lock while etcdctl held it"
    );
    go.terminate();
    let guard = tokio::time::timeout(WAIT, waiter)
        .await
        .expect("coord never got the lock after etcdctl let go")
        .expect("join")
        .expect("acquire");
    guard.release().await.expect("release");
    session.close().await.expect("close");
}

/// (c) `etcdctl elect -l P` prints the value of the key with the lowest
/// create revision under P: the first node we created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcdctl_elect_listen_prints_our_first_node() {
    let session = open(options()).await;
    let p = root("elect-c");
    for value in ["first", "second"] {
        session
            .create(
                &format!("{p}/_c_{}-n_", uuid::Uuid::new_v4()),
                value.as_bytes(),
                CreateMode::EphemeralSequential,
            )
            .await
            .expect("create");
    }
    let listen = Etcdctl::spawn(&["elect", "-l", &p]);
    let key = listen.expect_line("leader key");
    assert!(key.starts_with(&format!("{p}/")), "leader key {key}");
    assert_eq!(listen.expect_line("leader value"), "first");
    session.close().await.expect("close");
}

/// (c, recipe level) coord's election and `etcdctl elect` are one election:
/// etcdctl sees our leader, we see etcdctl's, and a coord campaign waits for
/// an etcdctl leader to resign.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcdctl_elect_and_coord_election_agree() {
    let session = open(options()).await;
    let p = root("elect-recipe");
    let election = Election::new(&session, &p).expect("election");

    // Our leader, as etcdctl sees it.
    let mut leadership = election.campaign(b"coord-leader").await.expect("campaign");
    let listen = Etcdctl::spawn(&["elect", "-l", &p]);
    let key = listen.expect_line("leader key");
    assert_eq!(key, leadership.node_path());
    assert_eq!(listen.expect_line("leader value"), "coord-leader");
    // A proclamation is a new value on the same key, as Go's Proclaim.
    leadership
        .proclaim(b"coord-leader-2")
        .await
        .expect("proclaim");
    assert_eq!(listen.expect_line("proclaimed key"), key);
    assert_eq!(listen.expect_line("proclaimed value"), "coord-leader-2");
    drop(listen);

    // etcdctl campaigns behind us and waits.
    let mut go = Etcdctl::spawn(&["elect", &p, "go-leader"]);
    assert_eq!(go.line(QUIET), None, "etcdctl elected while coord leads");
    leadership.resign().await.expect("resign");
    go.expect_line("etcdctl's leader key");
    assert_eq!(go.expect_line("etcdctl's leader value"), "go-leader");

    // etcdctl's leader, as we see it; our campaign waits for it.
    let leader = election.leader().await.expect("leader").expect("a leader");
    assert_eq!(leader.value, b"go-leader");
    let campaign = {
        let election = election.clone();
        tokio::spawn(async move { election.campaign(b"coord-again").await })
    };
    tokio::time::sleep(QUIET).await;
    assert!(!campaign.is_finished(), "coord elected while etcdctl leads");
    go.terminate();
    let again = tokio::time::timeout(WAIT, campaign)
        .await
        .expect("coord never elected after etcdctl resigned")
        .expect("join")
        .expect("campaign");
    assert_eq!(again.value(), b"coord-again");
    again.resign().await.expect("resign");
    session.close().await.expect("close");
}

/// etcdctl makes `P/<lease>` without a key `P`: coord still lists it and
/// reads its leader, with no coord node ever made at P.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coord_reads_an_etcdctl_leader_where_coord_made_nothing() {
    let session = open(options()).await;
    let p = root("elect-foreign");
    let go = Etcdctl::spawn(&["elect", &p, "go-only"]);
    let go_key = go.expect_line("etcdctl's leader key");
    assert_eq!(go.expect_line("etcdctl's leader value"), "go-only");

    assert!(
        !session.exists(&p).await.expect("exists"),
        "P has no key of its own"
    );
    let kids = session
        .children(&p)
        .await
        .expect("children of a key-less directory");
    assert_eq!(kids.len(), 1, "{kids:?}");
    assert_eq!(format!("{p}/{}", kids[0].name), go_key);
    assert!(kids[0].sequence.is_some());

    let election = Election::new(&session, &p).expect("election");
    let leader = election.leader().await.expect("leader").expect("a leader");
    assert_eq!(leader.value, b"go-only");
    assert_eq!(leader.node, go_key);
    drop(go);
    session.close().await.expect("close");
}

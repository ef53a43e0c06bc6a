//! Authentication and ACLs, live: digest identities against `COORD_TEST_ZK`
//! (the plain server: ZooKeeper takes any digest credentials there), SASL
//! DIGEST-MD5 against a server of the test's own with a JAAS user
//! (a `coord_conformance::server::TestServer`). What a user relies on: a foreign identity (or
//! none) cannot delete another identity's lock node; `ZkAcl::Open` really
//! opens it; world-read lets others read but not write; every node coord
//! makes (chroot, directories, contender nodes, guarded creates) carries
//! the configured ACL; the identity survives a reconnection; a refused
//! SASL login is `Unauthenticated`, at once, and no password shows in any
//! error or `Debug`. A wrong digest password cannot be refused at connect
//! (ZooKeeper takes any digest credentials): it is another identity, and
//! the nodes of the right one refuse it (tested as "the impostor").

mod common;

use std::time::Duration;

use coord_conformance::fault::{Fault, FaultProxy};
use coord_core::recipes::Lock;
use coord_core::{CreateMode, Error, Op, Session, SessionState};
use coord_zk::{ZkAcl, ZkOptions};
use tokio::time::Instant;
use zookeeper_client as zk;

use coord_conformance::server::{TestServer, ZooKeeper};

/// A fresh name, so runs and tests never share nodes or identities.
fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    )
}

async fn open(options: &ZkOptions) -> Session {
    coord_zk::connect(options.clone())
        .await
        .unwrap_or_else(|e| panic!("cannot open a session on {}: {e}", options.hosts()))
}

/// A raw client to read ACLs with, without credentials or with a digest
/// `user:password` (getAcl needs READ on the node).
async fn raw(hosts: &str, digest: Option<&str>) -> zk::Client {
    let mut connector = zk::Client::connector().with_session_timeout(Duration::from_secs(4));
    if let Some(digest) = digest {
        connector = connector.with_auth("digest", digest.as_bytes());
    }
    connector
        .connect(hosts)
        .await
        .unwrap_or_else(|e| panic!("cannot connect a raw client to {hosts}: {e}"))
}

/// The node's ACL as `(scheme, id, permission)`, sorted.
async fn acl_of(client: &zk::Client, path: &str) -> Vec<(String, String, zk::Permission)> {
    let (acls, _) = client
        .get_acl(path)
        .await
        .unwrap_or_else(|e| panic!("getAcl {path}: {e}"));
    let mut acls: Vec<_> = acls
        .iter()
        .map(|a| (a.scheme().to_owned(), a.id().to_owned(), a.permission()))
        .collect();
    acls.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    acls
}

/// Assert `result` is `PermissionDenied` on `path`, saying the ACL refuses
/// this identity.
fn assert_denied<T: std::fmt::Debug>(result: coord_core::Result<T>, path: &str, what: &str) {
    assert_denied_at(result, |p| p == path, path, what)
}

/// As [`assert_denied`], for a path `is_path` accepts (a contender node's
/// name is made by the recipe).
fn assert_denied_at<T: std::fmt::Debug>(
    result: coord_core::Result<T>,
    is_path: impl Fn(&str) -> bool,
    path: &str,
    what: &str,
) {
    match result {
        Err(Error::PermissionDenied { path: p, reason }) => {
            assert!(is_path(&p), "{what}: the error names {p}, not {path}");
            assert!(
                reason.contains("ACL") && reason.contains("identity"),
                "{what}: {reason}"
            );
        }
        other => panic!("{what}: expected PermissionDenied on {path}, got {other:?}"),
    }
}

/// (a) A lock node made by identity A cannot be deleted by identity B, by a
/// session without credentials, or by A's user with a wrong password (to
/// ZooKeeper, another identity); nor can they join the lock (CREATE on the
/// directory). The holder's lock is untouched by all that and still works;
/// a second session of A's own identity can delete it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_identity_cannot_delete_a_lock_node() {
    let base = common::options_from_env();
    let alice = unique("alice");
    let a_opts = base.clone().digest(&alice, "pw-of-alice");
    assert_eq!(a_opts.acl(), ZkAcl::CreatorAllWorldRead);
    let a = open(&a_opts).await;
    let lock_path = format!("/{}/lock", unique("coord-auth"));
    let lock = Lock::new(&a, &lock_path).expect("lock");
    let guard = lock.acquire().await.expect("A acquires");
    let node = guard.node_path().to_owned();

    let b = open(&base.clone().digest(unique("bob"), "pw-of-bob")).await;
    let anonymous = open(&base).await;
    let impostor = open(&base.clone().digest(&alice, "not-alices-password")).await;
    for (who, session) in [
        ("identity B", &b),
        ("an unauthenticated session", &anonymous),
        ("A's user with a wrong password", &impostor),
    ] {
        assert_denied(
            session.delete(&node, None).await,
            &node,
            &format!("{who} deleting A's lock node"),
        );
        let theirs = Lock::new(session, &lock_path).expect("lock");
        let prefix = format!("{lock_path}/");
        assert_denied_at(
            theirs.try_acquire().await.map(|g| g.is_some()),
            |p| p.starts_with(&prefix),
            &prefix,
            &format!("{who} joining A's lock (a create in its directory)"),
        );
        // World-read: they can see who holds it.
        assert!(
            session.exists(&node).await.expect("read"),
            "{who} sees the node"
        );
    }

    // The holder's lock still works: its node is there, a guarded write
    // goes through, and a second contender of the same identity is kept
    // out while it holds.
    assert!(a.exists(&node).await.expect("exists"));
    let data_path = format!("{lock_path}-data");
    guard
        .write(Op::Create {
            path: data_path.clone(),
            data: b"x".to_vec(),
            mode: CreateMode::Persistent,
        })
        .await
        .expect("the holder's guarded write");
    let a2 = open(&a_opts).await;
    let same_identity = Lock::new(&a2, &lock_path).expect("lock");
    assert!(
        same_identity.try_acquire().await.expect("try").is_none(),
        "still held"
    );

    // A's identity may delete it (here from another of its sessions): the
    // holder learns it lost the lock.
    a2.delete(&node, None)
        .await
        .expect("A's identity deletes A's node");
    let lost = tokio::time::timeout(Duration::from_secs(10), guard.lost())
        .await
        .expect("the holder notices");
    assert!(matches!(lost, Error::LockLost { .. }), "{lost:?}");
    a.delete(&data_path, None).await.expect("clean up");
    drop(guard);
    for s in [a, a2, b, anonymous, impostor] {
        s.close().await.expect("close");
    }
}

/// (b) With `ZkAcl::Open` another identity may delete the node: the
/// compatibility setting really opens it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_acl_lets_anyone_delete() {
    let base = common::options_from_env();
    let a_opts = base
        .clone()
        .digest(unique("alice"), "pw-of-alice")
        .with_acl(ZkAcl::Open);
    let a = open(&a_opts).await;
    let lock_path = format!("/{}/lock", unique("coord-auth"));
    let guard = Lock::new(&a, &lock_path)
        .expect("lock")
        .acquire()
        .await
        .expect("acquire");
    let node = guard.node_path().to_owned();
    let hosts = base.hosts().to_owned();
    let client = raw(&hosts, None).await;
    let open = vec![("world".to_owned(), "anyone".to_owned(), zk::Permission::ALL)];
    assert_eq!(acl_of(&client, &node).await, open);
    assert_eq!(acl_of(&client, &lock_path).await, open);

    let b = open_session_b(&base).await;
    b.delete(&node, None)
        .await
        .expect("B may delete under ZkAcl::Open");
    let lost = tokio::time::timeout(Duration::from_secs(10), guard.lost())
        .await
        .expect("the holder notices");
    assert!(matches!(lost, Error::LockLost { .. }), "{lost:?}");
    drop(guard);
    a.close().await.expect("close");
    b.close().await.expect("close");
}

async fn open_session_b(base: &ZkOptions) -> Session {
    open(&base.clone().digest(unique("bob"), "pw-of-bob")).await
}

/// (c) World-read: with `CreatorAllWorldRead` identity B (and a session
/// without credentials) reads the data and lists the directory, but cannot
/// write it; with `CreatorAll` B cannot even read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn world_read_lets_others_read_but_creator_all_does_not() {
    let base = common::options_from_env();
    let b = open_session_b(&base).await;
    let anonymous = open(&base).await;
    for acl in [ZkAcl::CreatorAllWorldRead, ZkAcl::CreatorAll] {
        let a = open(
            &base
                .clone()
                .digest(unique("alice"), "pw-of-alice")
                .with_acl(acl),
        )
        .await;
        let dir = format!("/{}", unique("coord-auth"));
        let path = format!("{dir}/node");
        a.create(&path, b"hello", CreateMode::Ephemeral)
            .await
            .expect("create");
        assert_eq!(
            a.get(&path).await.expect("get").expect("there").data,
            b"hello"
        );
        for (who, session) in [("B", &b), ("anonymous", &anonymous)] {
            match acl {
                ZkAcl::CreatorAllWorldRead => {
                    let node = session.get(&path).await.expect("world-readable");
                    assert_eq!(node.expect("there").data, b"hello", "{who}");
                    let children = session.children(&dir).await.expect("list");
                    assert_eq!(children.len(), 1, "{who}");
                }
                _ => {
                    assert_denied(session.get(&path).await, &path, &format!("{who} reading"));
                    assert_denied(
                        session.children(&dir).await,
                        &dir,
                        &format!("{who} listing"),
                    );
                }
            }
            assert_denied(
                session.set(&path, b"changed", None).await,
                &path,
                &format!("{who} writing under {acl:?}"),
            );
            assert_denied(
                session.delete(&path, None).await,
                &path,
                &format!("{who} deleting under {acl:?}"),
            );
        }
        assert_eq!(
            a.get(&path).await.expect("get").expect("there").data,
            b"hello"
        );
        a.close().await.expect("close");
    }
    b.close().await.expect("close");
    anonymous.close().await.expect("close");
}

/// Every node coord makes carries the ACL: the chroot (and its missing
/// ancestors), the container directories, an ephemeral-sequential lock
/// node, a persistent node and a node made by a guarded write (a multi).
/// The server stores `auth` as the creator's own id:
/// `digest:<user>:<hash>`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_node_coord_makes_carries_the_acl() {
    let base = common::options_from_env();
    let hosts = base.hosts().to_owned();
    let user = unique("alice");
    let client = raw(&hosts, Some(&format!("{user}:pw-of-alice"))).await;
    for acl in [ZkAcl::CreatorAllWorldRead, ZkAcl::CreatorAll] {
        let top = format!("/{}", unique("coord-auth"));
        let chroot = format!("{top}/app");
        let options = base
            .clone()
            .with_chroot(&chroot)
            .digest(&user, "pw-of-alice")
            .with_acl(acl);
        let a = open(&options).await;
        let guard = Lock::new(&a, "/locks/job")
            .expect("lock")
            .acquire()
            .await
            .expect("acquire");
        a.create("/data/persistent", b"p", CreateMode::Persistent)
            .await
            .expect("create");
        guard
            .write(Op::Create {
                path: "/fenced/made".into(),
                data: b"f".to_vec(),
                mode: CreateMode::Persistent,
            })
            .await
            .expect("guarded create");
        let made = [
            top.clone(),
            chroot.clone(),
            format!("{chroot}/locks"),
            format!("{chroot}/locks/job"),
            format!("{chroot}{}", guard.node_path()),
            format!("{chroot}/data"),
            format!("{chroot}/data/persistent"),
            format!("{chroot}/fenced/made"),
        ];
        let mut seen_id = None;
        for path in &made {
            let acls = acl_of(&client, path).await;
            let creator = acls
                .iter()
                .find(|(scheme, _, _)| scheme == "digest")
                .unwrap_or_else(|| panic!("{path} ({acl:?}): no creator entry in {acls:?}"));
            assert!(
                creator.1.starts_with(&format!("{user}:")),
                "{path}: {acls:?}"
            );
            assert!(!creator.1.contains("pw-of-alice"), "only a hash is stored");
            assert_eq!(creator.2, zk::Permission::ALL, "{path}: {acls:?}");
            let expected_len = match acl {
                ZkAcl::CreatorAllWorldRead => {
                    assert!(
                        acls.contains(&("world".into(), "anyone".into(), zk::Permission::READ)),
                        "{path}: {acls:?}"
                    );
                    2
                }
                _ => 1,
            };
            assert_eq!(acls.len(), expected_len, "{path} ({acl:?}): {acls:?}");
            // One identity throughout.
            assert_eq!(seen_id.get_or_insert_with(|| creator.1.clone()), &creator.1);
        }
        // A foreign identity rooted at the same chroot cannot add to it.
        let b_opts = base
            .clone()
            .with_chroot(&chroot)
            .digest(unique("bob"), "pw-of-bob");
        let b = open(&b_opts).await;
        assert_denied(
            b.create("/theirs", b"", CreateMode::Ephemeral).await,
            "/theirs",
            "B creating in A's chroot",
        );
        guard.release().await.expect("release");
        for path in ["/data/persistent", "/fenced/made", "/data", "/fenced"] {
            // The directories are containers: the server may remove them
            // first.
            match a.delete(path, None).await {
                Ok(()) | Err(Error::NotFound { .. }) => {}
                Err(e) => panic!("clean up {path}: {e}"),
            }
        }
        a.close().await.expect("close");
        b.close().await.expect("close");
    }
}

/// The identity outlives a lost connection: the client sends the
/// credentials again on the new connection (else the create after the
/// reconnection would be refused, `InvalidACL`, and the delete of the node
/// made before it, `NoAuth`). `with_credentials` adds them to options for
/// a connect string; the server stores the creator as `scheme` and an id
/// starting with `id_prefix` (world-read lets a raw client read the ACL).
async fn identity_survives_a_reconnection(
    hosts: &str,
    with_credentials: impl Fn(ZkOptions) -> ZkOptions,
    (scheme, id_prefix): (&str, &str),
) {
    let proxy = FaultProxy::start(hosts).await;
    let options = with_credentials(
        ZkOptions::new(&proxy.addr().to_string()).with_session_timeout(Duration::from_secs(10)),
    );
    let dir = format!("/{}", unique("coord-auth"));
    let a = open(&options).await;
    let before = format!("{dir}/before");
    a.create(&before, b"", CreateMode::Ephemeral)
        .await
        .expect("create before");
    let connections = proxy.connections();
    let mut states = a.state_watch();
    proxy.cut();
    tokio::time::timeout(
        Duration::from_secs(10),
        states.wait_for(|s| *s == SessionState::Suspended),
    )
    .await
    .expect("suspended after the cut")
    .expect("state");
    proxy.heal();
    tokio::time::timeout(
        Duration::from_secs(10),
        states.wait_for(|s| *s == SessionState::Connected),
    )
    .await
    .expect("connected again")
    .expect("state");
    assert!(proxy.connections() > connections, "a new connection");
    let after = format!("{dir}/after");
    a.create(&after, b"", CreateMode::Ephemeral)
        .await
        .expect("a creator ACL after the reconnection: the identity is still there");
    let client = raw(hosts, None).await;
    let acls = acl_of(&client, &after).await;
    assert!(
        acls.iter().any(|(s, id, p)| s == scheme
            && id.starts_with(id_prefix)
            && *p == zk::Permission::ALL),
        "{acls:?}"
    );
    a.delete(&before, None)
        .await
        .expect("the node made before the reconnection is still ours");
    a.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digest_identity_survives_a_reconnection() {
    let base = common::options_from_env();
    let user = unique("alice");
    identity_survives_a_reconnection(
        base.hosts(),
        |o| o.digest(&user, "pw-of-alice"),
        ("digest", &format!("{user}:")),
    )
    .await;
}

/// Two sessions of the same identity share a lock under each creator ACL:
/// mutual exclusion holds, the waiter is granted the lock when the holder
/// releases it (it may delete nodes in the directory its peer made).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_of_one_identity_share_a_lock() {
    let base = common::options_from_env();
    for acl in [ZkAcl::CreatorAllWorldRead, ZkAcl::CreatorAll] {
        let options = base
            .clone()
            .digest(unique("svc"), "pw-of-svc")
            .with_acl(acl);
        let one = open(&options).await;
        let two = open(&options).await;
        let lock_path = format!("/{}/lock", unique("coord-auth"));
        let first = Lock::new(&one, &lock_path).expect("lock");
        let second = Lock::new(&two, &lock_path).expect("lock");
        let held = first.acquire().await.expect("first acquires");
        assert!(
            second.try_acquire().await.expect("try").is_none(),
            "{acl:?}: mutual exclusion"
        );
        let waiter = tokio::spawn(async move {
            let guard = second.acquire().await;
            (guard, second)
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!waiter.is_finished(), "{acl:?}: the waiter waits");
        held.release().await.expect("release");
        let (guard, _second) = tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .expect("granted after the release")
            .expect("task");
        let guard = guard.expect("the second session acquires");
        assert!(
            first.try_acquire().await.expect("try").is_none(),
            "{acl:?}: now the first is kept out"
        );
        guard.release().await.expect("release");
        one.close().await.expect("close");
        two.close().await.expect("close");
    }
}

/// Bad credentials and impossible ACLs are refused before any I/O (the
/// host is a black hole: a connect attempt would hang), and the password
/// shows nowhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_credentials_are_refused_before_any_io() {
    let base = ZkOptions::new("192.0.2.1:2181");
    for options in [
        base.clone().digest("", "secret-pw-1"),
        base.clone().digest("us:er", "secret-pw-1"),
        base.clone().sasl_digest("", "secret-pw-1"),
        base.clone().with_acl(ZkAcl::CreatorAll),
        base.clone().with_acl(ZkAcl::CreatorAllWorldRead),
    ] {
        assert!(!format!("{options:?}").contains("secret-pw-1"));
        let result =
            tokio::time::timeout(Duration::from_secs(1), coord_zk::connect(options.clone()))
                .await
                .expect("refused at once, before any I/O");
        match result {
            Err(e @ Error::InvalidArgument(_)) => {
                assert!(!format!("{e} {e:?}").contains("secret-pw-1"), "{e:?}")
            }
            other => panic!("{options:?}: {other:?}"),
        }
    }
}

/// (e) SASL DIGEST-MD5 against a server with a JAAS user: the right
/// password connects, and the nodes carry `sasl:<user>` (creator) and
/// world-read; a digest identity cannot delete them. A wrong password or
/// an unknown user is `Unauthenticated` at once (the server ends the
/// session with AUTH_FAILED; not a timeout), naming what to fix and never
/// the password. The SASL identity, too, is sent again after a lost
/// connection. (d) for the refusing backend: the password appears in no
/// error nor `Debug`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sasl_digest_md5_logins() {
    let server = TestServer::start(ZooKeeper::with_sasl(&[("coord", "sasl-right-pw")])).await;
    let base = ZkOptions::new(&server.address()).with_session_timeout(Duration::from_secs(10));

    let good = base.clone().sasl_digest("coord", "sasl-right-pw");
    assert!(!format!("{good:?}").contains("sasl-right-pw"));
    let a = open(&good).await;
    let lock_path = format!("/{}/lock", unique("coord-auth"));
    let guard = Lock::new(&a, &lock_path)
        .expect("lock")
        .acquire()
        .await
        .expect("acquire over SASL");
    let node = guard.node_path().to_owned();
    let client = raw(&server.address(), None).await;
    for path in [&node, &lock_path] {
        assert_eq!(
            acl_of(&client, path).await,
            vec![
                ("sasl".into(), "coord".into(), zk::Permission::ALL),
                ("world".into(), "anyone".into(), zk::Permission::READ),
            ],
            "{path}"
        );
    }
    let b = open(&base.clone().digest("coord", "sasl-right-pw")).await;
    assert_denied(
        b.delete(&node, None).await,
        &node,
        "a digest identity deleting a SASL identity's node",
    );
    guard.release().await.expect("release");

    for (what, options) in [
        (
            "a wrong password",
            base.clone().sasl_digest("coord", "sasl-wrong-pw"),
        ),
        (
            "an unknown user",
            base.clone().sasl_digest("nobody", "sasl-wrong-pw"),
        ),
    ] {
        let started = Instant::now();
        let result = coord_zk::connect(options.clone()).await;
        let took = started.elapsed();
        match result {
            Err(e @ Error::Unauthenticated { backend: "zk", .. }) => {
                let shown = format!("{e} {e:?}");
                assert!(
                    shown.contains("password"),
                    "{what}: names what to fix: {shown}"
                );
                assert!(!shown.contains("sasl-wrong-pw"), "{what}: {shown}");
                assert!(!shown.contains("sasl-right-pw"), "{what}: {shown}");
            }
            Err(other) => panic!("{what}: expected Unauthenticated, got {other:?}"),
            Ok(_) => panic!("{what}: the session was opened"),
        }
        assert!(
            took < Duration::from_secs(5),
            "{what}: refused promptly, not by a timeout ({took:?})"
        );
    }
    identity_survives_a_reconnection(
        &server.address(),
        |o| o.sasl_digest("coord", "sasl-right-pw"),
        ("sasl", "coord"),
    )
    .await;
    a.close().await.expect("close");
    b.close().await.expect("close");
}

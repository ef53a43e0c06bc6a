//! etcd authentication, live on the secured etcd
//! (scripts/servers/etcd-secure.sh: mutual TLS, auth on, users root and
//! `coord`, auth tokens that expire after `COORD_TEST_ETCD_SECURE_TOKEN_TTL`
//! seconds of disuse). Users made here are made over root's account and
//! deleted at the end. Needs `COORD_TEST_ETCD_SECURE*` and
//! `COORD_TEST_CERTS`.

#![cfg(feature = "tls")]

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::secure::SecureEtcd;
use coord_conformance::fault::{Fault, FaultProxy};
use coord_core::{CreateMode, Error, SessionState, TlsOptions, TreeChange};
use coord_etcd::EtcdOptions;

const WAIT: Duration = Duration::from_secs(15);

fn unique(what: &str) -> String {
    format!(
        "{what}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    )
}

/// A wrong password: `Unauthenticated`, saying to check user:password,
/// never showing the password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_unauthenticated_with_a_hint() {
    let server = SecureEtcd::from_env();
    let secret = unique("wrong-pw-s3cret");
    for user in [server.user.clone(), unique("no-such-user")] {
        let options = EtcdOptions::new([server.url.clone()])
            .with_tls(server.tls())
            .with_user(user.clone(), secret.clone());
        let err = coord_etcd::connect(options)
            .await
            .map(|s| s.id())
            .expect_err("a wrong password was accepted");
        match &err {
            Error::Unauthenticated { backend, hint } => {
                assert_eq!(*backend, "etcd");
                assert!(hint.contains("user:password"), "{hint}");
            }
            other => panic!("{user}: expected Unauthenticated, got {other:?}"),
        }
        assert!(!err.is_retryable());
        for shown in [err.to_string(), format!("{err:?}")] {
            assert!(!shown.contains(&secret), "the password is shown: {shown}");
        }
    }
}

/// With client-certificate auth on, etcd takes a request without a token
/// as made by the user its certificate's CN names: `coord` here, so a
/// session without a password works, as that user.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_alone_authenticates_as_its_common_name() {
    let server = SecureEtcd::from_env();
    let options = EtcdOptions::new([server.url.clone()]).with_tls(server.tls());
    let session = coord_etcd::connect(options)
        .await
        .expect("a session authenticated by its certificate");
    let path = format!("/{}", unique("auth-cn"));
    session
        .create(&path, b"", CreateMode::Ephemeral)
        .await
        .expect("a write as the certificate's user");
    session.close().await.expect("close");
}

/// A client certificate signed by the test CA with the common name `cn`,
/// made with openssl in a directory of its own (removed on drop).
struct CertFor {
    dir: PathBuf,
}

impl CertFor {
    fn new(server: &SecureEtcd, cn: &str) -> Self {
        let dir = std::env::temp_dir().join(unique("coord-etcd-cert"));
        std::fs::create_dir_all(&dir).expect("make a temp dir");
        let run = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(&dir)
                .output()
                .expect("run openssl (scripts/servers/etcd-secure.sh installs it)");
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let ca = server.cert("ca.pem");
        let ca_key = server.cert("ca-key.pem");
        run(&[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            "key.pem",
        ]);
        run(&[
            "req",
            "-new",
            "-key",
            "key.pem",
            "-subj",
            &format!("/CN={cn}"),
            "-out",
            "req.csr",
        ]);
        std::fs::write(
            dir.join("ext"),
            "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n",
        )
        .expect("write the extensions");
        run(&[
            "x509",
            "-req",
            "-in",
            "req.csr",
            "-CA",
            ca.to_str().expect("utf-8 path"),
            "-CAkey",
            ca_key.to_str().expect("utf-8 path"),
            "-set_serial",
            "1",
            "-days",
            "2",
            "-sha256",
            "-extfile",
            "ext",
            "-out",
            "cert.pem",
        ]);
        CertFor { dir }
    }

    fn tls(&self, server: &SecureEtcd) -> TlsOptions {
        TlsOptions::new()
            .with_ca(server.cert("ca.pem"))
            .with_identity(self.dir.join("cert.pem"), self.dir.join("key.pem"))
    }
}

impl Drop for CertFor {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// No credentials on an auth-enabled server: a trusted certificate whose
/// common name is no user, and no password. etcd grants the lease (it
/// checks no permission for that) but refuses every key: the first write
/// fails with `PermissionDenied` naming the path, never succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_credentials_are_refused() {
    let server = SecureEtcd::from_env();
    let cert = CertFor::new(&server, &unique("nobody"));
    let options = EtcdOptions::new([server.url.clone()]).with_tls(cert.tls(&server));
    let path = format!("/{}", unique("auth-nobody"));
    let outcome = match coord_etcd::connect(options).await {
        Ok(session) => {
            let r = session.create(&path, b"", CreateMode::Persistent).await;
            let _ = session.close().await;
            r.map(|_| ())
        }
        Err(e) => Err(e),
    };
    match outcome {
        Err(Error::PermissionDenied { path: p, reason }) => {
            assert_eq!(p, path);
            assert!(reason.contains("permission denied"), "{reason}");
        }
        other => panic!("expected PermissionDenied, got {other:?}"),
    }
}

/// A new user (named from `name`) whose role grants read-write on
/// `prefix` only, made over root's account: its name, role and password.
/// The caller deletes them.
async fn limited_user(
    root: &mut etcd_client::Client,
    name: &str,
    prefix: &str,
) -> (String, String, String) {
    let user = unique(name);
    let role = format!("{user}-role");
    let password = unique("pw");
    root.role_add(role.as_str()).await.expect("add the role");
    root.role_grant_permission(
        role.as_str(),
        etcd_client::Permission::read_write(prefix).with_prefix(),
    )
    .await
    .expect("grant the prefix");
    root.user_add(user.as_str(), password.as_str(), None)
        .await
        .expect("add the user");
    root.user_grant_role(user.as_str(), role.as_str())
        .await
        .expect("grant the role");
    (user, role, password)
}

/// A user whose role grants only one prefix: writes there work, a write
/// elsewhere is `PermissionDenied` naming the path, and so are a read and
/// a read of many nodes among which it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_outside_the_users_role_is_permission_denied_naming_the_path() {
    let server = SecureEtcd::from_env();
    let mut root = server.raw_client("root", &server.root_password).await;
    let allowed = format!("/{}", unique("auth-allowed"));
    let (user, role, password) = limited_user(&mut root, "coord-limited", &allowed).await;

    let options = EtcdOptions::new([server.url.clone()])
        .with_tls(server.tls())
        .with_user(user.clone(), password.clone());
    let outcome = async {
        let session = coord_etcd::connect(options).await?;
        session
            .create(&format!("{allowed}/in"), b"", CreateMode::Ephemeral)
            .await?;
        let elsewhere = format!("/{}/out", unique("auth-denied"));
        let denied = session.create(&elsewhere, b"", CreateMode::Ephemeral).await;
        let read = session.get(&elsewhere).await;
        // Many at once: the batch is denied, and the error names the
        // path of the batch that was.
        let read_many = session
            .get_many(&[format!("{allowed}/in"), elsewhere.clone()])
            .await;
        session.close().await?;
        Ok::<_, Error>((elsewhere, denied, read, read_many))
    }
    .await;

    // Clean up before asserting.
    let _ = root.user_delete(user.as_str()).await;
    let _ = root.role_delete(role.as_str()).await;

    let (elsewhere, denied, read, read_many) = outcome.expect("the allowed prefix works");
    for r in [denied.map(|_| ()), read.map(|_| ()), read_many.map(|_| ())] {
        match r {
            Err(Error::PermissionDenied { path, reason }) => {
                assert_eq!(path, elsewhere);
                assert!(reason.contains("grant"), "{reason}");
                assert!(!reason.contains(&password), "{reason}");
            }
            other => panic!("expected PermissionDenied, got {other:?}"),
        }
    }
}

/// etcd drops an auth token after `COORD_TEST_ETCD_SECURE_TOKEN_TTL`
/// seconds of disuse: a session idle longer than that goes on working (the
/// client authenticates again), requests and watches alike, and its lease
/// stays alive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_survive_the_expiry_of_their_token() {
    let server = SecureEtcd::from_env();
    let idle = Duration::from_secs(server.token_ttl + 2);
    let session = coord_etcd::connect(server.options())
        .await
        .expect("a session");
    let other = coord_etcd::connect(server.options())
        .await
        .expect("a second session");
    let dir = format!("/{}", unique("auth-token"));
    let node = format!("{dir}/node");
    session
        .create(&node, b"1", CreateMode::Ephemeral)
        .await
        .expect("create");

    // Idle past the token's life, then a watch.
    tokio::time::sleep(idle).await;
    let (_, changed) = session
        .get_watch(&node)
        .await
        .expect("a read after the token expired")
        .expect("the node is still there: the lease was kept alive");
    other.set(&node, b"2", None).await.expect("set");
    tokio::time::timeout(WAIT, changed)
        .await
        .expect("the watch fired")
        .expect("the watch after token expiry");

    // Idle again, then a children watch and writes.
    tokio::time::sleep(idle).await;
    let (children, added) = session
        .children_watch(&dir)
        .await
        .expect("a listing after the token expired");
    assert_eq!(children.len(), 1);
    other
        .create(&format!("{dir}/more"), b"", CreateMode::Ephemeral)
        .await
        .expect("create");
    tokio::time::timeout(WAIT, added)
        .await
        .expect("the children watch fired")
        .expect("the children watch after token expiry");
    tokio::time::sleep(idle).await;
    session
        .set(&node, b"3", None)
        .await
        .expect("a write after the token expired");
    assert_eq!(session.state(), SessionState::Connected);
    other.close().await.expect("close");
    session.close().await.expect("close");
}

/// A watch that has to be opened again after the server dropped the
/// session's auth token still fires. etcd checks a watch's permission when
/// the watch is created, with the token the stream opened with; a dropped
/// token gets every new watch cancelled ("permission denied"), and only a
/// unary request would have refreshed it. Here the token is dropped (the
/// user's password changed to itself, which invalidates its tokens at
/// once) and then the connection is cut, so the waiting watch must open
/// again with the dead token; the change made after that must reach it,
/// and a tree watch (opened again from where it was) reports it as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_opened_again_after_its_token_was_dropped_fires() {
    let server = SecureEtcd::from_env();
    let mut root = server.raw_client("root", &server.root_password).await;
    // A user of its own: dropping its tokens touches no other test.
    let dir = format!("/{}", unique("auth-rewatch"));
    let (user, role, password) = limited_user(&mut root, "coord-watch", &dir).await;

    let outcome = async {
        let proxy = FaultProxy::start(&server.host_port()).await;
        let options = EtcdOptions::new([format!("http://{}", proxy.addr())])
            .with_tls(server.tls())
            .with_user(user.clone(), password.clone())
            .with_session_timeout(Duration::from_secs(30));
        let session = coord_etcd::connect(options).await?;
        let other = coord_etcd::connect(server.options()).await?;
        let node = format!("{dir}/node");
        session.create(&node, b"1", CreateMode::Ephemeral).await?;
        let (_, changed) = session.get_watch(&node).await?.expect("the node just made");
        let changed = tokio::spawn(changed);
        let mut tree = session.watch_tree(&dir).await?;
        root.user_change_password(user.as_str(), password.as_str())
            .await
            .expect("drop the user's tokens");
        proxy.cut();
        proxy.heal();
        other.set(&node, b"2", None).await?;
        let fired = tokio::time::timeout(WAIT, changed).await;
        // The tree watch, opened again the same way, reports the set and
        // nothing else (no resync: no change was lost).
        let seen = tokio::time::timeout(WAIT, tree.next()).await;
        assert!(
            matches!(&seen, Ok(Some(Ok(TreeChange::Changed(p)))) if *p == node),
            "the tree watch after its token was dropped: {seen:?}"
        );
        let _ = other.close().await;
        let _ = session.close().await;
        Ok::<_, Error>(fired)
    }
    .await;

    // Clean up before asserting.
    let _ = root.user_delete(user.as_str()).await;
    let _ = root.role_delete(role.as_str()).await;

    outcome
        .expect("the session's requests")
        .expect("the watch did not fire after its token was dropped")
        .expect("the watch task")
        .expect("the watch");
}

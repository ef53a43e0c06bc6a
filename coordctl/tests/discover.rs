//! `coordctl discover register|list` against the real ZooKeeper, etcd,
//! Redis and PostgreSQL servers (COORD_TEST_ZK, COORD_TEST_ETCD,
//! COORD_TEST_REDIS, COORD_TEST_PG): each
//! test runs on each backend. Curator's side of the same commands is
//! `interop_discovery.rs`'s.

mod common;

use std::process::Stdio;

use common::*;
use coordination::ServiceInstance;
use nix::sys::signal::Signal;

/// `discover register` runs CMD with COORD_SERVICE_ID while the instance
/// is registered (Curator's JSON at BASE/NAME/ID, as `list` and `list
/// --json` show), exits with CMD's status and unregisters.
fn register_runs_cmd_and_list_shows_it(url: &str) {
    let base = unique("services");
    let dir = temp_dir();
    let (seen, stop) = (dir.join("id"), dir.join("stop"));
    let script =
        r#"echo "$COORD_SERVICE_ID" > "$1"; while [ ! -e "$2" ]; do sleep 0.05; done; exit 3"#;
    let mut c = coordctl(
        url,
        &[
            "discover",
            "register",
            "web",
            "--address",
            "10.0.0.1",
            "--port",
            "80",
            "--ssl-port",
            "443",
            "--payload",
            r#"{"zone":"a"}"#,
            "--id",
            "w1",
            "--base",
            &base,
            "--",
            "sh",
            "-c",
            script,
            "sh",
        ],
    );
    c.arg(&seen).arg(&stop);
    let mut reg = Running::start(c);
    assert_eq!(reg.line(30), "registered w1");
    assert_eq!(wait_for_file(&seen, 30), "w1\n");

    let list = |args: &[&str]| {
        let mut a = vec!["discover", "list"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["--base", &base]);
        let out = run(coordctl(url, &a), 30);
        assert!(out.status.success(), "{out:?}");
        stdout(&out)
    };
    assert_eq!(list(&["web"]), "w1 10.0.0.1 80\n");
    assert_eq!(list(&[]), "web w1 10.0.0.1 80\n");
    assert_eq!(list(&["nothing"]), "");
    let json = list(&["web", "--json"]);
    let i = ServiceInstance::from_json(json.trim_end().as_bytes()).expect("an instance");
    assert_eq!(
        (i.name.as_str(), i.id.as_str(), i.address.as_str()),
        ("web", "w1", "10.0.0.1")
    );
    assert_eq!((i.port, i.ssl_port), (Some(80), Some(443)));
    assert_eq!(i.payload, Some(serde_json::json!({"zone": "a"})));
    assert_eq!(
        format!("{}\n", String::from_utf8_lossy(&i.to_json())),
        json,
        "not Curator's layout"
    );
    let node = with_session(url, async |s| s.get(&format!("{base}/web/w1")).await);
    let node = node.expect("get").expect("the node");
    assert!(node.stat.ephemeral, "an instance is an ephemeral node");

    std::fs::write(&stop, "").expect("stop the command");
    assert_eq!(code(reg.wait(30)), Some(3), "CMD's status");
    assert_eq!(list(&["web"]), "", "still registered after CMD ended");
    let _ = std::fs::remove_dir_all(dir);
}

/// Without CMD it stays registered until a signal; a node deleted by
/// someone is registered again (and said on stderr); SIGTERM unregisters.
fn register_comes_back_after_a_delete(url: &str) {
    let base = unique("services");
    let dir = temp_dir();
    let err = dir.join("stderr");
    let mut c = coordctl(
        url,
        &[
            "discover",
            "register",
            "api",
            "--address",
            "h",
            "--port",
            "1",
            "--id",
            "a1",
            "--base",
            &base,
        ],
    );
    c.stderr(Stdio::from(
        std::fs::File::create(&err).expect("stderr file"),
    ));
    let mut reg = Running::start(c);
    assert_eq!(reg.line(30), "registered a1");
    let path = format!("{base}/api/a1");
    let stamp = |url: &str| {
        with_session(url, async |s| {
            s.get(&path).await.expect("get").map(|n| n.stat.stamp)
        })
    };
    let first = stamp(url).expect("registered");
    with_session(url, async |s| s.delete(&path, None).await).expect("someone deletes it");
    wait_until(30, "registered again", || {
        stamp(url).is_some_and(|s| s != first)
    });
    wait_until(30, "said on stderr", || {
        std::fs::read_to_string(&err).is_ok_and(|e| e.contains("lost the registration of api/a1"))
    });
    assert_eq!(code(reg.signal_and_wait(Signal::SIGTERM, 30)), Some(143));
    assert_eq!(stamp(url), None, "still registered after SIGTERM");
    let _ = std::fs::remove_dir_all(dir);
}

/// What Curator could not read, or no path can hold, is a usage error
/// (exit 2) before anything is registered.
fn bad_arguments_are_usage_errors(url: &str) {
    let base = unique("services");
    for (name, payload) in [("api", "[1,2]"), ("api", "not json"), ("a/b", "{}")] {
        let out = run(
            coordctl(
                url,
                &[
                    "discover",
                    "register",
                    name,
                    "--address",
                    "h",
                    "--port",
                    "1",
                    "--payload",
                    payload,
                    "--base",
                    &base,
                    "--",
                    "true",
                ],
            ),
            30,
        );
        assert_eq!(code(out.status), Some(2), "{name} {payload}: {out:?}");
    }
    assert!(children(url, &base).is_empty(), "something was registered");
}

macro_rules! on_backend {
    ($backend:ident, $url:path) => {
        mod $backend {
            #[test]
            fn register_runs_cmd_and_list_shows_it() {
                super::register_runs_cmd_and_list_shows_it(&$url());
            }

            #[test]
            fn register_comes_back_after_a_delete() {
                super::register_comes_back_after_a_delete(&$url());
            }

            #[test]
            fn bad_arguments_are_usage_errors() {
                super::bad_arguments_are_usage_errors(&$url());
            }
        }
    };
}

on_backend!(zk, crate::common::zk_url);
on_backend!(etcd, crate::common::etcd_url);
on_backend!(redis, crate::common::redis_url);
on_backend!(pg, crate::common::pg_url);

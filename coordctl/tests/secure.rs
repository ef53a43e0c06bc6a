//! The real coordctl binary against the secured servers scripts/test-all
//! starts: a ZooKeeper with only a TLS client port (mutual TLS) and digest
//! auth, a TLS-only etcd (mutual TLS) with authentication on, a TLS-only
//! Redis (mutual TLS) whose `coord` user has no admin commands, and a
//! PostgreSQL that takes only TLS with a client certificate and a password.
//! Everything goes through the URL, as a user writes it:
//! `?ca=…&cert=…&key=…`, `rediss://`, `user:password@`. Each refusal must be typed (exit 7, or 5
//! for a plaintext client), prompt, say what to fix, and never show the
//! password. None skips: an unset variable fails the test.

mod common;

use std::time::{Duration, Instant};

use common::*;

/// A secured server's URL parts, from the environment.
struct Secured {
    scheme: &'static str,
    hostport: String,
    user: String,
    password: String,
    certs: String,
}

fn env(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run these tests through scripts/test-all, which starts the secured servers")
    })
}

impl Secured {
    fn new(backend: &str) -> Self {
        let prefix = format!("COORD_TEST_{backend}_SECURE");
        let addr = env(&prefix);
        if backend == "PG" {
            return Secured::from_pg_url(&addr);
        }
        let hostport = addr
            .rsplit("://")
            .next()
            .unwrap_or_default()
            .trim_end_matches('/')
            .to_owned();
        Secured {
            scheme: match backend {
                "ZK" => "zk",
                "ETCD" => "etcd",
                _ => "rediss",
            },
            hostport,
            user: env(&format!("{prefix}_USER")),
            password: env(&format!("{prefix}_PASSWORD")),
            certs: env("COORD_TEST_CERTS"),
        }
    }

    /// COORD_TEST_PG_SECURE is a whole URL,
    /// `postgres://coord:PW@127.0.0.1:PORT/coord`: the host part keeps
    /// the database.
    fn from_pg_url(url: &str) -> Self {
        let rest = url
            .split_once("://")
            .map_or(url, |(_, r)| r)
            .trim_end_matches('/');
        let (info, hostport) = rest
            .rsplit_once('@')
            .unwrap_or_else(|| panic!("COORD_TEST_PG_SECURE has no user: {url}"));
        let (user, password) = info
            .split_once(':')
            .unwrap_or_else(|| panic!("COORD_TEST_PG_SECURE has no password"));
        Secured {
            scheme: "postgres",
            hostport: hostport.to_owned(),
            user: user.to_owned(),
            password: password.to_owned(),
            certs: env("COORD_TEST_CERTS"),
        }
    }

    /// The URL with `password`, and the TLS parameters given (`ca`,
    /// `cert`, `key`: file names in the certificate directory).
    fn url(&self, password: &str, files: &[(&str, &str)]) -> String {
        let query: Vec<String> = files
            .iter()
            .map(|(k, f)| format!("{k}={}/{f}", self.certs))
            .collect();
        let query = if query.is_empty() {
            String::new()
        } else {
            format!("?{}", query.join("&"))
        };
        format!(
            "{}://{}:{}@{}{query}",
            self.scheme,
            self.user,
            encode(password),
            self.hostport
        )
    }

    /// Everything right: the CA, the client certificate, the password.
    fn good(&self) -> String {
        self.url(&self.password, MUTUAL)
    }
}

const MUTUAL: &[(&str, &str)] = &[
    ("ca", "ca.pem"),
    ("cert", "client.pem"),
    ("key", "client-key.pem"),
];

/// %-encode everything but unreserved characters.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// `coordctl lock` through the secured server runs its command while
/// holding the lock, and `inspect` then shows the lock free again.
fn a_lock_works(backend: &str) {
    let s = Secured::new(backend);
    let path = unique("secure-lock");
    let out = run(
        coordctl(
            &s.good(),
            &["lock", &path, "--timeout", "30s", "--", "echo", "held"],
        ),
        60,
    );
    assert!(out.status.success(), "{backend}: lock failed: {out:?}");
    assert_eq!(stdout(&out).trim(), "held", "{out:?}");
    assert!(!stderr(&out).contains(&s.password), "{out:?}");
}

/// Run `url` through `coordctl lock` and expect it refused with `want`
/// within 30 s, the message containing one of `hints`, and never the
/// password.
fn refused(backend: &str, what: &str, url: &str, want: i32, hints: &[&str], password: &str) {
    let started = Instant::now();
    let out = run(
        coordctl(url, &["lock", &unique("refused"), "--", "true"]),
        60,
    );
    let err = stderr(&out);
    assert_eq!(
        code(out.status),
        Some(want),
        "{backend}, {what}: expected exit {want}, got {out:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{backend}, {what}: the refusal took {:?}",
        started.elapsed()
    );
    let lower = err.to_lowercase();
    assert!(
        hints.iter().any(|h| lower.contains(h)),
        "{backend}, {what}: the message names none of {hints:?}: {err}"
    );
    assert!(
        !err.contains(password),
        "{backend}, {what}: the password is printed: {err}"
    );
}

/// The refusals a user meets when one setting is wrong, each with what to
/// fix: a wrong password, a missing client certificate, a CA that does not
/// sign the server's certificate, and no TLS at all.
fn each_wrong_setting_is_refused_with_a_hint(backend: &str) {
    let s = Secured::new(backend);
    let wrong = "Wr0ng-pa/ss?#@word";
    // ZooKeeper takes any digest credentials (a wrong password is just
    // another identity, which creator ACLs then refuse: coord-zk's
    // tests/auth.rs); its SASL login is what refuses a wrong password.
    let mut wrong_url = s.url(wrong, MUTUAL);
    if backend == "ZK" {
        wrong_url.push_str("&auth=sasl");
    }
    refused(
        backend,
        "a wrong password",
        &wrong_url,
        7,
        &["password", "credential"],
        wrong,
    );
    refused(
        backend,
        "no client certificate",
        &s.url(&s.password, &[("ca", "ca.pem")]),
        7,
        &["cert="],
        &s.password,
    );
    refused(
        backend,
        "an untrusted server certificate",
        &s.url(
            &s.password,
            &[
                ("ca", "rogue-ca.pem"),
                ("cert", "client.pem"),
                ("key", "client-key.pem"),
            ],
        ),
        7,
        &["ca="],
        &s.password,
    );
    let plain = match backend {
        "REDIS" => format!("redis://{}:{}@{}", s.user, encode(&s.password), s.hostport),
        _ => format!(
            "{}://{}:{}@{}",
            s.scheme,
            s.user,
            encode(&s.password),
            s.hostport
        ),
    };
    let out = run(
        coordctl(&plain, &["lock", &unique("plain"), "--", "true"]),
        60,
    );
    assert!(
        !out.status.success(),
        "{backend}: a plaintext client got through a TLS-only port: {out:?}"
    );
    assert!(
        stderr(&out).to_lowercase().contains("tls"),
        "{backend}: a plaintext client is not told the server may need TLS: {out:?}"
    );
    assert!(!stderr(&out).contains(&s.password), "{out:?}");
}

#[test]
fn zk_lock_through_tls_and_digest_auth() {
    a_lock_works("ZK");
}

#[test]
fn etcd_lock_through_mutual_tls_and_a_password() {
    a_lock_works("ETCD");
}

#[test]
fn redis_lock_through_rediss_and_an_acl_user() {
    a_lock_works("REDIS");
}

#[test]
fn pg_lock_through_mutual_tls_and_a_password() {
    a_lock_works("PG");
}

#[test]
fn zk_refusals_say_what_to_fix() {
    each_wrong_setting_is_refused_with_a_hint("ZK");
}

#[test]
fn etcd_refusals_say_what_to_fix() {
    each_wrong_setting_is_refused_with_a_hint("ETCD");
}

#[test]
fn redis_refusals_say_what_to_fix() {
    each_wrong_setting_is_refused_with_a_hint("REDIS");
}

#[test]
fn pg_refusals_say_what_to_fix() {
    each_wrong_setting_is_refused_with_a_hint("PG");
}

/// `coordctl --help` tells how to write the TLS parameters.
#[test]
fn help_shows_the_tls_parameters() {
    let out = run(coordctl("mem://", &["--help"]), 10);
    let help = stdout(&out);
    for p in [
        "tls=true",
        "ca=PATH",
        "cert=PATH",
        "key=PATH",
        "server_name=NAME",
        "rediss://",
        "acl=",
        "postgres://",
        "sslmode=",
        "schema=",
    ] {
        assert!(help.contains(p), "--help does not mention {p}: {help}");
    }
    assert!(help.contains("7 "), "--help lists no exit status 7: {help}");
}

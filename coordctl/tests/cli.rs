//! The binary without a server: mem://, usage errors, help.

mod common;

use common::*;

/// `coordctl ARGS…` with the default URL.
fn bare(args: &[&str]) -> std::process::Command {
    let mut c = std::process::Command::new(BIN);
    c.env_remove("COORD_URL").args(args);
    c
}

#[test]
fn demo_runs_in_memory() {
    let out = run(bare(&["demo"]), 60);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("invariants held"));
}

#[test]
fn lock_runs_the_command_with_a_token_and_passes_its_status_on() {
    let out = run(
        coordctl(
            "mem://",
            &[
                "lock",
                "/l",
                "--",
                "sh",
                "-c",
                "echo $COORD_FENCING_TOKEN; exit 7",
            ],
        ),
        20,
    );
    assert_eq!(code(out.status), Some(7), "{out:?}");
    assert!(stdout(&out).trim().parse::<u64>().is_ok(), "{out:?}");
}

#[test]
fn a_missing_command_exits_127() {
    let out = run(
        coordctl("mem://", &["lock", "/l", "--", "/no/such/cmd"]),
        20,
    );
    assert_eq!(code(out.status), Some(127), "{out:?}");
}

#[test]
fn bad_urls_are_usage_errors_that_say_why() {
    for (url, says) in [
        ("zk://h:port", "not a port number"),
        ("nope", "expected <scheme>://"),
        ("rediss://u:secret@h?tls=false", "TLS"),
        ("etcd://u:secret@h?cert=/c.pem", "private key"),
        ("mem://?session_timeout=3", "unit"),
        ("postgres://u:secret@h/db?sslmode=prefer", "sslmode"),
        ("postgresql://u:secret@h/db?schema=Coord", "schema"),
        ("postgres://h/db", "needs a user"),
    ] {
        let out = run(coordctl(url, &["leader", "/e"]), 20);
        assert_eq!(code(out.status), Some(2), "{url}: {out:?}");
        assert!(stderr(&out).contains(says), "{url}: {out:?}");
        assert!(!stderr(&out).contains("secret"), "{url}: {out:?}");
    }
}

#[test]
fn no_leader_exits_1_and_queue_timeout_exits_3() {
    let out = run(coordctl("mem://", &["leader", "/e"]), 20);
    assert_eq!(code(out.status), Some(1), "{out:?}");
    let out = run(
        coordctl("mem://", &["queue", "pop", "/q", "--timeout", "100ms"]),
        20,
    );
    assert_eq!(code(out.status), Some(3), "{out:?}");
}

#[test]
fn help_documents_exit_codes_and_mem() {
    let out = run(bare(&["--help"]), 20);
    let help = stdout(&out);
    assert!(help.contains("Exit status"), "{help}");
    assert!(
        help.contains("only visible inside one coordctl process"),
        "{help}"
    );
    let out = run(bare(&["lock", "--help"]), 20);
    assert!(stdout(&out).contains("COORD_FENCING_TOKEN"));
    assert!(stdout(&out).contains("Exit status"));
}

#[test]
fn bad_arguments_exit_2() {
    for args in [
        &["lock", "/l"][..],
        &["lock", "/l", "--timeout", "5", "--", "true"],
        &["run-once", "j", "--", "true"],
        &["lock", "relative", "--", "true"],
    ] {
        let out = run(coordctl("mem://", args), 20);
        assert_eq!(code(out.status), Some(2), "{args:?}: {out:?}");
    }
}

/// Durations past the limits (they used to overflow and panic, exit 101)
/// are usage errors that say what the limit is, found before any I/O: the
/// URL here points at nothing, so any attempt to connect would fail
/// differently.
#[test]
fn durations_past_the_limits_are_usage_errors() {
    let nowhere = "zk://127.0.0.1:1";
    for (url, args, says) in [
        (
            nowhere,
            &["lock", "/l", "--timeout", "106751991167301d", "--", "true"][..],
            "at most 3650d",
        ),
        (
            nowhere,
            &["--session-timeout", "106751991167301d", "leader", "/e"],
            "at most 1d",
        ),
        (
            nowhere,
            &["run-once", "j", "--every", "106751991167301d", "--", "true"],
            "at most 3650d",
        ),
        (
            nowhere,
            &["queue", "pop", "/q", "--timeout", "99999999999999999999d"],
            "out of range",
        ),
        (
            "zk://127.0.0.1:1?session_timeout=106751991167301d",
            &["leader", "/e"],
            "maximum of 1d",
        ),
        (
            "mem://?session_timeout=25h",
            &["leader", "/e"],
            "maximum of 1d",
        ),
    ] {
        let out = run(coordctl(url, args), 20);
        assert_eq!(code(out.status), Some(2), "{url} {args:?}: {out:?}");
        assert!(stderr(&out).contains(says), "{url} {args:?}: {out:?}");
    }
}

/// `participants`, `revoke` and `lock` refuse what they cannot do before
/// any I/O: the URL points at nothing, so connecting would fail otherwise
/// (exit 5).
#[test]
fn participants_and_revoke_usage_errors_come_before_any_io() {
    let nowhere = "zk://127.0.0.1:1";
    for (args, says) in [
        (
            &["participants", "/p", "--kind", "bogus"][..],
            "invalid value",
        ),
        (
            &["participants", "/p", "--kind", "semaphore"],
            "--max-leases",
        ),
        (
            &[
                "participants",
                "/p",
                "--kind",
                "semaphore",
                "--max-leases",
                "0",
            ],
            "--max-leases",
        ),
        (
            &[
                "participants",
                "/p",
                "--kind",
                "semaphore",
                "--max-leases",
                "x",
            ],
            "--max-leases",
        ),
        (
            &["participants", "/p", "--max-leases", "2"],
            "--kind semaphore only",
        ),
        (&["participants", "relative"], "relative"),
        (&["participants", "/"], "/"),
        (&["revoke", "/p", "--kind", "semaphore"], "invalid value"),
        (&["revoke", "/p", "--kind", "election"], "invalid value"),
        (&["revoke", "relative"], "relative"),
        (&["lock", "/l", "--revocable"], "CMD"),
        (&["lock", "/l", "--leases", "0", "--", "true"], "--leases"),
        (&["lock", "/l", "--leases", "x", "--", "true"], "--leases"),
        (
            &["lock", "/l", "--shared", "--write", "--", "true"],
            "cannot be used with",
        ),
        (
            &["lock", "/l", "--leases", "2", "--revocable", "--", "true"],
            "cannot be used with",
        ),
        (
            &["lock", "/l", "--leases", "2", "--shared", "--", "true"],
            "cannot be used with",
        ),
        (
            &["lock", "/l", "--write", "--leases", "2", "--", "true"],
            "cannot be used with",
        ),
        (&["lock", "relative", "--write", "--", "true"], "relative"),
        (
            &["lock", "relative", "--leases", "2", "--", "true"],
            "relative",
        ),
    ] {
        let out = run(coordctl(nowhere, args), 20);
        assert_eq!(code(out.status), Some(2), "{args:?}: {out:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {out:?}");
    }
}

/// Nobody there: `participants` prints nothing and exits 0 (as `members`
/// does); `revoke` exits 1, saying so.
#[test]
fn participants_and_revoke_with_nobody_there() {
    for kind in ["lock", "rwlock", "simple", "election"] {
        let out = run(
            coordctl("mem://", &["participants", "/p", "--kind", kind]),
            20,
        );
        assert_eq!(code(out.status), Some(0), "{kind}: {out:?}");
        assert_eq!(stdout(&out), "", "{kind}");
    }
    let out = run(
        coordctl(
            "mem://",
            &[
                "participants",
                "/p",
                "--kind",
                "semaphore",
                "--max-leases",
                "3",
                "--json",
            ],
        ),
        20,
    );
    assert_eq!(code(out.status), Some(0), "{out:?}");
    assert_eq!(stdout(&out), "");
    for kind in ["lock", "rwlock", "simple"] {
        let out = run(coordctl("mem://", &["revoke", "/p", "--kind", kind]), 20);
        assert_eq!(code(out.status), Some(1), "{kind}: {out:?}");
        assert!(stderr(&out).contains("nobody holds"), "{kind}: {out:?}");
        assert_eq!(stdout(&out), "", "{kind}");
    }
}

#[test]
fn help_documents_participants_revoke_and_revocable() {
    let out = run(bare(&["lock", "--help"]), 20);
    assert!(stdout(&out).contains("--revocable"), "{out:?}");
    let out = run(bare(&["--help"]), 20);
    assert!(stdout(&out).contains("participants"), "{out:?}");
    assert!(stdout(&out).contains("revoke"), "{out:?}");
    let out = run(bare(&["revoke", "--help"]), 20);
    assert!(stdout(&out).contains("  6 "), "{out:?}");
}

/// `join --name` joins under that name; `join --rejoin` (with or without
/// `--name`) joins under one name, gives it to CMD and exits with CMD's
/// status; a bad name is a usage error (2); `--help` documents both and
/// that `--rejoin` never exits 4.
#[test]
fn join_name_and_rejoin() {
    let out = run(
        coordctl(
            "mem://",
            &[
                "join",
                "/g",
                "x",
                "--name",
                "alpha",
                "--",
                "sh",
                "-c",
                "echo member=$COORD_MEMBER",
            ],
        ),
        20,
    );
    assert_eq!(code(out.status), Some(0), "{out:?}");
    assert_eq!(stdout(&out), "joined alpha\nmember=alpha\n", "{out:?}");
    for named in [&["--name", "beta"][..], &[]] {
        let mut args = vec!["join", "/g", "x", "--rejoin"];
        args.extend_from_slice(named);
        args.extend(["--", "sh", "-c", "echo member=$COORD_MEMBER; exit 3"]);
        let out = run(coordctl("mem://", &args), 20);
        assert_eq!(code(out.status), Some(3), "{out:?}");
        let name = joined_name(&out);
        if let Some(given) = named.get(1) {
            assert_eq!(name, *given, "{out:?}");
        }
        assert!(
            stdout(&out).contains(&format!("member={name}\n")),
            "{out:?}"
        );
    }
    let out = run(
        coordctl(
            "mem://",
            &["join", "/g", "x", "--rejoin", "--name", "a/b", "--", "true"],
        ),
        20,
    );
    assert_eq!(code(out.status), Some(2), "{out:?}");
    let out = run(bare(&["join", "--help"]), 20);
    assert!(stdout(&out).contains("--rejoin"), "{out:?}");
    assert!(stdout(&out).contains("--name <NAME>"), "{out:?}");
    assert!(stdout(&out).contains("never from join --rejoin"), "{out:?}");
}

/// `--write` and `--leases N` in memory: the command runs under the hold,
/// and its status is passed on.
#[test]
fn write_and_leases_run_the_command() {
    for kind in [&["--write"][..], &["--leases", "3"]] {
        let mut args = vec!["lock", "/l"];
        args.extend_from_slice(kind);
        args.extend(["--", "sh", "-c", "echo $COORD_FENCING_TOKEN; exit 7"]);
        let out = run(coordctl("mem://", &args), 20);
        assert_eq!(code(out.status), Some(7), "{kind:?}: {out:?}");
        assert!(
            stdout(&out).trim().parse::<u64>().is_ok(),
            "{kind:?}: {out:?}"
        );
    }
    let out = run(bare(&["lock", "--help"]), 20);
    assert!(stdout(&out).contains("--write"), "{out:?}");
    assert!(stdout(&out).contains("--leases <N>"), "{out:?}");
}

/// Each command that coordinates processes warns on stderr when it runs
/// on mem:// (from --url, COORD_URL or the default), saying that nothing
/// is shared and how to pass a server; `demo` does not, nor does `-q`.
/// The warning never reaches stdout.
#[test]
fn cross_process_commands_warn_on_mem() {
    let warned = |o: &std::process::Output| {
        let e = stderr(o);
        e.contains("runs on mem://")
            && e.contains("no other process sees it")
            && e.contains("--url")
            && e.contains("COORD_URL")
    };
    for args in [
        &["lock", "/l", "--", "true"][..],
        &["queue", "len", "/q"],
        &["queue", "push", "/q", "x"],
        &["queue", "pop", "/q", "--timeout", "0s"],
        &["members", "/g"],
        &["counter", "/c", "get"],
        &["leader", "/e"],
        &["participants", "/p"],
        &["revoke", "/p"],
        &["inspect", "/p"],
        &["run-once", "j", "--every", "1s", "--", "false"],
        &["join", "/g", "x", "--", "true"],
        &["elect", "/e", "x", "--", "true"],
    ] {
        let mut c = coordctl("mem://", args);
        if args[0] == "run-once" {
            // It keeps running: the warning comes first, then stop it.
            let mut r = Running::start({
                c.stderr(std::process::Stdio::piped());
                c
            });
            let mut err = r.child.stderr.take().expect("stderr");
            let mut first = String::new();
            {
                use std::io::BufRead;
                std::io::BufReader::new(&mut err)
                    .read_line(&mut first)
                    .expect("a line");
            }
            assert!(first.contains("runs on mem://"), "{first}");
            r.signal_and_wait(nix::sys::signal::Signal::SIGTERM, 20);
            continue;
        }
        let out = run(c, 20);
        assert!(warned(&out), "{args:?}: {out:?}");
        assert!(!stdout(&out).contains("mem://"), "{args:?}: {out:?}");
    }
    // The default URL and COORD_URL warn the same.
    assert!(warned(&run(bare(&["queue", "len", "/q"]), 20)));
    let mut c = bare(&["queue", "len", "/q"]);
    c.env("COORD_URL", "mem://");
    assert!(warned(&run(c, 20)));
    // -q silences it; demo is meant for mem://.
    let out = run(coordctl("mem://", &["-q", "queue", "len", "/q"]), 20);
    assert_eq!(stderr(&out), "", "{out:?}");
    assert_eq!(stdout(&out), "0\n");
    let out = run(bare(&["demo"]), 60);
    assert!(!stderr(&out).contains("runs on mem://"), "{out:?}");
}

/// Logging goes to stderr, never stdout: by default only warnings (the
/// library's "acquired" and "released" lines are info), `-v` shows them,
/// `-vvv` shows debug lines too, RUST_LOG chooses when neither -v nor -q is
/// given, and `-q` leaves stderr empty. stdout is the command's output
/// alone every time.
#[test]
fn logs_go_to_stderr_by_verbosity_and_rust_log() {
    let lock = |flags: &[&str], rust_log: Option<&str>| {
        let mut args = flags.to_vec();
        args.extend(["lock", "/l", "--", "echo", "out"]);
        let mut c = coordctl("mem://", &args);
        c.env_remove("RUST_LOG");
        if let Some(v) = rust_log {
            c.env("RUST_LOG", v);
        }
        let out = run(c, 20);
        assert_eq!(code(out.status), Some(0), "{flags:?}: {out:?}");
        assert_eq!(stdout(&out), "out\n", "{flags:?} {rust_log:?}: {out:?}");
        stderr(&out)
    };
    let acquired = |e: &str| e.contains("acquired") && e.contains("released");
    let default = lock(&[], None);
    assert!(!acquired(&default), "{default}");
    assert!(default.contains("runs on mem://"), "{default}");
    let v = lock(&["-v"], None);
    assert!(acquired(&v), "{v}");
    assert!(!v.contains("DEBUG"), "{v}");
    let vvv = lock(&["-vvv"], None);
    assert!(acquired(&vvv) && vvv.contains("DEBUG"), "{vvv}");
    let env = lock(&[], Some("info"));
    assert!(acquired(&env), "{env}");
    let env_off = lock(&[], Some("error"));
    assert!(!acquired(&env_off), "{env_off}");
    // -v wins over RUST_LOG.
    let both = lock(&["-v"], Some("error"));
    assert!(acquired(&both), "{both}");
    assert_eq!(lock(&["-q"], Some("trace")), "");
    let out = run(coordctl("mem://", &["-q", "-v", "leader", "/e"]), 20);
    assert_eq!(code(out.status), Some(2), "{out:?}");
}

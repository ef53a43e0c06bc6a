//! The binary's verdicts: `check` exits 0 on a clean history, 1 on a
//! violation (and the reverse with `--expect-violation`); `run` refuses
//! `--backend mem` and a malformed `--services` before doing anything.

use std::path::{Path, PathBuf};
use std::process::Command;

use coord_nemesis::history::{Event, Kind};

const BIN: &str = env!("CARGO_BIN_EXE_coord-nemesis");

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("coord-nemesis-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("a temp dir");
    d
}

fn write(dir: &Path, file: &str, events: &[Event]) {
    let text: String = events.iter().map(|e| e.to_json() + "\n").collect();
    std::fs::write(dir.join(file), text).expect("write a history file");
}

/// One worker's increment from `read`, and the final read `fin`.
fn history(dir: &Path, read: u64, fin: u64) {
    let w = |t, kind, f| Event::new(t, "w0.1", kind, f);
    write(
        dir,
        "w0.1.jsonl",
        &[
            w(10, Kind::Invoke, "acquire"),
            w(11, Kind::Ok, "acquire").token(5),
            w(12, Kind::Invoke, "read"),
            w(13, Kind::Ok, "read").value(read).rtoken(0),
            w(14, Kind::Invoke, "write").token(5).value(read + 1),
            w(15, Kind::Ok, "write").token(5).value(read + 1),
            w(16, Kind::Invoke, "release"),
            w(17, Kind::Ok, "release"),
        ],
    );
    let n = |t, kind, f| Event::new(t, "nemesis", kind, f);
    write(
        dir,
        "nemesis.jsonl",
        &[
            n(20, Kind::Invoke, "final"),
            n(21, Kind::Ok, "final").value(fin).rtoken(5),
            n(22, Kind::Ok, "queue-final").n(0),
        ],
    );
}

fn check(dir: &Path, expect: bool) -> (i32, String) {
    let mut cmd = Command::new(BIN);
    cmd.arg("check").arg(dir);
    if expect {
        cmd.arg("--expect-violation");
    }
    let out = cmd.output().expect("run coord-nemesis check");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn check_exits_by_verdict() {
    let clean = dir("clean");
    history(&clean, 0, 1);
    let (code, out) = check(&clean, false);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("violations: 0"), "{out}");
    assert_eq!(check(&clean, true).0, 1);

    let lost = dir("lost");
    history(&lost, 0, 0);
    let (code, out) = check(&lost, false);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("[lost-update]"), "{out}");
    assert_eq!(check(&lost, true).0, 0);

    let _ = std::fs::remove_dir_all(clean);
    let _ = std::fs::remove_dir_all(lost);
}

#[test]
fn mem_is_refused() {
    let d = dir("mem");
    let out = Command::new(BIN)
        .args(["run", "--backend", "mem", "--servers", "x", "--history-dir"])
        .arg(&d)
        .output()
        .expect("run coord-nemesis run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("one store per process"));
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn a_malformed_services_count_is_refused() {
    let d = dir("services");
    for bad in ["1,2", "x", "1,2,3,4", ""] {
        let out = Command::new(BIN)
            .args(["run", "--backend", "redis", "--servers", "127.0.0.1:1"])
            .args(["--services", bad, "--history-dir"])
            .arg(&d)
            .output()
            .expect("run coord-nemesis run");
        assert_eq!(out.status.code(), Some(2), "--services {bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("expected N or L,M,C"), "{err}");
    }
    let _ = std::fs::remove_dir_all(d);
}

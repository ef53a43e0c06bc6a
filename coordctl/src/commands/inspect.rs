//! `coordctl inspect PATH [--max-leases N] [--json]`: what lives at PATH
//! ([`coordination::inspect`]), as a table or as one JSON object.

use std::fmt::Write as _;
use std::time::Duration;

use coordination::inspect::{
    inspect_with, Entry, InspectOptions, Inspection, Kind, MaxLeases, Role, Side,
};
use serde_json::{json, Value};

use super::output::{hex, print_line, quoted, rfc3339};
use crate::cli::InspectArgs;
use crate::ctx::Ctx;
use crate::exit::{self, Failure};

/// How much of a node's data the table shows (JSON shows all of it).
const TABLE_DATA: usize = 200;

pub async fn inspect(ctx: &Ctx, a: InspectArgs) -> Result<u8, Failure> {
    let what = format!("inspect {}", a.path);
    coordination::path::validate(&a.path).map_err(|e| Failure::coord(&what, e))?;
    let mut options = InspectOptions::new();
    if let Some(n) = a.max_leases {
        options = options.max_leases(n);
    }
    let session = ctx.open().await?;
    let found = inspect_with(&session, &a.path, &options)
        .await
        .map_err(|e| Failure::coord(&what, e))?;
    let text = if a.json {
        to_json(&found).to_string()
    } else {
        table(&found)
    };
    print_line(text.trim_end_matches('\n').as_bytes())?;
    Ok(exit::OK)
}

fn role(e: &Entry) -> String {
    match e.side {
        Some(Side::Read) => format!("{}/read", e.role.name()),
        Some(Side::Write) => format!("{}/write", e.role.name()),
        None => e.role.name().to_owned(),
    }
}

/// `d` as text: quoted UTF-8 with control characters escaped, or
/// `hex:…` when it is not UTF-8; at most `limit` bytes of it.
fn data_text(d: &[u8], limit: usize) -> String {
    let (shown, more) = if d.len() > limit {
        (&d[..limit], format!(" …({} bytes)", d.len()))
    } else {
        (d, String::new())
    };
    match std::str::from_utf8(shown) {
        Ok(s) => format!("{}{more}", quoted(s)),
        // Cut inside a character: show what is whole.
        Err(e) if d.len() > limit && e.error_len().is_none() => {
            let whole = &shown[..e.valid_up_to()];
            format!(
                "{}{more}",
                quoted(std::str::from_utf8(whole).unwrap_or_default())
            )
        }
        Err(_) => format!("hex:{}{more}", hex(shown)),
    }
}

/// `850ms`, `12.3s`, `5m03s`, `2h05m`, `3d04h`.
fn age_text(d: Duration) -> String {
    let ms = d.as_millis();
    let s = d.as_secs();
    match s {
        _ if ms < 1000 => format!("{ms}ms"),
        0..60 => format!("{}.{}s", s, (ms % 1000) / 100),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        3600..86_400 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d{:02}h", s / 86_400, s % 86_400 / 3600),
    }
}

/// `n thing` or `n things`.
fn count(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

/// The line that says what is at the path.
fn summary(i: &Inspection) -> String {
    let holders = i.count(Role::Holder);
    let waiters = i.count(Role::Waiter);
    let what = match i.kind {
        Kind::Missing => "nothing here".to_owned(),
        Kind::Empty => "empty (no recipe has anyone here now)".to_owned(),
        Kind::Node => "a node with data".to_owned(),
        Kind::Lock | Kind::SimpleLock => format!(
            "{}: {}, {}",
            i.kind.name(),
            count(holders, "holder"),
            count(waiters, "waiter")
        ),
        Kind::RwLock => {
            let readers = i
                .with_role(Role::Holder)
                .filter(|e| e.side == Some(Side::Read))
                .count();
            format!(
                "rwlock: {} ({readers} reading), {}",
                count(holders, "holder"),
                count(waiters, "waiter")
            )
        }
        Kind::Semaphore => {
            let leases = match i.max_leases {
                Some(MaxLeases::Given(n)) => format!(" of {n} leases"),
                Some(MaxLeases::Inferred(n)) => format!(" of {n} leases (inferred)"),
                Some(MaxLeases::AtLeast(_)) | None => String::new(),
            };
            format!(
                "semaphore: {}{leases}, {}",
                count(holders, "holder"),
                count(waiters, "waiter")
            )
        }
        Kind::Election => {
            let leader = i.with_role(Role::Leader).next().map_or_else(
                || "no leader".to_owned(),
                |l| format!("leader {}", data_text(&l.data, TABLE_DATA)),
            );
            format!(
                "election: {leader}, {}",
                count(i.count(Role::Candidate), "candidate")
            )
        }
        Kind::Group => format!("group: {}", count(i.count(Role::Member), "member")),
        Kind::Queue => {
            let (len, leased) = i.queue.as_ref().map_or((0, 0), |q| (q.len, q.leased));
            let head = i
                .with_role(Role::Head)
                .next()
                .map_or_else(|| "none".to_owned(), |h| data_text(&h.data, TABLE_DATA));
            format!("queue: length {len} ({leased} leased to consumers), head {head}")
        }
        Kind::PeriodicJob => {
            let job = i.job.as_ref();
            let last = job
                .and_then(|j| j.last_run)
                .map_or_else(|| "never".to_owned(), |p| format!("period {p}"));
            let mut s = format!("run-once job: last run {last}");
            if let Some(p) = job.and_then(|j| j.started) {
                let _ = write!(s, ", last started period {p}");
            }
            s.push_str(if holders > 0 {
                ", running now"
            } else {
                ", not running now"
            });
            if waiters > 0 {
                let _ = write!(s, " ({} waiting)", count(waiters, "instance"));
            }
            s
        }
        _ => format!("{} ({})", i.kind.name(), count(i.entries.len(), "node")),
    };
    format!("{}: {what}", quoted(&i.path).trim_matches('"'))
}

/// The human table: a summary line, one row per node, the notes.
fn table(i: &Inspection) -> String {
    let mut out = summary(i);
    out.push('\n');
    if !i.entries.is_empty() {
        let prefix = format!("{}/", i.path.trim_end_matches('/'));
        let rows: Vec<[String; 7]> = std::iter::once(
            ["ROLE", "STAMP", "AGE", "SINCE", "SESSION", "NODE", "DATA"].map(str::to_owned),
        )
        .chain(i.entries.iter().map(|e| {
            [
                role(e),
                e.stamp.to_string(),
                e.age.map_or_else(|| "-".to_owned(), age_text),
                e.created_at.map_or_else(|| "-".to_owned(), rfc3339),
                e.session.as_deref().map_or_else(
                    || "-".to_owned(),
                    |s| quoted(s).trim_matches('"').to_owned(),
                ),
                quoted(e.node.strip_prefix(&prefix).unwrap_or(&e.node))
                    .trim_matches('"')
                    .to_owned(),
                data_text(&e.data, TABLE_DATA),
            ]
        }))
        .collect();
        let mut widths = [0usize; 7];
        for r in &rows {
            for (w, c) in widths.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        for r in &rows {
            let mut line = String::new();
            for (k, (c, w)) in r.iter().zip(widths).enumerate() {
                if k + 1 == r.len() {
                    line.push_str(c);
                } else {
                    let _ = write!(line, "{c:<w$}  ");
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    for n in &i.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// The inspection as one JSON object.
fn to_json(i: &Inspection) -> Value {
    let entries: Vec<Value> = i
        .entries
        .iter()
        .map(|e| {
            json!({
                "role": e.role.name(),
                "side": e.side.map(|s| match s {
                    Side::Read => "read",
                    Side::Write => "write",
                }),
                "node": e.node,
                "stamp": e.stamp,
                "ephemeral": e.ephemeral,
                "since": e.created_at.map(rfc3339),
                "age_ms": e.age.map(|a| u64::try_from(a.as_millis()).unwrap_or(u64::MAX)),
                "session": e.session,
                "data": std::str::from_utf8(&e.data).ok(),
                "data_hex": hex(&e.data),
            })
        })
        .collect();
    json!({
        "path": i.path,
        "kind": i.kind.name(),
        "entries": entries,
        "queue": i.queue.as_ref().map(|q| json!({"len": q.len, "leased": q.leased})),
        "job": i.job.as_ref().map(|j| json!({"last_run": j.last_run, "started": j.started})),
        "max_leases": i.max_leases.map(|m| match m {
            MaxLeases::Given(n) => json!({"value": n, "how": "given"}),
            MaxLeases::Inferred(n) => json!({"value": n, "how": "inferred"}),
            MaxLeases::AtLeast(n) => json!({"value": n, "how": "at-least"}),
        }),
        "notes": i.notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_is_quoted_text_or_hex() {
        assert_eq!(data_text(b"host-a", 200), r#""host-a""#);
        assert_eq!(data_text(b"a\x1b[2Jb", 200), r#""a\u001b[2Jb""#);
        assert_eq!(data_text(b"\x00\xff", 200), "hex:00ff");
        assert_eq!(data_text(b"abcdef", 3), r#""abc" …(6 bytes)"#);
        assert_eq!(data_text("é".as_bytes(), 1), r#""" …(2 bytes)"#);
    }

    #[test]
    fn ages_read_at_a_glance() {
        assert_eq!(age_text(Duration::from_millis(850)), "850ms");
        assert_eq!(age_text(Duration::from_millis(12_345)), "12.3s");
        assert_eq!(age_text(Duration::from_secs(303)), "5m03s");
        assert_eq!(age_text(Duration::from_secs(7500)), "2h05m");
        assert_eq!(age_text(Duration::from_secs(273_600)), "3d04h");
    }
}

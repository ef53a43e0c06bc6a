//! `coordctl participants PATH [--kind K] [--max-leases N] [--json]` and
//! `coordctl revoke PATH [--kind K]`.

use std::time::{SystemTime, UNIX_EPOCH};

use coord::prelude::*;
use coord::{Contender, ContenderState, Election, Lock, RwLock, Semaphore, SimpleLock};

use super::print_line;
use crate::cli::{Kind, LockKind, ParticipantsArgs, RevokeArgs};
use crate::ctx::Ctx;
use crate::exit::{self, Failure};

pub async fn participants(ctx: &Ctx, a: ParticipantsArgs) -> Result<u8, Failure> {
    let what = format!("participants {}", a.path);
    // Everything that can be refused is refused before connecting.
    let max_leases = match (a.kind, a.max_leases) {
        (Kind::Semaphore, Some(n)) => n,
        (Kind::Semaphore, None) => {
            return Err(Failure::new(
                exit::USAGE,
                "--kind semaphore needs --max-leases",
            ))
        }
        (_, Some(_)) => {
            return Err(Failure::new(
                exit::USAGE,
                "--max-leases is for --kind semaphore only",
            ))
        }
        (_, None) => 0,
    };
    coord::path::validate_non_root(&a.path).map_err(|e| Failure::coord(&what, e))?;
    let session = ctx.open().await?;
    let fail = |e| Failure::coord(&what, e);
    let listed = match a.kind {
        Kind::Lock => {
            Lock::new(&session, &a.path)
                .map_err(fail)?
                .participants()
                .await
        }
        Kind::Rwlock => {
            RwLock::new(&session, &a.path)
                .map_err(fail)?
                .participants()
                .await
        }
        Kind::Semaphore => {
            Semaphore::new(&session, &a.path, max_leases)
                .map_err(fail)?
                .participants()
                .await
        }
        Kind::Simple => {
            SimpleLock::new(&session, &a.path)
                .map_err(fail)?
                .participants()
                .await
        }
        Kind::Election => {
            Election::new(&session, &a.path)
                .map_err(fail)?
                .participants()
                .await
        }
    };
    for c in listed.map_err(fail)? {
        let line = if a.json { json_line(&c) } else { text_line(&c) };
        print_line(line.as_bytes())?;
    }
    Ok(exit::OK)
}

pub async fn revoke(ctx: &Ctx, a: RevokeArgs) -> Result<u8, Failure> {
    let what = format!("revoke {}", a.path);
    coord::path::validate_non_root(&a.path).map_err(|e| Failure::coord(&what, e))?;
    let session = ctx.open().await?;
    let fail = |e| Failure::coord(&what, e);
    let lock: Box<dyn Lockable> = match a.kind {
        LockKind::Lock => Box::new(Lock::new(&session, &a.path).map_err(fail)?),
        // Either half lists every holder, readers and writer alike.
        LockKind::Rwlock => Box::new(RwLock::new(&session, &a.path).map_err(fail)?.write_lock()),
        LockKind::Simple => Box::new(SimpleLock::new(&session, &a.path).map_err(fail)?),
    };
    let asked = lock.request_release().await.map_err(fail)?;
    if asked.is_empty() {
        return Err(Failure::new(
            exit::NONE,
            format!("nobody holds the lock {}", a.path),
        ));
    }
    for node in asked {
        print_line(escaped(&node).as_bytes())?;
    }
    Ok(exit::OK)
}

fn state(c: &Contender) -> &'static str {
    match c.state {
        ContenderState::Holding => "holding",
        ContenderState::Waiting => "waiting",
    }
}

/// `STATE NODE STAMP SINCE "DATA"`.
fn text_line(c: &Contender) -> String {
    format!(
        "{} {} {} {} {}",
        state(c),
        escaped(&c.node),
        c.stamp,
        c.created_at.map_or_else(|| "-".to_owned(), rfc3339),
        quoted(&String::from_utf8_lossy(&c.data)),
    )
}

/// `{"state":…,"node":…,"stamp":…,"since":…,"data":…}`.
fn json_line(c: &Contender) -> String {
    format!(
        r#"{{"state":"{}","node":{},"stamp":{},"since":{},"data":{}}}"#,
        state(c),
        quoted(&c.node),
        c.stamp,
        c.created_at
            .map_or_else(|| "null".to_owned(), |t| format!("\"{}\"", rfc3339(t))),
        quoted(&String::from_utf8_lossy(&c.data)),
    )
}

/// `s` as a JSON string: in double quotes, with `"`, `\` and every
/// character that could move the cursor, recolour or reorder the terminal
/// escaped.
pub(super) fn quoted(s: &str) -> String {
    format!("\"{}\"", escaped(s))
}

/// `s` with JSON's escapes: `\"`, `\\`, `\n`, `\t`… and `\uXXXX` for the
/// other control characters (C0, DEL, C1) and the invisible ones that
/// change how a line shows (line separators, bidirectional overrides).
pub(super) fn escaped(s: &str) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if c.is_control()
                || matches!(c,
                    '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}'
                    | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') =>
            {
                // All of these are in the Basic Multilingual Plane.
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// `t` in RFC 3339, UTC, to the millisecond: `2024-05-01T12:00:00.123Z`.
pub(super) fn rfc3339(t: SystemTime) -> String {
    let ms: i128 = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i128::try_from(d.as_millis()).unwrap_or(i128::MAX),
        Err(before) => -i128::try_from(before.duration().as_millis()).unwrap_or(i128::MAX),
    };
    const DAY: i128 = 86_400_000;
    let (y, m, d) = civil_from_days(ms.div_euclid(DAY));
    let in_day = ms.rem_euclid(DAY);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000
    )
}

/// The proleptic Gregorian date of day `z` counted from 1970-01-01
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i128) -> (i128, i128, i128) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i128::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn times_are_rfc3339_utc() {
        let at = |ms: u64| rfc3339(UNIX_EPOCH + Duration::from_millis(ms));
        assert_eq!(at(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(at(1_709_251_199_999), "2024-02-29T23:59:59.999Z");
        assert_eq!(at(1_714_564_800_123), "2024-05-01T12:00:00.123Z");
        assert_eq!(at(4_102_444_800_000), "2100-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH - Duration::from_millis(1)),
            "1969-12-31T23:59:59.999Z"
        );
    }

    #[test]
    fn data_cannot_reach_the_terminal_raw() {
        assert_eq!(quoted("host-a:80"), r#""host-a:80""#);
        assert_eq!(quoted("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(
            quoted("\u{1b}[31mred\u{7}\n\r\t\u{0}\u{7f}\u{9b}x"),
            r#""\u001b[31mred\u0007\n\r\t\u0000\u007f\u009bx""#
        );
        assert_eq!(quoted("a\u{202e}b\u{2028}"), r#""a\u202eb\u2028""#);
        assert_eq!(quoted("héllo ✓ 日本"), "\"héllo ✓ 日本\"");
        assert_eq!(
            quoted(&String::from_utf8_lossy(b"\xff\xfe")),
            "\"\u{fffd}\u{fffd}\""
        );
    }

    #[test]
    fn lines() {
        let c = Contender::new(
            "/l/lock-0000000001".to_owned(),
            b"a\nb".to_vec(),
            ContenderState::Waiting,
            42,
            Some(UNIX_EPOCH + Duration::from_millis(1_714_564_800_123)),
        );
        assert_eq!(
            text_line(&c),
            r#"waiting /l/lock-0000000001 42 2024-05-01T12:00:00.123Z "a\nb""#
        );
        assert_eq!(
            json_line(&c),
            r#"{"state":"waiting","node":"/l/lock-0000000001","stamp":42,"since":"2024-05-01T12:00:00.123Z","data":"a\nb"}"#
        );
        let c = Contender::new(c.node, Vec::new(), ContenderState::Holding, c.stamp, None);
        assert_eq!(text_line(&c), r#"holding /l/lock-0000000001 42 - """#);
        assert!(json_line(&c).contains(r#""since":null,"data":"""#));
    }
}

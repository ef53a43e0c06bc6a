//! How coordctl writes what it reports: one flushed line at a time, data
//! escaped so it cannot reach the terminal raw, times in RFC 3339.

use std::fmt::Write as _;
use std::io::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::exit::{self, Failure};

/// Write `line` and a newline to stdout, flushed (a reader may be waiting
/// for it).
pub fn print_line(line: &[u8]) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(line)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(|e| Failure::new(exit::BACKEND, format!("writing to stdout: {e}")))
}

/// `s` as a JSON string: in double quotes, with `"`, `\` and every
/// character that could move the cursor, recolour or reorder the terminal
/// escaped.
pub fn quoted(s: &str) -> String {
    format!("\"{}\"", escaped(s))
}

/// `s` with JSON's escapes: `\"`, `\\`, `\n`, `\t`… and `\uXXXX` for the
/// other control characters (C0, DEL, C1) and the invisible ones that
/// change how a line shows (line separators, bidirectional overrides).
pub fn escaped(s: &str) -> String {
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
pub fn rfc3339(t: SystemTime) -> String {
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

/// `d` as lowercase hexadecimal, two digits a byte.
pub fn hex(d: &[u8]) -> String {
    let mut s = String::with_capacity(d.len() * 2);
    for b in d {
        let _ = write!(s, "{b:02x}");
    }
    s
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
}

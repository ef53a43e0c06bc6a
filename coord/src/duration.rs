//! Human durations (`30s`, `500ms`, `6h`, `1h30m`), as URLs' query
//! parameters and `coordctl` take them.

use std::time::Duration;

/// Why a duration did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {input:?}: {reason} (write it like 30s, 500ms, 6h or 1h30m)")]
pub struct ParseDurationError {
    input: String,
    reason: &'static str,
}

/// Parse a duration: one or more `<number><unit>` parts, added up. Units:
/// `ms`, `s`, `m` (minutes), `h`, `d`; the number may have a decimal part
/// (`1.5s`). Spaces are not allowed; a bare number without a unit is
/// refused (is `30` seconds or milliseconds?).
///
/// ```
/// use std::time::Duration;
/// assert_eq!(coord::parse_duration("30s")?, Duration::from_secs(30));
/// assert_eq!(coord::parse_duration("500ms")?, Duration::from_millis(500));
/// assert_eq!(coord::parse_duration("1h30m")?, Duration::from_secs(5400));
/// assert_eq!(coord::parse_duration("1.5s")?, Duration::from_millis(1500));
/// assert!(coord::parse_duration("30").is_err());
/// # Ok::<(), coord::ParseDurationError>(())
/// ```
///
/// # Errors
/// [`ParseDurationError`] saying what is wrong.
pub fn parse_duration(input: &str) -> Result<Duration, ParseDurationError> {
    let bad = |reason| ParseDurationError {
        input: input.to_owned(),
        reason,
    };
    if input.is_empty() {
        return Err(bad("it is empty"));
    }
    let mut rest = input;
    let mut total = Duration::ZERO;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (num, after) = rest.split_at(num_len);
        if num.is_empty() {
            return Err(bad("expected a number"));
        }
        let unit_len = after
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let secs_per_unit: f64 = match unit {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86400.0,
            "" => return Err(bad("a number needs a unit (ms, s, m, h or d)")),
            _ => return Err(bad("unknown unit (use ms, s, m, h or d)")),
        };
        let value = if num.contains('.') {
            let v: f64 = num.parse().map_err(|_| bad("not a number"))?;
            Duration::try_from_secs_f64(v * secs_per_unit).map_err(|_| bad("out of range"))?
        } else {
            let v: u64 = num.parse().map_err(|_| bad("out of range"))?;
            if unit == "ms" {
                Duration::from_millis(v)
            } else {
                // Whole seconds per unit for s, m, h, d.
                let per = secs_per_unit as u64;
                Duration::from_secs(v.checked_mul(per).ok_or_else(|| bad("out of range"))?)
            }
        };
        total = total
            .checked_add(value)
            .ok_or_else(|| bad("out of range"))?;
        rest = after;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_sums() {
        let ok = |s: &str| parse_duration(s).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ok("0s"), Duration::ZERO);
        assert_eq!(ok("500ms"), Duration::from_millis(500));
        assert_eq!(ok("30s"), Duration::from_secs(30));
        assert_eq!(ok("2m"), Duration::from_secs(120));
        assert_eq!(ok("6h"), Duration::from_secs(6 * 3600));
        assert_eq!(ok("1d"), Duration::from_secs(86400));
        assert_eq!(ok("1h30m"), Duration::from_secs(5400));
        assert_eq!(ok("1m500ms"), Duration::from_millis(60_500));
        assert_eq!(ok("0.25s"), Duration::from_millis(250));
    }

    #[test]
    fn refuses_what_is_unclear() {
        for s in [
            "", "30", "s", "10x", "1.2.3s", "-1s", "1 s", " 1s", "1s ", "1S",
        ] {
            assert!(parse_duration(s).is_err(), "{s:?} was accepted");
        }
        assert!(parse_duration("99999999999999999999d").is_err());
        let e = parse_duration("30").err().map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("unit")));
    }
}

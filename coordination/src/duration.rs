//! Human durations (`30s`, `500ms`, `6h`, `1h30m`), as URLs' query
//! parameters and `coordctl` take them, and the checked forms for each
//! kind of duration ([`parse_timeout`], [`parse_session_timeout`],
//! [`parse_period`]) that refuse what coord would refuse
//! ([`coord_core::limits`]).

use std::borrow::Cow;
use std::time::Duration;

use coord_core::limits::{MAX_PERIOD, MAX_SESSION_TIMEOUT, MAX_TIMEOUT};

/// How to write a duration, for the messages about malformed ones.
const HOW: &str = "write it like 30s, 500ms, 6h or 1h30m";

/// Why a duration did not parse, or is out of the range its use allows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {input:?}: {reason}")]
pub struct ParseDurationError {
    input: String,
    reason: Cow<'static, str>,
}

impl ParseDurationError {
    fn new(input: &str, reason: impl Into<Cow<'static, str>>) -> Self {
        ParseDurationError {
            input: input.to_owned(),
            reason: reason.into(),
        }
    }

    /// What is wrong with it.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

/// Parse a duration: one or more `<number><unit>` parts, added up. Units:
/// `ms`, `s`, `m` (minutes), `h`, `d`; the number may have a decimal part
/// (`1.5s`). Spaces are not allowed; a bare number without a unit is
/// refused (is `30` seconds or milliseconds?). Any input gives a duration
/// or an error, never a panic; a sum past [`Duration::MAX`] is an error.
///
/// Each part is read by [`humantime::parse_duration`]; this function
/// splits the input into parts and keeps coord's narrower grammar (the
/// five units above, no spaces, no bare number). What humantime cannot
/// represent exactly is an error here too: a part finer than a nanosecond,
/// a fraction of an hour or a day that is not a whole number of seconds
/// (`0.001d`), or more than `u64::MAX` nanoseconds in `ms` (about 584
/// years: write such a duration in larger units).
///
/// This accepts any representable duration: to check one against the
/// limits of its use, use [`parse_timeout`], [`parse_session_timeout`] or
/// [`parse_period`].
///
/// ```
/// use std::time::Duration;
/// assert_eq!(coordination::parse_duration("30s")?, Duration::from_secs(30));
/// assert_eq!(coordination::parse_duration("500ms")?, Duration::from_millis(500));
/// assert_eq!(coordination::parse_duration("1h30m")?, Duration::from_secs(5400));
/// assert_eq!(coordination::parse_duration("1.5s")?, Duration::from_millis(1500));
/// assert!(coordination::parse_duration("30").is_err());
/// # Ok::<(), coordination::ParseDurationError>(())
/// ```
///
/// # Errors
/// [`ParseDurationError`] saying what is wrong.
pub fn parse_duration(input: &str) -> Result<Duration, ParseDurationError> {
    let bad = |reason: &'static str| ParseDurationError::new(input, format!("{reason} ({HOW})"));
    let huge = || ParseDurationError::new(input, "it is out of range");
    if input.is_empty() {
        return Err(bad("it is empty"));
    }
    let mut rest = input;
    let mut total = Duration::ZERO;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_len == 0 {
            return Err(bad("expected a number"));
        }
        let unit_len = rest[num_len..]
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len() - num_len);
        let (part, after) = rest.split_at(num_len + unit_len);
        match &part[num_len..] {
            "ms" | "s" | "m" | "h" | "d" => {}
            "" => return Err(bad("a number needs a unit (ms, s, m, h or d)")),
            _ => return Err(bad("unknown unit (use ms, s, m, h or d)")),
        }
        // One part at a time: humantime adds parts up itself, but its sum
        // can panic at `Duration::MAX`; `checked_add` cannot.
        let value = humantime::parse_duration(part).map_err(|e| match e {
            humantime::DurationError::NumberOverflow => ParseDurationError::new(
                input,
                "it is out of range, or not a whole number of nanoseconds",
            ),
            _ => bad("not a number"),
        })?;
        total = total.checked_add(value).ok_or_else(huge)?;
        rest = after;
    }
    Ok(total)
}

/// Check `d`, parsed from `input`, against `min..=max` for `what`.
fn within(
    input: &str,
    d: Duration,
    what: &str,
    positive: bool,
    max: Duration,
) -> Result<Duration, ParseDurationError> {
    if positive && d.is_zero() {
        return Err(ParseDurationError::new(
            input,
            format!("{what} must be longer than zero"),
        ));
    }
    if d > max {
        return Err(ParseDurationError::new(
            input,
            format!("{what} may be at most {}", human(max)),
        ));
    }
    Ok(d)
}

/// Parse the timeout of a wait (`acquire_timeout`, `take_timeout`,
/// `coordctl lock --timeout`, …): zero up to
/// [`MAX_TIMEOUT`](coord_core::limits::MAX_TIMEOUT) (10 years). What the
/// recipes would refuse with [`Error::InvalidArgument`](crate::Error) is
/// refused here, as a parse error.
///
/// ```
/// use std::time::Duration;
/// assert_eq!(coordination::parse_timeout("0s")?, Duration::ZERO);
/// assert!(coordination::parse_timeout("3650d").is_ok());
/// assert!(coordination::parse_timeout("3651d").is_err());
/// # Ok::<(), coordination::ParseDurationError>(())
/// ```
///
/// # Errors
/// [`ParseDurationError`] for a malformed duration, or one over the limit.
pub fn parse_timeout(input: &str) -> Result<Duration, ParseDurationError> {
    within(
        input,
        parse_duration(input)?,
        "a timeout",
        false,
        MAX_TIMEOUT,
    )
}

/// Parse a session timeout (`?session_timeout=`, `coordctl
/// --session-timeout`): longer than zero, at most
/// [`MAX_SESSION_TIMEOUT`](coord_core::limits::MAX_SESSION_TIMEOUT) (1 day).
/// A backend may want more than zero (Redis: 300 ms); [`Connector`](crate::Connector)
/// checks that when it connects, before any I/O.
///
/// ```
/// assert!(coordination::parse_session_timeout("10s").is_ok());
/// assert!(coordination::parse_session_timeout("0s").is_err());
/// assert!(coordination::parse_session_timeout("25h").is_err());
/// ```
///
/// # Errors
/// [`ParseDurationError`] for a malformed duration, zero, or one over the
/// limit.
pub fn parse_session_timeout(input: &str) -> Result<Duration, ParseDurationError> {
    within(
        input,
        parse_duration(input)?,
        "a session timeout",
        true,
        MAX_SESSION_TIMEOUT,
    )
}

/// Parse the period of a periodic job (`coordctl run-once --every`):
/// longer than zero, at most [`MAX_PERIOD`](coord_core::limits::MAX_PERIOD)
/// (10 years).
///
/// ```
/// assert!(coordination::parse_period("6h").is_ok());
/// assert!(coordination::parse_period("0s").is_err());
/// assert!(coordination::parse_period("3651d").is_err());
/// ```
///
/// # Errors
/// [`ParseDurationError`] for a malformed duration, zero, or one over the
/// limit.
pub fn parse_period(input: &str) -> Result<Duration, ParseDurationError> {
    within(input, parse_duration(input)?, "a period", true, MAX_PERIOD)
}

/// `d` as [`parse_duration`] reads it back: `3650d`, `1h30m`, `1s500ms`
/// (a part below a millisecond is shown in `ms` with a decimal part).
pub(crate) fn human(d: Duration) -> String {
    if d.is_zero() {
        return "0s".into();
    }
    let mut secs = d.as_secs();
    let mut out = String::new();
    for (unit, per) in [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)] {
        if secs >= per {
            out.push_str(&format!("{}{unit}", secs / per));
            secs %= per;
        }
    }
    let nanos = d.subsec_nanos();
    if nanos > 0 {
        if nanos.is_multiple_of(1_000_000) {
            out.push_str(&format!("{}ms", nanos / 1_000_000));
        } else {
            let ms = format!("{:.6}", f64::from(nanos) / 1e6);
            out.push_str(ms.trim_end_matches('0'));
            out.push_str("ms");
        }
    }
    out
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
        // humantime's other units and spellings stay refused.
        for s in ["1sec", "2min", "1w", "1M", "1y", "10us", "10ns", "1 h 2 m"] {
            assert!(parse_duration(s).is_err(), "{s:?} was accepted");
        }
        // Parts adding up to exactly one second past `Duration::MAX`'s
        // seconds: an error, not a panic.
        assert!(parse_duration("18446744073709551615s0.5s0.5s").is_err());
        assert_eq!(
            parse_duration("18446744073709551615s0.5s"),
            Ok(Duration::new(u64::MAX, 500_000_000))
        );
        let e = parse_duration("30").err().map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("unit")));
    }

    #[test]
    fn checked_forms_keep_to_the_limits() {
        assert_eq!(parse_timeout("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_timeout("3650d"), Ok(MAX_TIMEOUT));
        for s in ["3650d1ms", "106751991167301d", "99999999999999999999d"] {
            assert!(parse_timeout(s).is_err(), "{s:?} was accepted");
        }
        let e = parse_timeout("106751991167301d")
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("at most 3650d")));
        assert_eq!(parse_session_timeout("1d"), Ok(MAX_SESSION_TIMEOUT));
        for s in ["0s", "0ms", "1d1ms", "106751991167301d", "x"] {
            assert!(parse_session_timeout(s).is_err(), "{s:?} was accepted");
        }
        assert!(parse_period("0s").is_err());
        assert_eq!(parse_period("3650d"), Ok(MAX_PERIOD));
        assert!(parse_period("3650d0.5s").is_err());
    }

    #[test]
    fn human_reads_back() {
        for d in [
            Duration::ZERO,
            Duration::from_millis(1),
            Duration::from_millis(1500),
            Duration::from_secs(5400),
            MAX_TIMEOUT,
            MAX_SESSION_TIMEOUT,
        ] {
            assert_eq!(parse_duration(&human(d)), Ok(d), "{}", human(d));
        }
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        /// A unit as written and its length in nanoseconds.
        fn unit() -> impl Strategy<Value = (&'static str, u128)> {
            prop_oneof![
                Just(("ms", 1_000_000u128)),
                Just(("s", 1_000_000_000)),
                Just(("m", 60_000_000_000)),
                Just(("h", 3_600_000_000_000)),
                Just(("d", 86_400_000_000_000)),
            ]
        }

        /// Well-formed whole-number parts, small to past `Duration::MAX`.
        fn parts() -> impl Strategy<Value = Vec<(u64, (&'static str, u128))>> {
            let number = prop_oneof![
                0u64..1_000,
                any::<u64>(),
                Just(106_751_991_167_301),
                Just(3_650),
                Just(u64::MAX),
            ];
            prop::collection::vec((number, unit()), 1..4)
        }

        /// Strings near the grammar: digits, dots, units, junk.
        fn near() -> impl Strategy<Value = String> {
            "[0-9.]{0,25}(ms|s|m|h|d|x|S|µs|)[0-9.]{0,4}(ms|s|m|h|d|)"
        }

        const MAX_NANOS: u128 = Duration::MAX.as_nanos();

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            #[test]
            fn any_input_parses_or_is_refused(s in any::<String>()) {
                let _ = parse_duration(&s);
                let _ = parse_timeout(&s);
                let _ = parse_session_timeout(&s);
                let _ = parse_period(&s);
            }

            #[test]
            fn near_misses_parse_or_are_refused(s in near()) {
                let d = parse_duration(&s);
                prop_assert_eq!(
                    parse_timeout(&s).is_ok(),
                    d.as_ref().is_ok_and(|d| *d <= MAX_TIMEOUT)
                );
                prop_assert_eq!(
                    parse_session_timeout(&s).is_ok(),
                    d.as_ref().is_ok_and(|d| !d.is_zero() && *d <= MAX_SESSION_TIMEOUT)
                );
                prop_assert_eq!(
                    parse_period(&s).is_ok(),
                    d.as_ref().is_ok_and(|d| !d.is_zero() && *d <= MAX_PERIOD)
                );
            }

            #[test]
            fn whole_parts_add_up_exactly(parts in parts()) {
                let text: String = parts.iter().map(|(n, (u, _))| format!("{n}{u}")).collect();
                let nanos: u128 = parts
                    .iter()
                    .map(|(n, (_, per))| u128::from(*n) * per)
                    .sum();
                let got = parse_duration(&text);
                // humantime counts a part in `ms` in u64 nanoseconds: more
                // (about 584 years) is refused, though Duration holds it.
                let fits = parts
                    .iter()
                    .all(|(n, (u, _))| *u != "ms" || n.checked_mul(1_000_000).is_some());
                if nanos <= MAX_NANOS && fits {
                    prop_assert_eq!(got.map(|d| d.as_nanos()), Ok(nanos), "{}", text);
                } else {
                    prop_assert!(got.is_err(), "{text} gave {got:?}");
                }
                prop_assert_eq!(
                    parse_timeout(&text).is_ok(),
                    nanos <= MAX_TIMEOUT.as_nanos(),
                    "{}", text
                );
            }

            #[test]
            fn human_reads_back_exactly(secs in 0u64..=MAX_TIMEOUT.as_secs(), ms in 0u32..1_000) {
                let d = Duration::new(secs, ms * 1_000_000);
                prop_assert_eq!(parse_duration(&human(d)), Ok(d));
            }
        }
    }
}

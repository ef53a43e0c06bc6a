//! Results: rows with their baselines, targets, and the markdown and JSON
//! renderings.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use crate::row::{Better, Row};

/// A performance target (docs/benchmarks.md lists them), checked on one
/// run.
#[derive(Debug, Clone)]
pub struct TargetCheck {
    /// What is asked.
    pub what: String,
    /// The measured ratio or figure.
    pub measured: f64,
    /// Whether it is met.
    pub met: bool,
}

/// All results of one run against one backend.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Backend short name.
    pub backend: String,
    /// URL benchmarked.
    pub url: String,
    /// The run's settings, as `name = value` pairs.
    pub config: Vec<(String, String)>,
    /// The figures.
    pub rows: Vec<Row>,
    /// The targets checked.
    pub targets: Vec<TargetCheck>,
    /// Workloads that failed, with their error.
    pub failures: Vec<(String, String)>,
    /// Wall time of the whole run.
    pub elapsed: Duration,
}

impl Report {
    /// Add a row (built with [`Row::new`]).
    pub fn push(&mut self, row: Row) {
        self.rows.push(row);
    }

    /// The row with `key`.
    pub fn get(&self, key: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.key == key)
    }

    /// The value of the row with `key`.
    pub fn value(&self, key: &str) -> Option<f64> {
        self.get(key).map(|r| r.value)
    }

    /// The report as markdown: a heading, the table, the targets.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "### {} (`{}`)\n", self.backend, self.url);
        let cfg: Vec<String> = self
            .config
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = writeln!(
            s,
            "Settings: {}; run took {:.1} s.\n",
            cfg.join(", "),
            self.elapsed.as_secs_f64()
        );
        let _ = writeln!(
            s,
            "| workload | case | metric | value | baseline | ratio |\n|---|---|---|---:|---|---:|"
        );
        for r in &self.rows {
            let base = match &r.baseline {
                Some((n, v)) => format!("{n}: {}", fmt_num(*v)),
                None => String::new(),
            };
            let range = match r.ratio_range() {
                Some((lo, hi)) => {
                    format!(" [{lo:.2}–{hi:.2}, median of {} blocks]", r.blocks.len())
                }
                None => String::new(),
            };
            let ratio = match r.ratio() {
                Some(x) => format!(
                    "{:.2}×{range} {}",
                    x,
                    if r.better == Better::Higher {
                        "(higher better)"
                    } else {
                        "(lower better)"
                    }
                ),
                None => String::new(),
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} {} | {} | {} |",
                r.workload,
                r.case,
                r.metric,
                fmt_num(r.value),
                r.unit,
                base,
                ratio
            );
        }
        if !self.targets.is_empty() {
            let _ = writeln!(s, "\nTargets:\n");
            for t in &self.targets {
                let _ = writeln!(
                    s,
                    "- {} {}: measured {}",
                    if t.met { "MET" } else { "MISSED" },
                    t.what,
                    fmt_num(t.measured)
                );
            }
        }
        if !self.failures.is_empty() {
            let _ = writeln!(s, "\nFailed workloads:\n");
            for (w, e) in &self.failures {
                let _ = writeln!(s, "- {w}: {e}");
            }
        }
        s
    }

    /// The report as JSON: `backend`, `url`, `elapsed_s`, `config` (an
    /// object of the settings), `rows` (each with `key`, `workload`,
    /// `case`, `metric`, `value`, `unit`, `better`, `baseline`,
    /// `baseline_value`, `ratio`, and for interleaved blocks `ratio_min`,
    /// `ratio_max` and `blocks`, their count, 0 otherwise), `targets` (`what`, `measured`, `met`)
    /// and `failures` (`workload`, `error`). A figure that is not finite
    /// is `null`.
    pub fn json(&self) -> String {
        let rows = self
            .rows
            .iter()
            .map(|r| JsonRow {
                key: &r.key,
                workload: &r.workload,
                case: &r.case,
                metric: &r.metric,
                value: r.value,
                unit: &r.unit,
                better: match r.better {
                    Better::Higher => "higher",
                    Better::Lower => "lower",
                },
                baseline: r.baseline.as_ref().map(|(n, _)| n.as_str()),
                baseline_value: r.baseline.as_ref().map(|(_, v)| *v),
                ratio: r.ratio(),
                ratio_min: r.ratio_range().map(|(lo, _)| lo),
                ratio_max: r.ratio_range().map(|(_, hi)| hi),
                blocks: r.blocks.len(),
            })
            .collect();
        let report = JsonReport {
            backend: &self.backend,
            url: &self.url,
            elapsed_s: self.elapsed.as_secs_f64(),
            config: Pairs(&self.config),
            rows,
            targets: self
                .targets
                .iter()
                .map(|t| JsonTarget {
                    what: &t.what,
                    measured: t.measured,
                    met: t.met,
                })
                .collect(),
            failures: self
                .failures
                .iter()
                .map(|(workload, error)| JsonFailure { workload, error })
                .collect(),
        };
        // Serializing these plain structs cannot fail; say so if it did.
        let mut s = serde_json::to_string_pretty(&report)
            .unwrap_or_else(|e| format!("{{\"error\": {:?}}}", e.to_string()));
        s.push('\n');
        s
    }
}

/// [`Report::json`]'s document.
#[derive(Serialize)]
struct JsonReport<'a> {
    backend: &'a str,
    url: &'a str,
    elapsed_s: f64,
    config: Pairs<'a>,
    rows: Vec<JsonRow<'a>>,
    targets: Vec<JsonTarget<'a>>,
    failures: Vec<JsonFailure<'a>>,
}

/// `name = value` pairs as one JSON object, in their order.
struct Pairs<'a>(&'a [(String, String)]);

impl Serialize for Pairs<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

#[derive(Serialize)]
struct JsonRow<'a> {
    key: &'a str,
    workload: &'a str,
    case: &'a str,
    metric: &'a str,
    value: f64,
    unit: &'a str,
    better: &'static str,
    baseline: Option<&'a str>,
    baseline_value: Option<f64>,
    ratio: Option<f64>,
    ratio_min: Option<f64>,
    ratio_max: Option<f64>,
    blocks: usize,
}

#[derive(Serialize)]
struct JsonTarget<'a> {
    what: &'a str,
    measured: f64,
    met: bool,
}

#[derive(Serialize)]
struct JsonFailure<'a> {
    workload: &'a str,
    error: &'a str,
}

/// A figure for the markdown; not a number (an empty sample) is "no
/// sample", never 0.
fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        "no sample".into()
    } else if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else if v.abs() >= 0.01 {
        format!("{v:.3}")
    } else {
        format!("{v:.2e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::Unit;
    use crate::stats::{median, percentiles};

    #[test]
    fn a_blocked_ratio_is_the_median_of_the_blocks_ratios() {
        let mut rep = Report::default();
        // Block ratios 2, 2 and 3: their median is 2, though the ratio of
        // the medians (4 / 2) happens to agree and of the means would not.
        rep.push(
            Row::new("k", "W2", "case")
                .metric("handoffs", Unit::PerSec)
                .blocks(&[2.0, 4.0, 9.0], ("native", &[1.0, 2.0, 3.0])),
        );
        let r = rep.get("k").expect("row");
        assert_eq!(r.ratio(), Some(2.0));
        assert_eq!(r.ratio_range(), Some((2.0, 3.0)));
        assert_eq!(r.value, 4.0);
        assert_eq!(r.baseline, Some(("native".to_owned(), 2.0)));
        assert!(rep
            .markdown()
            .contains("2.00× [2.00–3.00, median of 3 blocks]"));
        assert!(rep.json().contains("\"ratio_max\": 3.0"));
        assert!(median(&[]).is_nan());
        assert_eq!(median(&[1.0, 5.0]), 3.0);
    }

    #[test]
    fn an_empty_sample_is_no_sample_never_zero() {
        let p = percentiles(&mut []);
        let mut r = Report {
            backend: "mem".into(),
            ..Report::default()
        };
        let row = |key: &str| Row::new(key, "W2", "case").metric("p50", Unit::Ms);
        r.push(row("a.p50").value(p.p50).ratio_to(("base", 2.0)));
        r.push(row("b.p50").value(1.0).ratio_to(("base", p.p50)));
        assert_eq!(r.get("a.p50").and_then(Row::ratio), None);
        assert_eq!(r.get("b.p50").and_then(Row::ratio), None);
        r.targets.push(TargetCheck {
            what: "t".into(),
            measured: p.p50,
            met: p.p50 <= 1.0,
        });
        assert!(!r.targets[0].met, "no sample meets no target");
        let md = r.markdown();
        assert!(md.contains("| no sample ms |"), "{md}");
        assert!(md.contains("base: no sample"), "{md}");
        assert!(md.contains("MISSED t: measured no sample"), "{md}");
        assert!(!md.contains("| 0 ms"), "{md}");
        let json: serde_json::Value = serde_json::from_str(&r.json()).expect("json");
        assert!(json["rows"][0]["value"].is_null());
        assert!(json["rows"][0]["ratio"].is_null());
        assert!(json["targets"][0]["measured"].is_null());
    }

    #[test]
    fn json_has_every_field_and_round_trips() {
        let mut r = Report {
            backend: "mem".into(),
            url: "mem://".into(),
            config: vec![
                ("cycles".into(), "20".into()),
                ("a\"b".into(), "x\ny".into()),
            ],
            elapsed: Duration::from_millis(1500),
            ..Report::default()
        };
        r.push(
            Row::new("w1.lock.per_s", "W1", "Lock")
                .metric("cycles/s", Unit::PerSec)
                .value(200.0)
                .ratio_to(("native", 100.0)),
        );
        r.push(
            Row::new("w9.nan", "W9", "c")
                .metric("m", Unit::Ms)
                .value(f64::NAN),
        );
        r.targets.push(TargetCheck {
            what: "W1 ≥ 0.5× native".into(),
            measured: 2.0,
            met: true,
        });
        r.failures.push(("W7".into(), "timed out".into()));
        let v: serde_json::Value = serde_json::from_str(&r.json()).expect("valid JSON");
        assert_eq!(v["backend"], "mem");
        assert_eq!(v["elapsed_s"], 1.5);
        assert_eq!(v["config"]["cycles"], "20");
        assert_eq!(v["config"]["a\"b"], "x\ny");
        let row = &v["rows"][0];
        assert_eq!(row["key"], "w1.lock.per_s");
        assert_eq!(row["better"], "higher");
        assert_eq!(row["baseline"], "native");
        assert_eq!(row["baseline_value"], 100.0);
        assert_eq!(row["ratio"], 2.0);
        let nan = &v["rows"][1];
        assert!(nan["value"].is_null() && nan["baseline"].is_null() && nan["ratio"].is_null());
        assert_eq!(nan["better"], "lower");
        assert_eq!(v["targets"][0]["met"], true);
        assert_eq!(v["failures"][0]["workload"], "W7");
        assert_eq!(v["failures"][0]["error"], "timed out");
    }
}

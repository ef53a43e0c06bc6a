//! Results: rows with their baselines, targets, and the markdown and JSON
//! renderings.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

/// Which way is better for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Throughputs.
    Higher,
    /// Latencies, costs.
    Lower,
}

/// One figure of a run.
#[derive(Debug, Clone)]
pub struct Row {
    /// A stable key, e.g. `w2.lock.k32.handoffs_per_s`.
    pub key: String,
    /// `W1` … `W8`, or `base` for a baseline-only row.
    pub workload: String,
    /// What ran: recipe, sessions, …
    pub case: String,
    /// What was measured.
    pub metric: String,
    /// The figure.
    pub value: f64,
    /// Its unit.
    pub unit: String,
    /// Which way is better.
    pub better: Better,
    /// The baseline's name and figure; the ratio is `value / baseline`.
    pub baseline: Option<(String, f64)>,
    /// When recipe and baseline ran in interleaved blocks: the ratio of
    /// each block. The row's ratio is then their median, shown with their
    /// range.
    pub blocks: Vec<f64>,
}

/// The median of `xs` (the mean of the middle two for an even count);
/// NaN for none.
pub fn median(xs: &[f64]) -> f64 {
    let mut v: Vec<f64> = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

impl Row {
    /// The lowest and highest per-block ratio, when there are blocks.
    pub fn ratio_range(&self) -> Option<(f64, f64)> {
        let lo = self.blocks.iter().copied().reduce(f64::min)?;
        let hi = self.blocks.iter().copied().reduce(f64::max)?;
        Some((lo, hi))
    }

    /// `value / baseline`, when there is a baseline and both are figures
    /// (a side with no sample has no ratio).
    pub fn ratio(&self) -> Option<f64> {
        if !self.blocks.is_empty() {
            return Some(median(&self.blocks)).filter(|x| x.is_finite());
        }
        self.baseline
            .as_ref()
            .filter(|(_, b)| b.is_finite() && *b > 0.0)
            .map(|(_, b)| self.value / b)
            .filter(|x| x.is_finite())
    }
}

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
    /// Add a row.
    #[allow(clippy::too_many_arguments)]
    pub fn add(
        &mut self,
        key: &str,
        workload: &str,
        case: &str,
        metric: &str,
        value: f64,
        unit: &str,
        better: Better,
        baseline: Option<(&str, f64)>,
    ) {
        self.rows.push(Row {
            key: key.to_owned(),
            workload: workload.to_owned(),
            case: case.to_owned(),
            metric: metric.to_owned(),
            value,
            unit: unit.to_owned(),
            better,
            baseline: baseline.map(|(n, v)| (n.to_owned(), v)),
            blocks: Vec::new(),
        });
    }

    /// Add a row whose recipe and baseline ran in interleaved blocks:
    /// `ours[i]` and `base[i]` are block i's figures. The value and the
    /// baseline are the medians of the blocks, the ratio the median of the
    /// per-block ratios (shown with their range).
    #[allow(clippy::too_many_arguments)]
    pub fn add_blocks(
        &mut self,
        key: &str,
        workload: &str,
        case: &str,
        metric: &str,
        ours: &[f64],
        unit: &str,
        better: Better,
        base: (&str, &[f64]),
    ) {
        let (name, base) = base;
        let blocks = ours
            .iter()
            .zip(base)
            .filter(|(_, b)| b.is_finite() && **b > 0.0)
            .map(|(o, b)| o / b)
            .filter(|x| x.is_finite())
            .collect();
        self.rows.push(Row {
            key: key.to_owned(),
            workload: workload.to_owned(),
            case: case.to_owned(),
            metric: metric.to_owned(),
            value: median(ours),
            unit: unit.to_owned(),
            better,
            baseline: Some((name.to_owned(), median(base))),
            blocks,
        });
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

/// Latency percentiles of a sample, in milliseconds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Mean.
    pub mean: f64,
}

/// Percentiles (ms) of `samples`. An empty sample has none: every field
/// is NaN, which the report shows as "no sample" (JSON `null`), never as
/// 0 ms, and which gives no ratio and meets no target.
pub fn percentiles(samples: &mut [Duration]) -> Percentiles {
    if samples.is_empty() {
        return Percentiles {
            p50: f64::NAN,
            p99: f64::NAN,
            mean: f64::NAN,
        };
    }
    samples.sort_unstable();
    let at = |q: f64| {
        let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples[i.min(samples.len() - 1)].as_secs_f64() * 1e3
    };
    let mean = samples.iter().map(|d| d.as_secs_f64()).sum::<f64>() / samples.len() as f64 * 1e3;
    Percentiles {
        p50: at(0.50),
        p99: at(0.99),
        mean,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocked_ratio_is_the_median_of_the_blocks_ratios() {
        let mut rep = Report::default();
        // Block ratios 2, 2 and 3: their median is 2, though the ratio of
        // the medians (4 / 2) happens to agree and of the means would not.
        rep.add_blocks(
            "k",
            "W2",
            "case",
            "handoffs",
            &[2.0, 4.0, 9.0],
            "/s",
            Better::Higher,
            ("native", &[1.0, 2.0, 3.0]),
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
        r.add(
            "a.p50",
            "W2",
            "case",
            "p50",
            p.p50,
            "ms",
            Better::Lower,
            Some(("base", 2.0)),
        );
        r.add(
            "b.p50",
            "W2",
            "case",
            "p50",
            1.0,
            "ms",
            Better::Lower,
            Some(("base", p.p50)),
        );
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
        r.add(
            "w1.lock.per_s",
            "W1",
            "Lock",
            "cycles/s",
            200.0,
            "/s",
            Better::Higher,
            Some(("native", 100.0)),
        );
        r.add(
            "w9.nan",
            "W9",
            "c",
            "m",
            f64::NAN,
            "ms",
            Better::Lower,
            None,
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

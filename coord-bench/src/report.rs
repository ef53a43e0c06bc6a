//! Results: rows with their baselines, targets, and the markdown and JSON
//! renderings.

use std::fmt::Write as _;
use std::time::Duration;

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
}

impl Row {
    /// `value / baseline`, when there is a baseline.
    pub fn ratio(&self) -> Option<f64> {
        self.baseline
            .as_ref()
            .filter(|(_, b)| *b > 0.0)
            .map(|(_, b)| self.value / b)
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
            let ratio = match r.ratio() {
                Some(x) => format!(
                    "{:.2}× {}",
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
                    "- {} {}: measured {:.3}",
                    if t.met { "MET" } else { "MISSED" },
                    t.what,
                    t.measured
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

    /// The report as JSON (written by hand: no serde dependency).
    pub fn json(&self) -> String {
        let mut s = String::from("{\n");
        let _ = writeln!(s, "  \"backend\": {},", js(&self.backend));
        let _ = writeln!(s, "  \"url\": {},", js(&self.url));
        let _ = writeln!(s, "  \"elapsed_s\": {},", jn(self.elapsed.as_secs_f64()));
        let cfg: Vec<String> = self
            .config
            .iter()
            .map(|(k, v)| format!("{}: {}", js(k), js(v)))
            .collect();
        let _ = writeln!(s, "  \"config\": {{{}}},", cfg.join(", "));
        s.push_str("  \"rows\": [\n");
        let rows: Vec<String> = self
            .rows
            .iter()
            .map(|r| {
                let (bn, bv) = match &r.baseline {
                    Some((n, v)) => (js(n), jn(*v)),
                    None => ("null".into(), "null".into()),
                };
                format!(
                    "    {{\"key\": {}, \"workload\": {}, \"case\": {}, \"metric\": {}, \"value\": {}, \"unit\": {}, \"better\": {}, \"baseline\": {}, \"baseline_value\": {}, \"ratio\": {}}}",
                    js(&r.key),
                    js(&r.workload),
                    js(&r.case),
                    js(&r.metric),
                    jn(r.value),
                    js(&r.unit),
                    js(if r.better == Better::Higher { "higher" } else { "lower" }),
                    bn,
                    bv,
                    r.ratio().map_or("null".into(), jn)
                )
            })
            .collect();
        s.push_str(&rows.join(",\n"));
        s.push_str("\n  ],\n  \"targets\": [\n");
        let ts: Vec<String> = self
            .targets
            .iter()
            .map(|t| {
                format!(
                    "    {{\"what\": {}, \"measured\": {}, \"met\": {}}}",
                    js(&t.what),
                    jn(t.measured),
                    t.met
                )
            })
            .collect();
        s.push_str(&ts.join(",\n"));
        s.push_str("\n  ],\n  \"failures\": [");
        let fs: Vec<String> = self
            .failures
            .iter()
            .map(|(w, e)| format!("{{\"workload\": {}, \"error\": {}}}", js(w), js(e)))
            .collect();
        s.push_str(&fs.join(", "));
        s.push_str("]\n}\n");
        s
    }
}

fn fmt_num(v: f64) -> String {
    if v == 0.0 {
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

/// A JSON string literal.
fn js(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON number (non-finite as null).
fn jn(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "null".into()
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

/// Percentiles (ms) of `samples`; zeros when empty.
pub fn percentiles(samples: &mut [Duration]) -> Percentiles {
    if samples.is_empty() {
        return Percentiles::default();
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

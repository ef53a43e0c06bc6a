//! One figure of a run ([`Row`]), built a step at a time:
//! `Row::new(key, workload, case).metric(name, unit).value(v).ratio_to(base)`.

use crate::stats::median;

/// Which way is better for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Throughputs.
    Higher,
    /// Latencies, costs.
    Lower,
}

/// A figure's unit, which also says which way is better: a throughput
/// higher, a latency, duration, cost or count lower.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Per second (`/s`); higher is better.
    PerSec,
    /// Milliseconds (`ms`); lower is better.
    Ms,
    /// Seconds (`s`); lower is better.
    Secs,
    /// Requests sent to the server (`req`); lower is better.
    Requests,
    /// A plain count (no unit); lower is better.
    Count,
}

impl Unit {
    /// The unit as the report prints it.
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::PerSec => "/s",
            Unit::Ms => "ms",
            Unit::Secs => "s",
            Unit::Requests => "req",
            Unit::Count => "",
        }
    }

    /// Which way is better for a figure in this unit.
    pub fn better(self) -> Better {
        match self {
            Unit::PerSec => Better::Higher,
            Unit::Ms | Unit::Secs | Unit::Requests | Unit::Count => Better::Lower,
        }
    }
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

impl Row {
    /// A row of `workload` (`W1` … `W8`, `RT`, or `base` for a
    /// baseline-only row) for `case`, under the stable `key`. It has no
    /// figure yet: give it [`Row::metric`], then [`Row::value`] (with
    /// [`Row::ratio_to`] for a baseline) or [`Row::blocks`].
    pub fn new(key: impl Into<String>, workload: &str, case: impl Into<String>) -> Self {
        Row {
            key: key.into(),
            workload: workload.to_owned(),
            case: case.into(),
            metric: String::new(),
            value: f64::NAN,
            unit: String::new(),
            better: Better::Lower,
            baseline: None,
            blocks: Vec::new(),
        }
    }

    /// What was measured, and in which unit (which sets which way is
    /// better).
    pub fn metric(mut self, metric: &str, unit: Unit) -> Self {
        self.metric = metric.to_owned();
        self.unit = unit.symbol().to_owned();
        self.better = unit.better();
        self
    }

    /// The figure.
    pub fn value(mut self, value: f64) -> Self {
        self.value = value;
        self
    }

    /// The baseline's name and figure, if there is one: the row's ratio
    /// is then `value / baseline`.
    pub fn ratio_to<'b>(mut self, baseline: impl Into<Option<(&'b str, f64)>>) -> Self {
        self.baseline = baseline.into().map(|(n, v)| (n.to_owned(), v));
        self
    }

    /// The figures of a recipe and its baseline that ran in interleaved
    /// blocks: `ours[i]` and `base.1[i]` are block i's. The value and the
    /// baseline are the medians of the blocks, the ratio the median of the
    /// per-block ratios (shown with their range).
    pub fn blocks(mut self, ours: &[f64], base: (&str, &[f64])) -> Self {
        let (name, base) = base;
        self.blocks = ours
            .iter()
            .zip(base)
            .filter(|(_, b)| b.is_finite() && **b > 0.0)
            .map(|(o, b)| o / b)
            .filter(|x| x.is_finite())
            .collect();
        self.value = median(ours);
        self.baseline = Some((name.to_owned(), median(base)));
        self
    }

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

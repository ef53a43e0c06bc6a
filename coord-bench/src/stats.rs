//! Summaries of samples: the median, and latency percentiles in
//! milliseconds.

use std::time::Duration;

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

//! The benchmark's error and result types.

/// Any error of a benchmark run.
pub type BenchError = Box<dyn std::error::Error + Send + Sync>;
/// A benchmark result.
pub type BenchResult<T> = Result<T, BenchError>;

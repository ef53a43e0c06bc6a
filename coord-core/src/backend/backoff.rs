//! The one backoff every retry loop of coord uses: exponential, capped,
//! with jitter.

use std::time::Duration;

/// Exponential backoff with equal jitter, capped.
///
/// A [`Backoff`] is a policy (first delay, cap); the loop keeps its own
/// attempt counter (a `u32` starting at 0). Attempt `n` waits a random
/// delay in `[c / 2, c]`, where `c = min(first × 2ⁿ, cap)` — "equal
/// jitter": half the step is kept, so a retry loop never spins, and the
/// other half is spread at random, so clients that lost the connection at
/// the same instant do not all retry at the same instant. The ceiling
/// doubles each attempt until it reaches the cap, then stays there.
///
/// ```
/// use std::time::Duration;
/// use coord_core::backend::Backoff;
///
/// let b = Backoff::new(Duration::from_millis(20), Duration::from_secs(1));
/// let mut attempt = 0;
/// let first = b.next(&mut attempt);
/// assert!(first >= Duration::from_millis(10) && first <= Duration::from_millis(20));
/// assert_eq!(attempt, 1);
/// assert_eq!(b.ceiling(10), Duration::from_secs(1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    first: Duration,
    cap: Duration,
}

impl Backoff {
    /// The recipes' retries of reads and writes through a lost connection:
    /// 20 ms first, at most 1 s.
    pub const RECIPES: Backoff = Backoff::new(Duration::from_millis(20), Duration::from_secs(1));

    /// A backoff whose first step is at most `first` and whose steps never
    /// exceed `cap` (a `cap` below `first` is the ceiling of every step).
    pub const fn new(first: Duration, cap: Duration) -> Self {
        Backoff { first, cap }
    }

    /// The first step's ceiling.
    pub const fn first(&self) -> Duration {
        self.first
    }

    /// The longest step.
    pub const fn cap(&self) -> Duration {
        self.cap
    }

    /// The ceiling of attempt `attempt` (0-based): `min(first × 2^attempt,
    /// cap)`, without overflow for any `attempt`.
    pub fn ceiling(&self, attempt: u32) -> Duration {
        let grown = 2u32
            .checked_pow(attempt)
            .and_then(|m| self.first.checked_mul(m))
            .unwrap_or(Duration::MAX);
        grown.min(self.cap)
    }

    /// The delay of attempt `attempt`: uniformly random in
    /// `[ceiling / 2, ceiling]` (to the nanosecond).
    pub fn delay(&self, attempt: u32) -> Duration {
        let c = self.ceiling(attempt);
        let half = c / 2;
        let spread = u64::try_from((c - half).as_nanos()).unwrap_or(u64::MAX);
        half + Duration::from_nanos(fastrand::u64(0..=spread))
    }

    /// The delay of attempt `*attempt`, counting the attempt (saturating).
    pub fn next(&self, attempt: &mut u32) -> Duration {
        let d = self.delay(*attempt);
        *attempt = attempt.saturating_add(1);
        d
    }

    /// Sleep for [`next`](Self::next)`(attempt)`.
    ///
    /// # Errors
    /// None: it only sleeps.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped, it has only counted the attempt.
    pub async fn sleep(&self, attempt: &mut u32) {
        tokio::time::sleep(self.next(attempt)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn ceiling_doubles_up_to_the_cap() {
        let b = Backoff::new(20 * MS, 1000 * MS);
        let ceilings: Vec<_> = (0..8).map(|n| b.ceiling(n)).collect();
        assert_eq!(
            ceilings,
            [20, 40, 80, 160, 320, 640, 1000, 1000].map(|m| m * MS)
        );
        for n in [31, 32, 64, 1000, u32::MAX] {
            assert_eq!(b.ceiling(n), 1000 * MS, "attempt {n}");
        }
        // A cap below the first step bounds every step.
        let low = Backoff::new(100 * MS, 30 * MS);
        assert_eq!(low.ceiling(0), 30 * MS);
        assert_eq!(
            Backoff::new(Duration::MAX, Duration::MAX).ceiling(3),
            Duration::MAX
        );
    }

    #[test]
    fn delays_stay_within_half_and_whole_ceiling() {
        let b = Backoff::new(20 * MS, 1000 * MS);
        for n in 0..40 {
            let c = b.ceiling(n);
            for _ in 0..200 {
                let d = b.delay(n);
                assert!(
                    d >= c / 2 && d <= c,
                    "attempt {n}: {d:?} not in [{:?}, {c:?}]",
                    c / 2
                );
            }
        }
        assert_eq!(Backoff::new(Duration::ZERO, MS).delay(0), Duration::ZERO);
        let huge = Backoff::new(Duration::MAX, Duration::MAX).delay(0);
        assert!(huge >= Duration::MAX / 2);
    }

    #[test]
    fn jitter_spreads_the_delays() {
        let b = Backoff::new(20 * MS, 1000 * MS);
        let delays: Vec<Duration> = (0..500).map(|_| b.delay(6)).collect();
        let min = delays.iter().min().copied().unwrap_or_default();
        let max = delays.iter().max().copied().unwrap_or_default();
        // Uniform over [500 ms, 1000 ms]: 500 draws cover most of it.
        assert!(min < 600 * MS && max > 900 * MS, "{min:?}..{max:?}");
        let mut distinct = delays.clone();
        distinct.sort();
        distinct.dedup();
        assert!(distinct.len() > 450, "{} distinct of 500", distinct.len());
    }

    #[test]
    fn next_counts_attempts_and_grows_on_average() {
        let b = Backoff::new(20 * MS, 1000 * MS);
        let mut attempt = 0;
        let mut total = Duration::ZERO;
        for _ in 0..6 {
            total += b.next(&mut attempt);
        }
        assert_eq!(attempt, 6);
        // 10+20+40+80+160+320 ms at the least, 20+…+640 ms at the most.
        assert!(total >= 630 * MS && total <= 1260 * MS, "{total:?}");
        let mut last = u32::MAX;
        b.next(&mut last);
        assert_eq!(last, u32::MAX);
    }

    #[tokio::test(start_paused = true)]
    async fn sleep_waits_the_delay() {
        let b = Backoff::new(100 * MS, 1000 * MS);
        let mut attempt = 3;
        let t = tokio::time::Instant::now();
        b.sleep(&mut attempt).await;
        let waited = t.elapsed();
        assert!(waited >= 400 * MS && waited <= 800 * MS + MS, "{waited:?}");
        assert_eq!(attempt, 4);
    }
}

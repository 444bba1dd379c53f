//! When a failed call is tried again (spec 6.4): 30 s, then 60, 120 and so
//! on, doubling, never more than an hour apart.

use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetrySchedule {
    /// Wait after the first failed call.
    pub first: Duration,
    /// Longest wait between two calls.
    pub longest: Duration,
}

impl Default for RetrySchedule {
    fn default() -> Self {
        Self {
            first: Duration::from_secs(30),
            longest: Duration::from_secs(3600),
        }
    }
}

impl RetrySchedule {
    /// The wait after `attempts` failed calls (1 for the first).
    pub fn delay(&self, attempts: u32) -> Duration {
        let doublings = attempts.saturating_sub(1).min(31);
        self.first
            .checked_mul(1u32 << doublings)
            .unwrap_or(self.longest)
            .min(self.longest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_from_thirty_seconds_up_to_an_hour() {
        let s = RetrySchedule::default();
        let waits: Vec<u64> = (1..=10).map(|n| s.delay(n).as_secs()).collect();
        assert_eq!(waits, [30, 60, 120, 240, 480, 960, 1920, 3600, 3600, 3600]);
        assert_eq!(s.delay(200).as_secs(), 3600);
    }
}

//! How often and how long to retry a request: attempts and backoff delays.

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};

/// How many times and how long to try.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts per request, the first included (0 counts as 1).
    pub max_attempts: u32,
    /// First backoff delay; doubled after each attempt, with jitter.
    pub base_delay: Duration,
    /// Longest wait, for the backoff and for a provider's `Retry-After` alike.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The delays of one request's retries: exponential from `base_delay`,
    /// with jitter so that workers hit by the same outage do not retry in step.
    pub(crate) fn backoff(&self) -> ExponentialBackoff {
        ExponentialBuilder::new()
            .with_min_delay(self.base_delay)
            .with_max_delay(self.max_delay)
            .with_factor(2.0)
            .with_jitter()
            .without_max_times()
            .build()
    }

    /// The wait before the next attempt: the provider's `Retry-After` when it
    /// gave one, else the next backoff step; never more than `max_delay`
    /// (jitter may push a step past it).
    pub(crate) fn delay(
        &self,
        backoff: &mut ExponentialBackoff,
        retry_after: Option<Duration>,
    ) -> Duration {
        // The backoff advances either way so that delays keep growing.
        let step = backoff.next().unwrap_or(self.max_delay);
        retry_after.unwrap_or(step).min(self.max_delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_honour_retry_after_within_the_cap() {
        let policy = RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(100),
        };
        let mut b = policy.backoff();
        assert_eq!(
            policy.delay(&mut b, Some(Duration::from_millis(30))),
            Duration::from_millis(30)
        );
        assert_eq!(
            policy.delay(&mut b, Some(Duration::from_secs(5))),
            Duration::from_millis(100)
        );
        let mut b = policy.backoff();
        let first = policy.delay(&mut b, None);
        assert!(first >= Duration::from_millis(10) && first <= Duration::from_millis(20));
        for _ in 0..10 {
            assert!(policy.delay(&mut b, None) <= Duration::from_millis(100));
        }
    }

    #[test]
    fn a_retry_after_still_advances_the_backoff() {
        let policy = RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_secs(10),
        };
        let mut b = policy.backoff();
        policy.delay(&mut b, Some(Duration::from_millis(1)));
        policy.delay(&mut b, Some(Duration::from_millis(1)));
        // Third step: 40 ms, up to twice that with jitter.
        let third = policy.delay(&mut b, None);
        assert!(
            third >= Duration::from_millis(40) && third <= Duration::from_millis(80),
            "{third:?}"
        );
    }
}

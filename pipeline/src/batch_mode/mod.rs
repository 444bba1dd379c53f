//! The provider's batch mode: a job's calls sent as remote batches,
//! answered within the provider's completion window at its batch discount,
//! crash-safe and never paid twice.
//!
//! A batch is written down whole ([`store::open`]) before anything is
//! sent; [`runner::Runner`] then drives it to its results from whatever
//! state it was left in, and the stage that wrote it applies them.

pub mod reconcile;
pub mod runner;
pub mod store;
#[cfg(test)]
mod testing;

use std::time::Duration;

/// How often a submitted batch is asked where it stands: `first` after it
/// was submitted, then twice as long each time, up to `longest`
/// (`DRAGOMAN_BATCH_POLL_FIRST_MS`, `DRAGOMAN_BATCH_POLL_LONGEST_MS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchPoll {
    pub first: Duration,
    pub longest: Duration,
}

impl Default for BatchPoll {
    fn default() -> BatchPoll {
        BatchPoll {
            first: Duration::from_secs(30),
            longest: Duration::from_secs(600),
        }
    }
}

impl BatchPoll {
    /// The wait after `polls` polls so far.
    pub fn delay(&self, polls: i32) -> Duration {
        let doublings = u32::try_from(polls.clamp(0, 20)).unwrap_or(0);
        self.first
            .saturating_mul(1u32 << doublings)
            .min(self.longest)
            .max(Duration::from_millis(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polls_back_off_to_the_longest_wait() {
        let poll = BatchPoll {
            first: Duration::from_millis(300),
            longest: Duration::from_secs(2),
        };
        let waits: Vec<u128> = (0..6).map(|n| poll.delay(n).as_millis()).collect();
        assert_eq!(waits, [300, 600, 1200, 2000, 2000, 2000]);
        assert_eq!(poll.delay(1000), Duration::from_secs(2));
    }
}
